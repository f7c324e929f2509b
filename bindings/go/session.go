package ikllm

// A session: KV cache of one or more sequences, batched decode, logits, cancellation.

/*
#include "ikllm_gen.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"unsafe"
)

// Session is a session of a model. Its methods serialize on an internal lock, so a session is
// used by one goroutine at a time as the C contract requires.
type Session struct {
	mu    sync.Mutex
	ptr   *C.ikllm_session
	model *Model
	flag  *cancelFlag // registered with the library for the session's whole life
}

// NewSession creates a session (options of kind OptionsSession; nil = defaults).
func NewSession(model *Model, options *Options) (*Session, error) {
	if err := model.own.acquire(); err != nil {
		return nil, err
	}
	s := &Session{model: model, flag: newCancelFlag()}
	err := call(func() C.ikllm_status { return C.ikllm_session_create(model.ptr, options.raw(), &s.ptr) })
	runtime.KeepAlive(options)
	if err == nil {
		err = call(func() C.ikllm_status { return C.ikllm_session_set_cancel_flag(s.ptr, s.flag.p) })
		if err != nil {
			C.ikllm_session_free(s.ptr)
		}
	}
	if err != nil {
		model.own.release()
		return nil, err
	}
	runtime.SetFinalizer(s, (*Session).Close)
	return s, nil
}

// Close frees the session. Idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.ikllm_session_free(s.ptr)
		s.ptr = nil
		s.model.own.release()
	}
	return nil
}

// Model is the session's model.
func (s *Session) Model() *Model { return s.model }

func (s *Session) lock() error {
	s.mu.Lock()
	if s.ptr == nil {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// NCtx is the KV-cache size in tokens.
func (s *Session) NCtx() int {
	if s.lock() != nil {
		return 0
	}
	defer s.mu.Unlock()
	return int(C.ikllm_session_n_ctx(s.ptr))
}

// NSeqMax is the number of sequences the session can hold.
func (s *Session) NSeqMax() int {
	if s.lock() != nil {
		return 0
	}
	defer s.mu.Unlock()
	return int(C.ikllm_session_n_seq_max(s.ptr))
}

// Batch is a batch of tokens for Decode: each token has a sequence, a position, and says
// whether its logits are wanted.
type Batch struct {
	Tokens     []Token
	Positions  []int32
	SeqIDs     []int32
	WantLogits []int32
}

// Add appends a token.
func (b *Batch) Add(token Token, pos int32, seq int32, logits bool) {
	b.Tokens = append(b.Tokens, token)
	b.Positions = append(b.Positions, pos)
	b.SeqIDs = append(b.SeqIDs, seq)
	w := int32(0)
	if logits {
		w = 1
	}
	b.WantLogits = append(b.WantLogits, w)
}

func i32ptr(v []int32) *C.int32_t {
	if len(v) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&v[0]))
}

// decode runs one decode with ctx wired to the session's cancel flag. Caller holds s.mu.
func (s *Session) decode(ctx context.Context, b *Batch) error {
	n := len(b.Tokens)
	for _, v := range [][]int32{b.Positions, b.SeqIDs, b.WantLogits} {
		if v != nil && len(v) != n {
			return newError(ErrInvalidArgument, "batch slices differ in length")
		}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Status: Cancelled, Message: "context done before decode", Offset: -1, BytesNeeded: -1, cause: err}
	}
	s.flag.set(0)
	stop := watch(ctx, s.flag)
	defer stop()
	err := call(func() C.ikllm_status {
		return C.ikllm_session_decode(s.ptr, tokenPtr(b.Tokens), i32ptr(b.Positions), i32ptr(b.SeqIDs),
			i32ptr(b.WantLogits), C.int32_t(n), 0)
	})
	return withContext(err, ctx)
}

// Decode decodes a batch. nil Positions: each token takes the next position of its sequence;
// nil SeqIDs: sequence 0; nil WantLogits: only the last token gets logits. On error (also
// ContextFull, or Cancelled when ctx is done) the cache is unchanged.
func (s *Session) Decode(ctx context.Context, b *Batch) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.decode(ctx, b)
}

// DecodeTokens decodes tokens as the continuation of sequence 0 (logits for the last one).
func (s *Session) DecodeTokens(ctx context.Context, tokens []Token) error {
	return s.Decode(ctx, &Batch{Tokens: tokens})
}

// Logits returns a copy of the logits of batch token index of the last decode (-1: the last
// token that had logits).
func (s *Session) Logits(index int) ([]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var p *C.float
	var n C.int32_t
	if err := call(func() C.ikllm_status { return C.ikllm_session_logits(s.ptr, C.int32_t(index), &p, &n) }); err != nil {
		return nil, err
	}
	out := make([]float32, int(n))
	copy(out, unsafe.Slice((*float32)(unsafe.Pointer(p)), int(n)))
	return out, nil
}

func (s *Session) seqCall(f func() C.ikllm_status) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return call(f)
}

// SeqRemove removes positions [p0, p1) of a sequence (p1 < 0: to the end).
func (s *Session) SeqRemove(seq, p0, p1 int) error {
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_seq_remove(s.ptr, C.int32_t(seq), C.int32_t(p0), C.int32_t(p1))
	})
}

// SeqCopy shares positions [p0, p1) of src into dst.
func (s *Session) SeqCopy(src, dst, p0, p1 int) error {
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_seq_copy(s.ptr, C.int32_t(src), C.int32_t(dst), C.int32_t(p0), C.int32_t(p1))
	})
}

// SeqPosMax is the largest position the sequence holds, or -1 when it is empty.
func (s *Session) SeqPosMax(seq int) int {
	if s.lock() != nil {
		return -1
	}
	defer s.mu.Unlock()
	return int(C.ikllm_session_seq_pos_max(s.ptr, C.int32_t(seq)))
}

// Clear empties every sequence.
func (s *Session) Clear() error {
	return s.seqCall(func() C.ikllm_status { return C.ikllm_session_clear(s.ptr) })
}
