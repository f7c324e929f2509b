// The binding's coverage of the C API: each test loads a tiny refdata model (skips without).
#[macro_use]
mod common;

use common::{load, model_path, run_cli, scratch, template_path};
use ikllm::*;

#[test]
fn version_info() {
    assert!(!version_string().is_empty());
    assert_eq!(version_number(), sys::IKLLM_VERSION_NUMBER);
    assert_eq!(abi_version(), sys::IKLLM_ABI_VERSION);
    assert_eq!(Status::IO.name(), "IKLLM_ERR_IO");
}

#[test]
fn options_listing_and_setting() {
    let infos = option_info(OptionKind::Session).unwrap();
    let n_ctx = infos.iter().find(|i| i.name == "n_ctx").expect("n_ctx listed");
    assert_eq!(n_ctx.ty, OptionType::Int);
    assert!(!n_ctx.doc.is_empty());
    let mut o = Options::new(OptionKind::Session).unwrap();
    assert_eq!(o.get_int("n_ctx").unwrap(), n_ctx.default.parse::<i64>().unwrap());
    o.set_int("n_ctx", 256).unwrap().set_text("n_batch", "64").unwrap().set_string("kv_type", "f32").unwrap();
    assert_eq!(o.get_int("n_ctx").unwrap(), 256);
    assert_eq!(o.get_int("n_batch").unwrap(), 64);
    assert_eq!(o.get_string("kv_type").unwrap(), "f32");
    let mut s = Options::new(OptionKind::Sampler).unwrap();
    s.set_float("temperature", 0.5).unwrap();
    assert_eq!(s.get_float("temperature").unwrap(), 0.5);
    for kind in [OptionKind::Model, OptionKind::Sampler, OptionKind::Quantize, OptionKind::Chat] {
        assert!(!option_info(kind).unwrap().is_empty());
    }
}

#[test]
fn error_bad_option() {
    let mut o = Options::new(OptionKind::Session).unwrap();
    let e = o.set_int("n_ctx", 0).err().expect("out of range");
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert!(!e.message().is_empty());
    let e = o.set_int("no_such_option", 1).err().expect("unknown key");
    assert_eq!(e.status(), Status::NOT_FOUND);
    assert!(e.message().contains("no_such_option"), "{}", e);
    let e = o.set_text("n_ctx", "many").err().expect("not a number");
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}

#[test]
fn error_missing_file() {
    let lib = Library::new().unwrap();
    let e = Model::load(&lib, "/nonexistent/dir/model.gguf").err().expect("missing file");
    assert_eq!(e.status(), Status::IO);
    assert!(e.message().contains("model.gguf"), "{}", e);
}

#[test]
fn error_corrupt_file() {
    let lib = Library::new().unwrap();
    let dir = scratch("corrupt");
    let garbage = dir.join("garbage.gguf");
    std::fs::write(&garbage, b"GGUF\x03\x00\x00\x00 this is not a model at all").unwrap();
    let e = Model::load(&lib, garbage.to_str().unwrap()).err().expect("corrupt file");
    assert_eq!(e.status(), Status::INVALID_FILE, "{}", e);
    assert!(!e.message().is_empty());
    if let Some(path) = model_path("llama-tiny-f16") {
        let bytes = std::fs::read(path).unwrap();
        let cut = dir.join("truncated.gguf");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let e = Model::load(&lib, cut.to_str().unwrap()).err().expect("truncated file");
        assert_eq!(e.status(), Status::INVALID_FILE, "{}", e);
    }
}

#[test]
fn error_out_of_range_token() {
    let model = skip_without!(load("llama-tiny-f16"));
    let bad = model.n_vocab() + 5;
    let e = model.detokenize(&[1, bad], 0).err().expect("detokenize");
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert!(!e.message().is_empty());
    assert_eq!(model.token_to_piece(-3, 0).err().unwrap().status(), Status::INVALID_ARGUMENT);
    let mut s = Session::new(&model, None).unwrap();
    let e = s.decode_tokens(&[1, bad]).err().expect("decode");
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert_eq!(s.seq_pos_max(0), None, "a failed decode leaves the cache unchanged");
}

