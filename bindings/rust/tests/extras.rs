// The rest of the ABI: embeddings, scoring, sequence tools, state save/restore, tensors,
// quantization, importance matrix, chat output parsing.
#[macro_use]
mod common;

use common::{load, model_path, scratch};
use ikllm::*;

fn session_with(model: &Model, settings: &[(&str, &str)]) -> Session {
    let mut o = Options::new(OptionKind::Session).unwrap();
    o.set_int("n_ctx", 256).unwrap();
    for (k, v) in settings {
        o.set_text(k, v).unwrap();
    }
    Session::new(model, Some(&o)).unwrap()
}

#[test]
fn embeddings_and_hidden_states() {
    let model = skip_without!(load("llama-tiny-f16"));
    let toks = model.tokenize("Hello world", TokenizeFlags::ADD_SPECIAL).unwrap();
    let mut s = session_with(&model, &[("embeddings", "1"), ("pooling", "mean")]);
    assert_eq!(s.pooling(), Some(sys::IKLLM_POOLING_MEAN));
    s.decode_tokens(&toks).unwrap();
    let h = s.hidden_state(-1).unwrap().to_vec();
    assert_eq!(h.len(), model.n_embd() as usize);
    let e = s.embeddings(0).unwrap();
    let norm: f32 = e.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{}", norm);
    let plain = session_with(&model, &[]);
    assert_eq!(plain.pooling(), None);
    assert_eq!(plain.embeddings(0).err().unwrap().status(), Status::INVALID_ARGUMENT);
}

#[test]
fn score_tokens_matches_logits() {
    let model = skip_without!(load("llama-tiny-f16"));
    let toks = model.tokenize("The quick brown fox jumps", TokenizeFlags::ADD_SPECIAL).unwrap();
    let mut s = session_with(&model, &[]);
    let lp = s.score_tokens(0, &toks, 0).unwrap();
    assert_eq!(lp.len(), toks.len() - 1);
    // The last value equals log-softmax of the logits after toks[..n-1].
    let mut t = session_with(&model, &[]);
    t.decode_tokens(&toks[..toks.len() - 1]).unwrap();
    let lg = t.logits(-1).unwrap();
    let max = lg.iter().cloned().fold(f32::MIN, f32::max) as f64;
    let lse = lg.iter().map(|&x| (x as f64 - max).exp()).sum::<f64>().ln() + max;
    let want = lg[*toks.last().unwrap() as usize] as f64 - lse;
    assert!((lp[lp.len() - 1] as f64 - want).abs() < 1e-3, "{} vs {}", lp[lp.len() - 1], want);
}

#[test]
fn sequence_tools() {
    let model = skip_without!(load("llama-tiny-f16"));
    let toks = model.tokenize("one two three four five six", TokenizeFlags::ADD_SPECIAL).unwrap();
    let mut s = session_with(&model, &[("n_seq_max", "2")]);
    s.decode_tokens(&toks).unwrap();
    assert_eq!(s.seq_tokens(0).unwrap(), toks);
    // The same prompt again: everything but the last token is reused.
    assert_eq!(s.prompt_reuse(1, &toks).unwrap(), toks.len() - 1);
    s.seq_copy(0, 1, 0, -1).unwrap();
    s.seq_keep(1).unwrap();
    assert_eq!(s.seq_pos_max(0), None);
    s.context_shift(1, 1, 2).unwrap();
    assert_eq!(s.seq_pos_max(1), Some(toks.len() as i32 - 3));
    s.seq_shift(1, 0, -1, 5).unwrap();
    assert_eq!(s.seq_pos_max(1), Some(toks.len() as i32 + 2));
}

