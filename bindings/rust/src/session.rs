// A session: KV cache of one or more sequences, batched decode and logits.
use std::ptr;

use crate::error::{check, Error, Result, Status};
use crate::library::CancelFlag;
use crate::model::Model;
use crate::options::Options;
use crate::sys;
use crate::Token;

/// A batch of tokens for Session::decode: each token has a sequence, a position and says
/// whether its logits are wanted.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    tokens: Vec<Token>,
    positions: Vec<i32>,
    seq_ids: Vec<i32>,
    want_logits: Vec<i32>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }
    pub fn add(&mut self, token: Token, position: i32, seq_id: i32, want_logits: bool) -> &mut Batch {
        self.tokens.push(token);
        self.positions.push(position);
        self.seq_ids.push(seq_id);
        self.want_logits.push(want_logits as i32);
        self
    }
    pub fn len(&self) -> usize {
        self.tokens.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
    pub fn clear(&mut self) {
        self.tokens.clear();
        self.positions.clear();
        self.seq_ids.clear();
        self.want_logits.clear();
    }
}

/// A session of a model. Used by one thread at a time: Send, not Sync.
pub struct Session {
    raw: *mut sys::ikllm_session,
    model: Model,
    cancel: Option<CancelFlag>, // kept alive while the library holds its pointer
}

// The C contract: a session is used by ONE thread at a time (it may move between threads).
unsafe impl Send for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe { sys::ikllm_session_free(self.raw) }
    }
}

fn count(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::new(Status::INVALID_ARGUMENT, "batch too large"))
}

impl Session {
    /// A session with IKLLM_OPTIONS_SESSION options (None: defaults).
    pub fn new(model: &Model, options: Option<&Options>) -> Result<Session> {
        let mut raw = ptr::null_mut();
        let o = options.map_or(ptr::null(), |o| o.raw as *const _);
        check(unsafe { sys::ikllm_session_create(model.raw(), o, &mut raw) })?;
        Ok(Session { raw, model: model.clone(), cancel: None })
    }

    pub(crate) fn raw(&self) -> *const sys::ikllm_session {
        self.raw
    }
    pub(crate) fn raw_mut(&mut self) -> *mut sys::ikllm_session {
        self.raw
    }
    pub fn model(&self) -> &Model {
        &self.model
    }
    pub fn n_ctx(&self) -> i32 {
        unsafe { sys::ikllm_session_n_ctx(self.raw) }
    }
    pub fn n_seq_max(&self) -> i32 {
        unsafe { sys::ikllm_session_n_seq_max(self.raw) }
    }

    /// Decodes tokens as the continuation of sequence 0; only the last one gets logits.
    pub fn decode_tokens(&mut self, tokens: &[Token]) -> Result<()> {
        let n = count(tokens.len())?;
        check(unsafe {
            sys::ikllm_session_decode(self.raw, tokens.as_ptr(), ptr::null(), ptr::null(), ptr::null(), n, 0)
        })
    }

    /// Decodes a batch (several sequences at once). On error the cache is unchanged.
    pub fn decode(&mut self, batch: &Batch) -> Result<()> {
        let n = count(batch.len())?;
        check(unsafe {
            sys::ikllm_session_decode(
                self.raw,
                batch.tokens.as_ptr(),
                batch.positions.as_ptr(),
                batch.seq_ids.as_ptr(),
                batch.want_logits.as_ptr(),
                n,
                0,
            )
        })
    }

    /// Logits of batch token `index` of the last decode (-1: the last token that had logits).
    /// Borrowed from the session: valid until the next decode, which needs &mut self.
    pub fn logits(&self, index: i32) -> Result<&[f32]> {
        let mut p = ptr::null();
        let mut n = 0;
        check(unsafe { sys::ikllm_session_logits(self.raw, index, &mut p, &mut n) })?;
        Ok(unsafe { std::slice::from_raw_parts(p, n.max(0) as usize) })
    }

    /// Installs (or with None removes) a flag that cancels decodes with IKLLM_CANCELLED.
    pub fn set_cancel_flag(&mut self, flag: Option<&CancelFlag>) -> Result<()> {
        let p = flag.map_or(ptr::null(), |f| f.as_ptr());
        check(unsafe { sys::ikllm_session_set_cancel_flag(self.raw, p) })?;
        self.cancel = flag.cloned();
        Ok(())
    }

    /// Removes positions [p0, p1) of a sequence (p1 < 0: to the end).
    pub fn seq_remove(&mut self, seq_id: i32, p0: i32, p1: i32) -> Result<()> {
        check(unsafe { sys::ikllm_session_seq_remove(self.raw, seq_id, p0, p1) })
    }
    pub fn seq_copy(&mut self, src: i32, dst: i32, p0: i32, p1: i32) -> Result<()> {
        check(unsafe { sys::ikllm_session_seq_copy(self.raw, src, dst, p0, p1) })
    }
    pub fn seq_keep(&mut self, seq_id: i32) -> Result<()> {
        check(unsafe { sys::ikllm_session_seq_keep(self.raw, seq_id) })
    }
    /// Largest position held by the sequence, None when it is empty.
    pub fn seq_pos_max(&self, seq_id: i32) -> Option<i32> {
        let p = unsafe { sys::ikllm_session_seq_pos_max(self.raw, seq_id) };
        if p < 0 {
            None
        } else {
            Some(p)
        }
    }
    pub fn clear(&mut self) -> Result<()> {
        check(unsafe { sys::ikllm_session_clear(self.raw) })
    }
}
