// A loaded model: metadata, tokenizer and chat templates. Immutable, shared across threads.
use std::os::raw::c_void;
use std::ptr;
use std::sync::Arc;

use crate::error::{check, Result};
use crate::library::{CancelFlag, LibInner, Library};
use crate::options::Options;
use crate::sys;
use crate::util::{c_string, opt_string, read_bytes, read_text, static_str};
use crate::Token;

pub(crate) struct ModelInner {
    pub(crate) raw: *mut sys::ikllm_model,
    _lib: Arc<LibInner>, // freed after the model
}

// The C contract: a loaded model is immutable; share it freely across threads and sessions.
unsafe impl Send for ModelInner {}
unsafe impl Sync for ModelInner {}

impl Drop for ModelInner {
    fn drop(&mut self) {
        unsafe { sys::ikllm_model_free(self.raw) }
    }
}

/// A loaded model. Cloning is cheap (shared); sessions keep it alive.
#[derive(Clone)]
pub struct Model {
    pub(crate) inner: Arc<ModelInner>,
}

/// Tokenizer flags (combine with `|`).
pub struct TokenizeFlags;
impl TokenizeFlags {
    /// Add BOS/EOS as the vocabulary asks.
    pub const ADD_SPECIAL: u32 = sys::IKLLM_TOKENIZE_ADD_SPECIAL;
    /// Match special-token text such as "<|im_start|>".
    pub const PARSE_SPECIAL: u32 = sys::IKLLM_TOKENIZE_PARSE_SPECIAL;
    /// Detokenizer: write special tokens' text.
    pub const RENDER_SPECIAL: u32 = sys::IKLLM_DETOK_RENDER_SPECIAL;
    /// Detokenizer: keep the SentencePiece leading space.
    pub const KEEP_LEADING_SPACE: u32 = sys::IKLLM_DETOK_KEEP_LEADING_SPACE;
}

/// The special tokens a vocabulary may define.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialToken {
    Bos = sys::IKLLM_TOKEN_BOS as isize,
    Eos = sys::IKLLM_TOKEN_EOS as isize,
    Eot = sys::IKLLM_TOKEN_EOT as isize,
    Unk = sys::IKLLM_TOKEN_UNK as isize,
    Pad = sys::IKLLM_TOKEN_PAD as isize,
    Sep = sys::IKLLM_TOKEN_SEP as isize,
}

/// Optional arguments of Model::load_with.
#[derive(Default)]
pub struct LoadOptions<'a> {
    /// IKLLM_OPTIONS_MODEL options (None: defaults).
    pub options: Option<&'a Options>,
    /// Called with the progress in [0, 1] on the loading thread; return false to cancel.
    pub progress: Option<&'a mut dyn FnMut(f32) -> bool>,
    /// Cancels the load (IKLLM_CANCELLED) when set from another thread.
    pub cancel: Option<&'a CancelFlag>,
}

type Progress<'a> = &'a mut dyn FnMut(f32) -> bool;

unsafe extern "C" fn progress_trampoline(user: *mut c_void, progress: f32) -> i32 {
    let f = &mut *(user as *mut Progress);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(progress))) {
        Ok(true) => 0,
        _ => 1, // false or a panic cancels
    }
}

impl Model {
    /// Loads a GGUF model with default options.
    pub fn load(lib: &Library, path: &str) -> Result<Model> {
        Model::load_with(lib, path, LoadOptions::default())
    }

    /// Loads a GGUF model with options, a progress callback and/or a cancel flag.
    pub fn load_with(lib: &Library, path: &str, opts: LoadOptions<'_>) -> Result<Model> {
        let p = c_string(path)?;
        let mut raw = ptr::null_mut();
        let options = opts.options.map_or(ptr::null(), |o| o.raw as *const _);
        let cancel = opts.cancel.map_or(ptr::null(), |c| c.as_ptr());
        let st = match opts.progress {
            Some(f) => {
                let mut f: Progress = f;
                let user = &mut f as *mut Progress as *mut c_void;
                unsafe {
                    sys::ikllm_model_load(
                        lib.inner.raw,
                        p.as_ptr(),
                        options,
                        Some(progress_trampoline),
                        user,
                        cancel,
                        &mut raw,
                    )
                }
            }
            None => unsafe {
                sys::ikllm_model_load(lib.inner.raw, p.as_ptr(), options, None, ptr::null_mut(), cancel, &mut raw)
            },
        };
        check(st)?;
        Ok(Model { inner: Arc::new(ModelInner { raw, _lib: lib.inner.clone() }) })
    }

    pub(crate) fn raw(&self) -> *const sys::ikllm_model {
        self.inner.raw
    }