#[test]
fn state_save_and_restore() {
    let model = skip_without!(load("llama-tiny-f16"));
    let toks = model.tokenize("Remember this sentence", TokenizeFlags::ADD_SPECIAL).unwrap();
    let mut a = session_with(&model, &[]);
    let mut smp = Sampler::greedy(&model).unwrap();
    a.decode_tokens(&toks[..toks.len() - 1]).unwrap();
    let state = a.state_save(&[], Some(&smp)).unwrap();
    a.decode_tokens(&toks[toks.len() - 1..]).unwrap();
    let want = a.logits(-1).unwrap().to_vec();
    let mut b = session_with(&model, &[]);
    b.state_load(&state, Some(&mut smp), false).unwrap();
    b.decode_tokens(&toks[toks.len() - 1..]).unwrap();
    assert!(b.logits(-1).unwrap() == &want[..], "restored sessions continue bit-identically");
    let file = scratch("state").join("s.bin");
    a.state_save_file(file.to_str().unwrap(), &[0], None).unwrap();
    let mut c = session_with(&model, &[]);
    c.state_load_file(file.to_str().unwrap(), None, true).unwrap();
    assert_eq!(c.seq_tokens(0).unwrap(), toks);
    let e = c.state_load(b"not a state", None, false).err().unwrap();
    assert_eq!(e.status(), Status::INVALID_FILE);
}

#[test]
fn tensors_and_quantization() {
    let path = skip_without!(model_path("llama-tiny-f16"));
    let lib = Library::new().unwrap();
    let model = Model::load(&lib, &path).unwrap();
    assert!(model.kv_bytes_per_token("f16").unwrap() > 0);
    let tensors = model.tensors().unwrap();
    let t = tensors.iter().find(|t| t.ne[1] > 1).expect("a matrix");
    assert!(type_name(t.ty).is_some());
    let values = model.tensor_dequantize(&t.name).unwrap();
    assert_eq!(values.len() as i64, t.ne.iter().product::<i64>());
    assert_eq!(model.tensor_dequantize("no.such.tensor").err().unwrap().status(), Status::NOT_FOUND);

    let out = scratch("quant").join("q8.gguf");
    let mut o = Options::new(OptionKind::Quantize).unwrap();
    o.set_string("type", "q8_0").unwrap();
    let mut steps = 0;
    let mut count = |_: &QuantizeStep<'_>| {
        steps += 1;
        true
    };
    let (before, after) = quantize(&lib, &path, out.to_str().unwrap(), Some(&o), Some(&mut count)).unwrap();
    assert!(steps == tensors.len() && after < before, "{} {} {}", steps, before, after);
    let q = Model::load(&lib, out.to_str().unwrap()).unwrap();
    assert_eq!(q.n_vocab(), model.n_vocab());
    let mut stop = |_: &QuantizeStep<'_>| false;
    let cancelled = scratch("quant").join("cancelled.gguf");
    let e = quantize(&lib, &path, cancelled.to_str().unwrap(), Some(&o), Some(&mut stop)).err().unwrap();
    assert_eq!(e.status(), Status::CANCELLED);
    assert!(!cancelled.exists());
}

#[test]
fn importance_matrix() {
    let model = skip_without!(load("llama-tiny-f16"));
    let mut s = session_with(&model, &[]);
    s.imatrix_start().unwrap();
    s.decode_tokens(&model.tokenize("calibration text", TokenizeFlags::ADD_SPECIAL).unwrap()).unwrap();
    let file = scratch("imatrix").join("imatrix.dat");
    s.imatrix_save(file.to_str().unwrap(), 1, Some("test")).unwrap();
    s.imatrix_stop().unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() > 0);
}

#[test]
fn chat_output_parsing() {
    let text = "<think>Let me see.</think>Calling it.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    let args = ChatParse { format: Some("hermes"), ..Default::default() };
    let mut p = ChatParser::new(args).unwrap();
    assert_eq!(p.format(), "hermes");
    // Any split of the text gives the same result.
    for chunk in text.as_bytes().chunks(7) {
        p.push(std::str::from_utf8(chunk).unwrap()).unwrap();
    }
    let (_, message) = p.finish().unwrap();
    assert_eq!(p.reasoning().unwrap(), "Let me see.");
    assert_eq!(p.content().unwrap(), "Calling it.");
    let calls = p.tool_calls().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "get_weather");
    assert!(calls[0].arguments.contains("Paris"));
    assert_eq!(chat_parse(args, text).unwrap(), message);
    p.reset().unwrap();
    let e = ChatParser::new(ChatParse { format: Some("nonsense"), ..Default::default() }).err().unwrap();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}