#[test]
fn load_progress_and_cancel() {
    let path = skip_without!(model_path("llama-tiny-f16"));
    let lib = Library::new().unwrap();
    let mut seen = Vec::new();
    let mut record = |p: f32| {
        seen.push(p);
        true
    };
    let model = Model::load_with(&lib, &path, LoadOptions { progress: Some(&mut record), ..Default::default() });
    assert!(model.is_ok());
    assert!(!seen.is_empty() && seen.iter().all(|p| (0.0..=1.0).contains(p)));
    assert_eq!(*seen.last().unwrap(), 1.0);

    let mut stop = |_: f32| false;
    let e = Model::load_with(&lib, &path, LoadOptions { progress: Some(&mut stop), ..Default::default() });
    assert_eq!(e.err().unwrap().status(), Status::CANCELLED);

    let flag = CancelFlag::new();
    flag.cancel();
    let e = Model::load_with(&lib, &path, LoadOptions { cancel: Some(&flag), ..Default::default() });
    assert_eq!(e.err().unwrap().status(), Status::CANCELLED);

    let mut mo = Options::new(OptionKind::Model).unwrap();
    mo.set_int("use_mmap", 0).unwrap();
    let m = Model::load_with(&lib, &path, LoadOptions { options: Some(&mo), ..Default::default() }).unwrap();
    assert!(m.n_vocab() > 0);
}

#[test]
fn metadata() {
    let model = skip_without!(load("llama-tiny-f16"));
    assert_eq!(model.architecture(), "llama");
    assert!(model.n_vocab() > 0 && model.n_embd() > 0 && model.n_layer() > 0 && model.n_ctx_train() > 0);
    assert!(model.n_params() > 0 && model.size_bytes() > 0);
    let keys = model.meta_keys();
    assert!(keys.iter().any(|k| k == "general.architecture"));
    assert_eq!(model.meta_value("general.architecture", false).unwrap(), "llama");
    assert_eq!(model.meta_value("no.such.key", false).err().unwrap().status(), Status::NOT_FOUND);
    assert!(model.special_token(SpecialToken::Bos).is_some());
    let eos = model.special_token(SpecialToken::Eos).unwrap();
    assert!(model.is_eog(eos));
}

#[test]
fn tokenize_detokenize() {
    let model = skip_without!(load("llama-tiny-f16"));
    let text = "Hello world, how are you?";
    let plain = model.tokenize(text, 0).unwrap();
    let with_bos = model.tokenize(text, TokenizeFlags::ADD_SPECIAL).unwrap();
    assert_eq!(with_bos[0], model.special_token(SpecialToken::Bos).unwrap());
    assert_eq!(&with_bos[1..], &plain[..]);
    assert_eq!(model.detokenize(&plain, 0).unwrap(), text);
    assert_eq!(model.detokenize(&with_bos, 0).unwrap().trim_start(), text, "special tokens are skipped by default");
    let mut bytes = Vec::new();
    for &t in &plain {
        bytes.extend(model.token_to_piece(t, 0).unwrap());
    }
    assert!(String::from_utf8_lossy(&bytes).contains("Hello"));
    // The streaming detokenizer gives the same text.
    let mut d = Detokenizer::new(&model, 0).unwrap();
    let mut streamed = String::new();
    for &t in &plain {
        streamed.push_str(d.push(t).unwrap());
    }
    streamed.push_str(d.flush().unwrap());
    assert_eq!(streamed, text);
    assert!(model.tokenize("", 0).unwrap().is_empty());
    // Any bytes tokenize; detokenized text is valid UTF-8 (invalid bytes become U+FFFD).
    let toks = model.tokenize_bytes(b"ok \xff\xfe end", 0).unwrap();
    assert!(model.detokenize(&toks, 0).unwrap().contains('\u{FFFD}'));
}

