// Send/Sync follow the C threading contract: Library and Model are shared across threads;
// Session, Sampler and Detokenizer move between threads but are never shared.
#[macro_use]
mod common;

use std::sync::Arc;
use std::thread;

use ikllm::*;

fn is_send_sync<T: Send + Sync>() {}
fn is_send<T: Send>() {}

// Compiles only while T is NOT Sync: with a Sync T both impls apply and inference is ambiguous.
trait AmbiguousIfSync<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
#[allow(dead_code)]
struct IsSync;
impl<T: ?Sized + Sync> AmbiguousIfSync<IsSync> for T {}

#[test]
fn marker_traits_follow_the_contract() {
    is_send_sync::<Library>();
    is_send_sync::<Model>();
    is_send::<Session>();
    is_send::<Sampler>();
    is_send::<Detokenizer>();
    is_send::<CancelFlag>();
    <Session as AmbiguousIfSync<_>>::check();
    <Sampler as AmbiguousIfSync<_>>::check();
    <Detokenizer as AmbiguousIfSync<_>>::check();
}

fn greedy(model: &Model, prompt: &str) -> String {
    let mut s = Session::new(model, None).unwrap();
    let mut smp = Sampler::greedy(model).unwrap();
    let toks = model.tokenize(prompt, TokenizeFlags::ADD_SPECIAL).unwrap();
    let pieces = s.generate(&mut smp, &toks, 16).unwrap();
    pieces.map(|p| p.unwrap().text).collect()
}

#[test]
fn one_model_many_threads() {
    let model = Arc::new(skip_without!(common::load("llama-tiny-f16")));
    let expected = greedy(&model, "Hello world");
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let m = Arc::clone(&model);
            thread::spawn(move || greedy(&m, "Hello world"))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), expected);
    }
    // A session created on one thread is used on another.
    let mut s = Session::new(&model, None).unwrap();
    s.decode_tokens(&[1, 2, 3]).unwrap();
    let pos = thread::spawn(move || s.seq_pos_max(0)).join().unwrap();
    assert_eq!(pos, Some(2));
}

#[test]
fn drop_order_is_free() {
    let path = skip_without!(common::model_path("llama-tiny-f16"));
    let lib = Library::new().unwrap();
    let model = Model::load(&lib, &path).unwrap();
    let session = Session::new(&model, None).unwrap();
    drop(lib); // the model keeps the library alive
    drop(model); // the session keeps the model alive
    assert!(session.n_ctx() > 0);
}

#[test]
fn library_configuration() {
    let path = skip_without!(common::model_path("llama-tiny-f16"));
    let mut lib = Library::new().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(0usize));
    let counter = Arc::clone(&seen);
    lib.set_log(Some(Box::new(move |_, _| *counter.lock().unwrap() += 1)), LogLevel::Debug).unwrap();
    lib.set_default_threads(1).unwrap();
    let model = Model::load(&lib, &path).unwrap();
    assert!(*seen.lock().unwrap() > 0, "debug logs arrive");
    // Once models share the library, its setters refuse (they must not race).
    assert_eq!(lib.set_default_threads(2).err().unwrap().status(), Status::INVALID_ARGUMENT);
    drop(model);
    lib.set_log(None, LogLevel::Error).unwrap();
}
