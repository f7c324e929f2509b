// Sampler chains, including grammar / JSON-schema constrained sampling.
use std::ptr;

use crate::error::{check, Result};
use crate::model::Model;
use crate::options::{OptionKind, Options};
use crate::session::Session;
use crate::sys;
use crate::Token;

/// Where a constrained sampler's grammar stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrammarState {
    None,
    Incomplete,
    Complete,
    /// Matched and nothing can follow: stop here.
    Done,
    Failed,
    Other(i32),
}

/// A sampler chain. Used by one thread at a time: Send, not Sync.
pub struct Sampler {
    raw: *mut sys::ikllm_sampler,
    _model: Model,
}

// The C contract: a sampler is used by ONE thread at a time.
unsafe impl Send for Sampler {}

impl Drop for Sampler {
    fn drop(&mut self) {
        unsafe { sys::ikllm_sampler_free(self.raw) }
    }
}

impl Sampler {
    /// A sampler with IKLLM_OPTIONS_SAMPLER options (None: defaults). Fails with
    /// Status::GRAMMAR for an invalid grammar or JSON schema.
    pub fn new(model: &Model, options: Option<&Options>) -> Result<Sampler> {
        let mut raw = ptr::null_mut();
        let o = options.map_or(ptr::null(), |o| o.raw as *const _);
        check(unsafe { sys::ikllm_sampler_create(model.raw(), o, &mut raw) })?;
        Ok(Sampler { raw, _model: model.clone() })
    }

    /// Greedy sampling (temperature 0), as `ikllm run --temp 0`.
    pub fn greedy(model: &Model) -> Result<Sampler> {
        let mut o = Options::new(OptionKind::Sampler)?;
        o.set_float("temperature", 0.0)?;
        Sampler::new(model, Some(&o))
    }

    pub(crate) fn raw(&self) -> *mut sys::ikllm_sampler {
        self.raw
    }

    /// Samples from the logits of batch token `index` of the session's last decode (-1: last).
    pub fn sample(&mut self, session: &Session, index: i32) -> Result<Token> {
        let mut t = 0;
        check(unsafe { sys::ikllm_sampler_sample(self.raw, session.raw(), index, &mut t) })?;
        Ok(t)
    }
    /// Samples from caller-provided logits.
    pub fn sample_logits(&mut self, logits: &[f32]) -> Result<Token> {
        let mut t = 0;
        check(unsafe { sys::ikllm_sampler_sample_logits(self.raw, logits.as_ptr(), logits.len() as i32, &mut t) })?;
        Ok(t)
    }
    /// Records tokens in the penalty history; with grammar, the grammar advances over them too
    /// (prompt tokens: grammar = false).
    pub fn accept(&mut self, tokens: &[Token], grammar: bool) -> Result<()> {
        let flags = if grammar { 0 } else { sys::IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR };
        check(unsafe { sys::ikllm_sampler_accept_v2(self.raw, tokens.as_ptr(), tokens.len(), flags) })
    }
    pub fn reset(&mut self) -> Result<()> {
        check(unsafe { sys::ikllm_sampler_reset(self.raw) })
    }
    pub fn grammar_state(&self) -> Result<GrammarState> {
        let mut s = 0;
        check(unsafe { sys::ikllm_sampler_grammar_state(self.raw, &mut s) })?;
        Ok(match s {
            sys::IKLLM_GRAMMAR_NONE => GrammarState::None,
            sys::IKLLM_GRAMMAR_INCOMPLETE => GrammarState::Incomplete,
            sys::IKLLM_GRAMMAR_COMPLETE => GrammarState::Complete,
            sys::IKLLM_GRAMMAR_DONE => GrammarState::Done,
            sys::IKLLM_GRAMMAR_FAILED => GrammarState::Failed,
            other => GrammarState::Other(other),
        })
    }
}
