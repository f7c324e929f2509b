package ikllm

// Streaming generation, step for step what `ikllm run` does: an iterator (Next/Piece/Err, like
// bufio.Scanner) and a channel form.

import (
	"context"
	"errors"
)

// Piece is one streamed piece: the sampled token (-1 for the final flush) and its newly
// completed text.
type Piece struct {
	Token Token
	Text  string
}

// Generator iterates over generated pieces; see Session.Generate.
type Generator struct {
	ctx       context.Context
	session   *Session
	sampler   *Sampler
	detok     *Detokenizer
	remaining int
	pending   Token // sampled and shown, not yet decoded
	hasPend   bool
	done      bool
	piece     Piece
	err       error
}

// Generate decodes prompt (after what sequence 0 holds) and returns an iterator of up to
// maxTokens pieces. Generation stops at an end-of-generation token, when a constrained
// sampler's grammar is done, when the context is full, or when ctx is done (Err then unwraps
// to ctx.Err(); a decode in progress is interrupted through the session's cancel flag).
func (s *Session) Generate(ctx context.Context, sampler *Sampler, prompt []Token, maxTokens int) (*Generator, error) {
	if len(prompt) == 0 {
		return nil, newError(ErrInvalidArgument, "generate: empty prompt")
	}
	// The prompt counts for penalties but is not part of the grammar's text.
	if err := sampler.Accept(prompt, false); err != nil {
		return nil, err
	}
	// Generated text continues the prompt, so its first piece keeps its leading space.
	detok, err := NewDetokenizer(s.model, DetokKeepLeadingSpace)
	if err != nil {
		return nil, err
	}
	if err := s.DecodeTokens(ctx, prompt); err != nil {
		detok.Close()
		return nil, err
	}
	return &Generator{ctx: ctx, session: s, sampler: sampler, detok: detok, remaining: maxTokens}, nil
}

func (g *Generator) finish() bool {
	g.done = true
	text, err := g.detok.Flush()
	g.detok.Close()
	if err != nil {
		g.err = err
		return false
	}
	g.piece = Piece{Token: -1, Text: text}
	return text != ""
}

func (g *Generator) fail(err error) bool {
	g.done = true
	g.err = err
	g.detok.Close()
	return false
}

// Next advances to the next piece; false at the end or on error (see Err).
func (g *Generator) Next() bool {
	if g.done {
		return false
	}
	if g.hasPend {
		g.hasPend = false
		err := g.session.DecodeTokens(g.ctx, []Token{g.pending})
		if errors.Is(err, ContextFull) {
			return g.finish()
		}
		if err != nil {
			return g.fail(err)
		}
	}
	if err := g.ctx.Err(); err != nil {
		return g.fail(&Error{Status: Cancelled, Message: "generation cancelled", Offset: -1, BytesNeeded: -1, cause: err})
	}
	if g.remaining <= 0 {
		return g.finish()
	}
	tok, err := g.sampler.Sample(g.session, -1)
	if err != nil {
		return g.fail(err)
	}
	if g.session.model.IsEOG(tok) {
		return g.finish()
	}
	text, err := g.detok.Push(tok)
	if err != nil {
		return g.fail(err)
	}
	g.remaining--
	state, err := g.sampler.GrammarState()
	if err != nil {
		return g.fail(err)
	}
	if state == GrammarDone {
		g.remaining = 0 // only end of generation could follow
	} else if g.remaining > 0 {
		g.pending, g.hasPend = tok, true
	}
	g.piece = Piece{Token: tok, Text: text}
	return true
}

// Piece is the current piece (after Next returned true).
func (g *Generator) Piece() Piece { return g.piece }

// Text is the current piece's text.
func (g *Generator) Text() string { return g.piece.Text }

// Err is the error that stopped the iteration, nil at a normal end.
func (g *Generator) Err() error { return g.err }

// Close stops the iteration early and frees its detokenizer. Idempotent.
func (g *Generator) Close() error {
	if !g.done {
		g.done = true
		g.detok.Close()
	}
	return nil
}

// Stream runs the generator on its own goroutine and delivers the pieces on a channel, closed
// at the end; the error (nil at a normal end) is sent on the second channel when it closes.
func (g *Generator) Stream() (<-chan Piece, <-chan error) {
	pieces := make(chan Piece)
	errc := make(chan error, 1)
	go func() {
		defer close(pieces)
		defer close(errc)
		defer g.Close()
		for g.Next() {
			select {
			case pieces <- g.Piece():
			case <-g.ctx.Done():
				errc <- &Error{Status: Cancelled, Message: "generation cancelled", Offset: -1, BytesNeeded: -1, cause: g.ctx.Err()}
				return
			}
		}
		errc <- g.Err()
	}()
	return pieces, errc
}