    // Model-owned strings live as long as self.
    pub fn architecture(&self) -> &str {
        unsafe { static_str(sys::ikllm_model_architecture(self.raw())) }
    }
    /// general.name, or "".
    pub fn name(&self) -> &str {
        unsafe { static_str(sys::ikllm_model_name(self.raw())) }
    }
    pub fn placement(&self) -> &str {
        unsafe { static_str(sys::ikllm_model_placement(self.raw())) }
    }
    pub fn n_params(&self) -> u64 {
        unsafe { sys::ikllm_model_n_params(self.raw()) }
    }
    pub fn size_bytes(&self) -> u64 {
        unsafe { sys::ikllm_model_size_bytes(self.raw()) }
    }
    pub fn n_vocab(&self) -> i32 {
        unsafe { sys::ikllm_model_n_vocab(self.raw()) }
    }
    pub fn n_ctx_train(&self) -> i32 {
        unsafe { sys::ikllm_model_n_ctx_train(self.raw()) }
    }
    pub fn n_embd(&self) -> i32 {
        unsafe { sys::ikllm_model_n_embd(self.raw()) }
    }
    pub fn n_layer(&self) -> i32 {
        unsafe { sys::ikllm_model_n_layer(self.raw()) }
    }

    /// GGUF metadata keys, in file order.
    pub fn meta_keys(&self) -> Vec<String> {
        let n = unsafe { sys::ikllm_model_meta_count(self.raw()) };
        (0..n).filter_map(|i| unsafe { opt_string(sys::ikllm_model_meta_key(self.raw(), i)) }).collect()
    }
    /// A metadata value rendered as text (arrays abbreviated unless full).
    pub fn meta_value(&self, key: &str, full: bool) -> Result<String> {
        let k = c_string(key)?;
        let flags = if full { sys::IKLLM_META_FULL } else { 0 };
        read_text(|buf, size, needed| unsafe {
            sys::ikllm_model_meta_value(self.raw(), k.as_ptr(), flags, buf, size, needed)
        })
    }

    /// Token ids of text (TokenizeFlags::ADD_SPECIAL / PARSE_SPECIAL).
    pub fn tokenize(&self, text: &str, flags: u32) -> Result<Vec<Token>> {
        self.tokenize_bytes(text.as_bytes(), flags)
    }
    /// Token ids of arbitrary bytes.
    pub fn tokenize_bytes(&self, text: &[u8], flags: u32) -> Result<Vec<Token>> {
        let p = text.as_ptr() as *const _;
        let mut n = 0usize;
        let st = unsafe { sys::ikllm_tokenize(self.raw(), p, text.len(), flags, ptr::null_mut(), 0, &mut n) };
        if st != sys::IKLLM_ERR_BUFFER_TOO_SMALL {
            check(st)?;
        }
        let mut out = vec![0; n];
        check(unsafe { sys::ikllm_tokenize(self.raw(), p, text.len(), flags, out.as_mut_ptr(), out.len(), &mut n) })?;
        out.truncate(n);
        Ok(out)
    }
    /// Text of tokens (TokenizeFlags::RENDER_SPECIAL / KEEP_LEADING_SPACE), valid UTF-8.
    pub fn detokenize(&self, tokens: &[Token], flags: u32) -> Result<String> {
        read_text(|buf, size, needed| unsafe {
            sys::ikllm_detokenize(self.raw(), tokens.as_ptr(), tokens.len(), flags, buf, size, needed)
        })
    }
    /// Raw bytes of one token's piece (possibly an incomplete UTF-8 sequence).
    pub fn token_to_piece(&self, token: Token, flags: u32) -> Result<Vec<u8>> {
        read_bytes(|buf, size, needed| unsafe {
            sys::ikllm_token_to_piece(self.raw(), token, flags, buf, size, needed)
        })
    }
    /// Id of a special token, None when the vocabulary has none.
    pub fn special_token(&self, which: SpecialToken) -> Option<Token> {
        let t = unsafe { sys::ikllm_model_special_token(self.raw(), which as i32) };
        if t < 0 {
            None
        } else {
            Some(t)
        }
    }
    /// True if the token ends generation (EOS, EOT, ...).
    pub fn is_eog(&self, token: Token) -> bool {
        unsafe { sys::ikllm_token_is_eog(self.raw(), token) != 0 }
    }

    /// Source of the default chat template (name None) or of a named one.
    pub fn chat_template(&self, name: Option<&str>) -> Result<String> {
        let n = crate::util::c_opt(name)?;
        let mut out = ptr::null();
        check(unsafe { sys::ikllm_model_chat_template(self.raw(), crate::util::opt_ptr(&n), &mut out) })?;
        Ok(unsafe { static_str(out) }.to_string())
    }
    /// Names of the model's named chat templates (the default one is not listed).
    pub fn chat_template_names(&self) -> Vec<String> {
        let n = unsafe { sys::ikllm_model_chat_template_count(self.raw()) };
        (0..n).filter_map(|i| unsafe { opt_string(sys::ikllm_model_chat_template_name(self.raw(), i)) }).collect()
    }
}
