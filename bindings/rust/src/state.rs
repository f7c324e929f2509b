// Session extras: embeddings and hidden states, scoring, sequence tools, state save/restore,
// importance-matrix collection.
use std::ptr;

use crate::error::{check, Error, Result, Status};
use crate::sampler::Sampler;
use crate::session::Session;
use crate::sys;
use crate::util::c_string;
use crate::Token;

fn count(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::new(Status::INVALID_ARGUMENT, "too many items"))
}

fn ids_ptr(ids: &[i32]) -> *const i32 {
    if ids.is_empty() {
        ptr::null()
    } else {
        ids.as_ptr()
    }
}

impl Session {
    /// Final hidden state of batch token `index` of the last decode (session option
    /// embeddings = 1). Borrowed until the next decode.
    pub fn hidden_state(&self, index: i32) -> Result<&[f32]> {
        let (mut p, mut n) = (ptr::null(), 0);
        check(unsafe { sys::ikllm_session_hidden_state(self.raw(), index, &mut p, &mut n) })?;
        Ok(unsafe { std::slice::from_raw_parts(p, n.max(0) as usize) })
    }
    /// Pooled embedding of a sequence from the last decode. Borrowed until the next decode.
    pub fn embeddings(&self, seq_id: i32) -> Result<&[f32]> {
        let (mut p, mut n) = (ptr::null(), 0);
        check(unsafe { sys::ikllm_session_embeddings(self.raw(), seq_id, &mut p, &mut n) })?;
        Ok(unsafe { std::slice::from_raw_parts(p, n.max(0) as usize) })
    }
    /// The pooling in effect (sys::IKLLM_POOLING_*), None when embeddings are off.
    pub fn pooling(&self) -> Option<i32> {
        let p = unsafe { sys::ikllm_session_pooling(self.raw()) };
        if p < 0 {
            None
        } else {
            Some(p)
        }
    }

    /// ln p(tokens[i+1] | tokens[..=i]) for i in [first, len-1), decoding tokens as the
    /// continuation of seq_id. On failure the sequence is left as it was.
    pub fn score_tokens(&mut self, seq_id: i32, tokens: &[Token], first: i32) -> Result<Vec<f32>> {
        let n = count(tokens.len())?;
        let want = (n - 1 - first).max(0) as usize;
        let mut out = vec![0f32; want];
        let mut needed = 0usize;
        check(unsafe {
            sys::ikllm_session_score_tokens(
                self.raw_mut(),
                seq_id,
                tokens.as_ptr(),
                n,
                first,
                out.as_mut_ptr(),
                out.len(),
                &mut needed,
                None,
                ptr::null_mut(),
            )
        })?;
        out.truncate(needed);
        Ok(out)
    }

    /// Adds delta to positions [p0, p1) of a sequence.
    pub fn seq_shift(&mut self, seq_id: i32, p0: i32, p1: i32, delta: i32) -> Result<()> {
        check(unsafe { sys::ikllm_session_seq_shift(self.raw_mut(), seq_id, p0, p1, delta) })
    }
    /// Tokens held by a sequence in position order (-1 where unknown).
    pub fn seq_tokens(&self, seq_id: i32) -> Result<Vec<Token>> {
        let mut n = 0usize;
        let st = unsafe { sys::ikllm_session_seq_tokens(self.raw(), seq_id, ptr::null_mut(), 0, &mut n) };
        if st != sys::IKLLM_ERR_BUFFER_TOO_SMALL {
            check(st)?;
        }
        let mut out = vec![0; n];
        check(unsafe { sys::ikllm_session_seq_tokens(self.raw(), seq_id, out.as_mut_ptr(), out.len(), &mut n) })?;
        out.truncate(n);
        Ok(out)
    }
    /// Prompt cache: keeps the longest cached prefix of tokens in seq_id and returns its length
    /// (decode tokens[reused..] next).
    pub fn prompt_reuse(&mut self, seq_id: i32, tokens: &[Token]) -> Result<usize> {
        let mut reused = 0;
        check(unsafe {
            sys::ikllm_session_prompt_reuse(self.raw_mut(), seq_id, tokens.as_ptr(), count(tokens.len())?, &mut reused)
        })?;
        Ok(reused as usize)
    }
    /// Drops positions [n_keep, n_keep + n_discard) and moves the later ones down.
    pub fn context_shift(&mut self, seq_id: i32, n_keep: i32, n_discard: i32) -> Result<()> {
        check(unsafe { sys::ikllm_session_context_shift(self.raw_mut(), seq_id, n_keep, n_discard) })
    }

