// Prints the greedy continuation of a prompt exactly as `ikllm run -m MODEL -p PROMPT -n N --temp 0`.
// Usage: cargo run --example generate -- MODEL PROMPT N
use std::io::Write;

use ikllm::{Library, Model, Sampler, Session, TokenizeFlags};

fn run(model_path: &str, prompt: &str, n: usize) -> ikllm::Result<()> {
    let lib = Library::new()?;
    let model = Model::load(&lib, model_path)?;
    let mut session = Session::new(&model, None)?;
    let mut sampler = Sampler::greedy(&model)?;
    let tokens = model.tokenize(prompt, TokenizeFlags::ADD_SPECIAL)?;
    let mut out = std::io::stdout();
    out.write_all(prompt.as_bytes()).ok();
    for piece in session.generate(&mut sampler, &tokens, n)? {
        out.write_all(piece?.text.as_bytes()).ok();
        out.flush().ok();
    }
    out.write_all(b"\n").ok();
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: generate MODEL PROMPT N_TOKENS");
        std::process::exit(2);
    }
    let n: usize = args[3].parse().unwrap_or_else(|_| {
        eprintln!("generate: N_TOKENS must be a non-negative integer");
        std::process::exit(2)
    });
    if let Err(e) = run(&args[1], &args[2], n) {
        eprintln!("generate: {}", e);
        std::process::exit(1);
    }
}