fn session(model: &Model, n_seq: i64, n_ctx: i64) -> Session {
    let mut o = Options::new(OptionKind::Session).unwrap();
    o.set_int("n_ctx", n_ctx).unwrap().set_int("n_seq_max", n_seq).unwrap();
    Session::new(model, Some(&o)).unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn batched_decode_of_two_sequences() {
    let model = skip_without!(load("llama-tiny-f16"));
    let a = model.tokenize("The quick brown fox", TokenizeFlags::ADD_SPECIAL).unwrap();
    let b = model.tokenize("Once upon a time there", TokenizeFlags::ADD_SPECIAL).unwrap();
    let mut s = session(&model, 2, 256);
    assert_eq!(s.n_seq_max(), 2);
    let mut batch = Batch::new();
    for (i, &t) in a.iter().enumerate() {
        batch.add(t, i as i32, 0, i + 1 == a.len());
    }
    for (i, &t) in b.iter().enumerate() {
        batch.add(t, i as i32, 1, i + 1 == b.len());
    }
    s.decode(&batch).unwrap();
    let la = s.logits(a.len() as i32 - 1).unwrap().to_vec();
    let lb = s.logits(batch.len() as i32 - 1).unwrap().to_vec();
    assert_eq!(la.len(), model.n_vocab() as usize);
    assert_eq!(s.seq_pos_max(0), Some(a.len() as i32 - 1));
    assert_eq!(s.seq_pos_max(1), Some(b.len() as i32 - 1));
    // Each sequence alone gives the same logits (up to float summation order).
    for (toks, batched) in [(&a, &la), (&b, &lb)] {
        let mut one = session(&model, 1, 256);
        one.decode_tokens(toks).unwrap();
        let alone = one.logits(-1).unwrap();
        assert!(max_abs_diff(alone, batched) < 1e-3, "diff {}", max_abs_diff(alone, batched));
    }
    assert!(max_abs_diff(&la, &lb) > 1e-3, "two different prompts");
    // A logits index that had none is an error.
    assert_eq!(s.logits(0).err().unwrap().status(), Status::INVALID_ARGUMENT);
    s.seq_remove(1, 0, -1).unwrap();
    assert_eq!(s.seq_pos_max(1), None);
    s.clear().unwrap();
    assert_eq!(s.seq_pos_max(0), None);
}

#[test]
fn logits_equal_the_c_api() {
    for name in ["llama-tiny-f16", "qwen3-tiny-f16"] {
        let path = skip_without!(model_path(name));
        let lib = Library::new().unwrap();
        let model = Model::load(&lib, &path).unwrap();
        let ids = model.tokenize("The capital of France is", TokenizeFlags::ADD_SPECIAL).unwrap();
        let dir = scratch("logits");
        let ids_file = dir.join(format!("{}.ids", name));
        let out_file = dir.join(format!("{}.f32", name));
        let text: Vec<String> = ids.iter().map(|t| t.to_string()).collect();
        std::fs::write(&ids_file, text.join(" ")).unwrap();
        run_cli(&["logits", "-m", &path, "--tokens", ids_file.to_str().unwrap(), "--out", out_file.to_str().unwrap()]);
        let raw = std::fs::read(&out_file).unwrap();
        let reference: Vec<f32> = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        // As `ikllm logits` does: one batch, every position's logits, n_ctx 512.
        let mut o = Options::new(OptionKind::Session).unwrap();
        o.set_int("n_ctx", 512).unwrap().set_int("n_batch", ids.len() as i64).unwrap();
        let mut s = Session::new(&model, Some(&o)).unwrap();
        let mut batch = Batch::new();
        for (i, &t) in ids.iter().enumerate() {
            batch.add(t, i as i32, 0, true);
        }
        s.decode(&batch).unwrap();
        let nv = model.n_vocab() as usize;
        assert_eq!(reference.len(), ids.len() * nv);
        for i in 0..ids.len() {
            let ours = s.logits(i as i32).unwrap();
            assert!(ours == &reference[i * nv..(i + 1) * nv], "{}: logits of position {} differ", name, i);
        }
    }
}

#[test]
fn sampling() {
    let model = skip_without!(load("llama-tiny-f16"));
    let mut s = session(&model, 1, 256);
    s.decode_tokens(&model.tokenize("Hello", TokenizeFlags::ADD_SPECIAL).unwrap()).unwrap();
    let logits = s.logits(-1).unwrap().to_vec();
    let argmax = logits.iter().enumerate().fold(0, |best, (i, &v)| if v > logits[best] { i } else { best });
    let mut greedy = Sampler::greedy(&model).unwrap();
    assert_eq!(greedy.sample(&s, -1).unwrap(), argmax as Token);
    assert_eq!(greedy.sample_logits(&logits).unwrap(), argmax as Token);
    // Same seed, same inputs: same tokens.
    let mut o = Options::new(OptionKind::Sampler).unwrap();
    o.set_int("seed", 42).unwrap().set_float("temperature", 1.5).unwrap().set_int("top_k", 0).unwrap();
    let mut x = Sampler::new(&model, Some(&o)).unwrap();
    let mut y = Sampler::new(&model, Some(&o)).unwrap();
    let xs: Vec<Token> = (0..8).map(|_| x.sample(&s, -1).unwrap()).collect();
    let ys: Vec<Token> = (0..8).map(|_| y.sample(&s, -1).unwrap()).collect();
    assert_eq!(xs, ys);
    x.reset().unwrap();
    assert_eq!(x.sample(&s, -1).unwrap(), xs[0]);
    assert_eq!(x.grammar_state().unwrap(), GrammarState::None);
}

fn greedy_text(model: &Model, prompt: &str, n: usize) -> String {
    let mut s = Session::new(model, None).unwrap();
    let mut smp = Sampler::greedy(model).unwrap();
    let toks = model.tokenize(prompt, TokenizeFlags::ADD_SPECIAL).unwrap();
    let mut out = prompt.to_string();
    for piece in s.generate(&mut smp, &toks, n).unwrap() {
        out.push_str(&piece.unwrap().text);
    }
    out + "\n"
}

#[test]
fn greedy_generation_equals_the_cli() {
    for (name, prompt) in [
        ("llama-tiny-f16", "Hello world"),
        ("qwen3-tiny-f16", "Once upon a time"),
        ("qwen2-tiny-f16", "Ünïcödé test: 1 2 3"),
    ] {
        let path = skip_without!(model_path(name));
        let lib = Library::new().unwrap();
        let model = Model::load(&lib, &path).unwrap();
        let cli = run_cli(&["run", "-m", &path, "-p", prompt, "-n", "40", "--temp", "0"]);
        assert_eq!(greedy_text(&model, prompt, 40), String::from_utf8(cli).unwrap(), "{}", name);
    }
}

#[test]
fn streaming_yields_tokens_and_stops() {
    let model = skip_without!(load("llama-tiny-f16"));
    let mut s = session(&model, 1, 64);
    let mut smp = Sampler::greedy(&model).unwrap();
    let toks = model.tokenize("Hi", TokenizeFlags::ADD_SPECIAL).unwrap();
    let pieces: Vec<Piece> = s.generate(&mut smp, &toks, 5).unwrap().map(|p| p.unwrap()).collect();
    assert!(pieces.iter().filter(|p| p.token.is_some()).count() <= 5);
    assert!(pieces.iter().all(|p| p.token.map_or(true, |t| !model.is_eog(t))));
    // A full context ends the stream cleanly.
    let mut tiny = session(&model, 1, 8);
    let mut smp = Sampler::greedy(&model).unwrap();
    let n = tiny.generate(&mut smp, &toks, 100).unwrap().filter(|p| p.as_ref().unwrap().token.is_some()).count();
    assert!(n <= 8, "{}", n);
    assert_eq!(s.generate(&mut smp, &[], 3).err().unwrap().status(), Status::INVALID_ARGUMENT);
}

#[test]
fn decode_cancel_flag() {
    let model = skip_without!(load("llama-tiny-f16"));
    let mut s = session(&model, 1, 64);
    let flag = CancelFlag::new();
    s.set_cancel_flag(Some(&flag)).unwrap();
    flag.cancel();
    let e = s.decode_tokens(&[1, 2, 3]).err().expect("cancelled");
    assert_eq!(e.status(), Status::CANCELLED);
    assert_eq!(s.seq_pos_max(0), None);
    flag.reset();
    s.decode_tokens(&[1, 2, 3]).unwrap();
    s.set_cancel_flag(None).unwrap();
    assert_eq!(s.seq_pos_max(0), Some(2));
}

#[test]
fn chat_template_rendering() {
    let model = skip_without!(load("qwen3-tiny-f16"));
    assert_eq!(model.chat_template(None).err().unwrap().status(), Status::NOT_FOUND, "refdata models carry none");
    assert!(model.chat_template_names().is_empty());
    let msgs = r#"[{"role":"user","content":"Hi there"}]"#;
    let tpl = "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}\
               {% if add_generation_prompt %}<assistant>{% endif %}";
    let out =
        chat_render(None, msgs, ChatRender { template: Some(tpl), add_generation_prompt: true, ..Default::default() });
    assert_eq!(out.unwrap(), "<user>Hi there</user><assistant>");
    let e = chat_render(None, msgs, ChatRender { template: Some("{{ raise_exception('no') }}"), ..Default::default() });
    assert_eq!(e.err().unwrap().status(), Status::TEMPLATE);
    let e = chat_render(None, "[{", ChatRender { template: Some(tpl), ..Default::default() });
    assert_eq!(e.err().unwrap().status(), Status::INVALID_ARGUMENT);
    if let Some(p) = template_path("Qwen-Qwen3-0.6B.jinja") {
        let src = std::fs::read_to_string(p).unwrap();
        let args = ChatRender { template: Some(&src), add_generation_prompt: true, ..Default::default() };
        let text = chat_render(Some(&model), msgs, args).unwrap();
        assert!(text.contains("<|im_start|>user\nHi there<|im_end|>"), "{}", text);
        assert!(text.ends_with("<|im_start|>assistant\n"), "{}", text);
        assert!(!model.tokenize(&text, TokenizeFlags::PARSE_SPECIAL).unwrap().is_empty());
    }
}

#[test]
fn constrained_sampling() {
    let model = skip_without!(load("llama-tiny-f16"));
    let mut o = Options::new(OptionKind::Sampler).unwrap();
    o.set_float("temperature", 0.0).unwrap().set_string("grammar", r#"root ::= ("yes" | "no") "!""#).unwrap();
    let mut smp = Sampler::new(&model, Some(&o)).unwrap();
    let mut s = session(&model, 1, 128);
    let toks = model.tokenize("Answer:", TokenizeFlags::ADD_SPECIAL).unwrap();
    let text: String = s.generate(&mut smp, &toks, 20).unwrap().map(|p| p.unwrap().text).collect();
    assert!(text == "yes!" || text == "no!", "{:?}", text);
    assert_eq!(smp.grammar_state().unwrap(), GrammarState::Done);

    let gbnf = json_schema_to_grammar(r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#)
        .unwrap();
    assert!(gbnf.contains("root"));
    let mut o = Options::new(OptionKind::Sampler).unwrap();
    o.set_float("temperature", 0.0).unwrap().set_string("json_schema", r#"{"enum":["red","green"]}"#).unwrap();
    let mut smp = Sampler::new(&model, Some(&o)).unwrap();
    s.clear().unwrap();
    let text: String = s.generate(&mut smp, &toks, 20).unwrap().map(|p| p.unwrap().text).collect();
    assert!(text == "\"red\"" || text == "\"green\"", "{:?}", text);

    let e = json_schema_to_grammar("{not json").err().unwrap();
    assert_eq!(e.status(), Status::GRAMMAR);
    let mut bad = Options::new(OptionKind::Sampler).unwrap();
    bad.set_string("grammar", "root ::= (").unwrap();
    let e = Sampler::new(&model, Some(&bad)).err().unwrap();
    assert_eq!(e.status(), Status::GRAMMAR);
    assert!(e.message().contains("line"), "{}", e);
}