    /// Saves the KV cache of seq_ids (empty: every non-empty sequence) and optionally a
    /// sampler's RNG and history.
    pub fn state_save(&self, seq_ids: &[i32], sampler: Option<&Sampler>) -> Result<Vec<u8>> {
        let n = count(seq_ids.len())?;
        let smp = sampler.map_or(ptr::null(), |s| s.raw() as *const _);
        let mut needed = 0usize;
        let st = unsafe {
            sys::ikllm_session_state_save(self.raw(), ids_ptr(seq_ids), n, smp, 0, ptr::null_mut(), 0, &mut needed)
        };
        if st != sys::IKLLM_ERR_BUFFER_TOO_SMALL {
            check(st)?;
        }
        let mut buf = vec![0u8; needed];
        check(unsafe {
            sys::ikllm_session_state_save(
                self.raw(),
                ids_ptr(seq_ids),
                n,
                smp,
                0,
                buf.as_mut_ptr() as *mut _,
                buf.len(),
                &mut needed,
            )
        })?;
        buf.truncate(needed);
        Ok(buf)
    }
    /// As state_save, atomically into a file.
    pub fn state_save_file(&self, path: &str, seq_ids: &[i32], sampler: Option<&Sampler>) -> Result<()> {
        let p = c_string(path)?;
        let smp = sampler.map_or(ptr::null(), |s| s.raw() as *const _);
        check(unsafe {
            sys::ikllm_session_state_save_file(self.raw(), ids_ptr(seq_ids), count(seq_ids.len())?, smp, 0, p.as_ptr())
        })
    }
    /// Restores a saved state (replace_all: empty every sequence first). Errors leave the
    /// session and sampler unchanged.
    pub fn state_load(&mut self, data: &[u8], sampler: Option<&mut Sampler>, replace_all: bool) -> Result<()> {
        let smp = sampler.map_or(ptr::null_mut(), |s| s.raw());
        let flags = if replace_all { sys::IKLLM_STATE_REPLACE_ALL } else { 0 };
        check(unsafe {
            sys::ikllm_session_state_load(self.raw_mut(), data.as_ptr() as *const _, data.len(), smp, flags)
        })
    }
    pub fn state_load_file(&mut self, path: &str, sampler: Option<&mut Sampler>, replace_all: bool) -> Result<()> {
        let p = c_string(path)?;
        let smp = sampler.map_or(ptr::null_mut(), |s| s.raw());
        let flags = if replace_all { sys::IKLLM_STATE_REPLACE_ALL } else { 0 };
        check(unsafe { sys::ikllm_session_state_load_file(self.raw_mut(), p.as_ptr(), smp, flags) })
    }

    /// Starts collecting importance-matrix statistics of every decode from now on.
    pub fn imatrix_start(&mut self) -> Result<()> {
        check(unsafe { sys::ikllm_session_imatrix_start(self.raw_mut()) })
    }
    /// Writes the statistics so far to path (collection continues).
    pub fn imatrix_save(&mut self, path: &str, n_chunks: i32, dataset: Option<&str>) -> Result<()> {
        let p = c_string(path)?;
        let d = crate::util::c_opt(dataset)?;
        check(unsafe {
            sys::ikllm_session_imatrix_save(self.raw_mut(), p.as_ptr(), n_chunks, crate::util::opt_ptr(&d))
        })
    }
    pub fn imatrix_stop(&mut self) -> Result<()> {
        check(unsafe { sys::ikllm_session_imatrix_stop(self.raw_mut()) })
    }
}
