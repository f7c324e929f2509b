// Streaming generation as an iterator, step for step what `ikllm run` does.
use crate::detok::Detokenizer;
use crate::error::{Error, Result, Status};
use crate::model::TokenizeFlags;
use crate::sampler::{GrammarState, Sampler};
use crate::session::Session;
use crate::sys;
use crate::Token;

/// One streamed piece: the sampled token (None for the final flush) and its newly completed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub token: Option<Token>,
    pub text: String,
}

/// Iterator over generated pieces; see Session::generate.
pub struct Generate<'a> {
    session: &'a mut Session,
    sampler: &'a mut Sampler,
    detok: Detokenizer,
    remaining: usize,
    pending: Option<Token>, // sampled, shown, not yet decoded
    done: bool,
}

impl Session {
    /// Decodes prompt (after what sequence 0 holds) and returns an iterator of up to max_tokens
    /// generated pieces. It stops at an end-of-generation token, when a constrained sampler's
    /// grammar is done, or when the context is full; the last item flushes the detokenizer.
    pub fn generate<'a>(
        &'a mut self,
        sampler: &'a mut Sampler,
        prompt: &[Token],
        max_tokens: usize,
    ) -> Result<Generate<'a>> {
        if prompt.is_empty() {
            return Err(Error::new(Status::INVALID_ARGUMENT, "generate: empty prompt"));
        }
        // The prompt counts for penalties but is not part of the grammar's text.
        sampler.accept(prompt, false)?;
        // Generated text continues the prompt, so its first piece keeps its leading space.
        let detok = Detokenizer::new(self.model(), TokenizeFlags::KEEP_LEADING_SPACE)?;
        self.decode_tokens(prompt)?;
        Ok(Generate { session: self, sampler, detok, remaining: max_tokens, pending: None, done: false })
    }
}

impl<'a> Generate<'a> {
    fn finish(&mut self) -> Option<Result<Piece>> {
        self.done = true;
        match self.detok.flush() {
            Ok("") => None,
            Ok(t) => Some(Ok(Piece { token: None, text: t.to_string() })),
            Err(e) => Some(Err(e)),
        }
    }
    fn fail(&mut self, e: Error) -> Option<Result<Piece>> {
        self.done = true;
        Some(Err(e))
    }
}

impl<'a> Iterator for Generate<'a> {
    type Item = Result<Piece>;

    fn next(&mut self) -> Option<Result<Piece>> {
        if self.done {
            return None;
        }
        if let Some(tok) = self.pending.take() {
            match self.session.decode_tokens(&[tok]) {
                Ok(()) => {}
                Err(e) if e.status().0 == sys::IKLLM_CONTEXT_FULL => return self.finish(),
                Err(e) => return self.fail(e),
            }
        }
        if self.remaining == 0 {
            return self.finish();
        }
        let tok = match self.sampler.sample(self.session, -1) {
            Ok(t) => t,
            Err(e) => return self.fail(e),
        };
        if self.session.model().is_eog(tok) {
            return self.finish();
        }
        let text = match self.detok.push(tok) {
            Ok(t) => t.to_string(),
            Err(e) => return self.fail(e),
        };
        self.remaining -= 1;
        match self.sampler.grammar_state() {
            Ok(GrammarState::Done) => self.remaining = 0, // only end of generation could follow
            Ok(_) if self.remaining > 0 => self.pending = Some(tok),
            Ok(_) => {}
            Err(e) => return self.fail(e),
        }
        Some(Ok(Piece { token: Some(tok), text }))
    }
}
