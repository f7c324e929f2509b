// Incremental detokenizer for streaming: only complete UTF-8 is returned.
use std::ptr;

use crate::error::{check, Result};
use crate::model::Model;
use crate::sys;
use crate::util::borrowed_str;
use crate::Token;

/// Turns a token stream into text pieces. Used by one thread at a time: Send, not Sync.
pub struct Detokenizer {
    raw: *mut sys::ikllm_detok,
    _model: Model,
}

// The C contract: a detok is used by ONE thread at a time.
unsafe impl Send for Detokenizer {}

impl Drop for Detokenizer {
    fn drop(&mut self) {
        unsafe { sys::ikllm_detok_free(self.raw) }
    }
}

impl Detokenizer {
    /// flags: TokenizeFlags::RENDER_SPECIAL / KEEP_LEADING_SPACE.
    pub fn new(model: &Model, flags: u32) -> Result<Detokenizer> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::ikllm_detok_create(model.raw(), flags, &mut raw) })?;
        Ok(Detokenizer { raw, _model: model.clone() })
    }
    /// Feeds one token; returns the newly completed text (possibly empty), borrowed until the
    /// next call.
    pub fn push(&mut self, token: Token) -> Result<&str> {
        let (mut p, mut n) = (ptr::null(), 0usize);
        check(unsafe { sys::ikllm_detok_push(self.raw, token, &mut p, &mut n) })?;
        Ok(unsafe { borrowed_str(p, n) })
    }
    /// Ends the stream (a dangling incomplete sequence becomes U+FFFD) and resets.
    pub fn flush(&mut self) -> Result<&str> {
        let (mut p, mut n) = (ptr::null(), 0usize);
        check(unsafe { sys::ikllm_detok_flush(self.raw, &mut p, &mut n) })?;
        Ok(unsafe { borrowed_str(p, n) })
    }
}
