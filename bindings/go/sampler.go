package ikllm

// Sampler chains, including grammar / JSON-schema constrained sampling.

/*
#include "ikllm_gen.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Sampler is a sampler chain; its methods serialize on an internal lock.
type Sampler struct {
	mu    sync.Mutex
	ptr   *C.ikllm_sampler
	model *Model
}

// NewSampler creates a sampler (options of kind OptionsSampler: temperature, top_k, grammar,
// json_schema, ...; nil = defaults). An invalid grammar or schema fails with ErrGrammar.
func NewSampler(model *Model, options *Options) (*Sampler, error) {
	if err := model.own.acquire(); err != nil {
		return nil, err
	}
	s := &Sampler{model: model}
	err := call(func() C.ikllm_status { return C.ikllm_sampler_create(model.ptr, options.raw(), &s.ptr) })
	runtime.KeepAlive(options)
	if err != nil {
		model.own.release()
		return nil, err
	}
	runtime.SetFinalizer(s, (*Sampler).Close)
	return s, nil
}

// NewGreedySampler samples the most likely token, as `ikllm run --temp 0`.
func NewGreedySampler(model *Model) (*Sampler, error) {
	o, err := NewOptions(OptionsSampler)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	if err := o.SetFloat("temperature", 0); err != nil {
		return nil, err
	}
	return NewSampler(model, o)
}

// Close frees the sampler. Idempotent.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.ikllm_sampler_free(s.ptr)
		s.ptr = nil
		s.model.own.release()
	}
	return nil
}

func (s *Sampler) lock() error {
	s.mu.Lock()
	if s.ptr == nil {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Sample picks a token from the logits of batch token index of the session's last decode
// (-1: the last) and records it (penalty history, grammar).
func (s *Sampler) Sample(session *Session, index int) (Token, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if err := session.lock(); err != nil {
		return 0, err
	}
	defer session.mu.Unlock()
	var t C.ikllm_token
	err := call(func() C.ikllm_status { return C.ikllm_sampler_sample(s.ptr, session.ptr, C.int32_t(index), &t) })
	return Token(t), err
}

// SampleLogits picks a token from caller-provided logits.
func (s *Sampler) SampleLogits(logits []float32) (Token, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var t C.ikllm_token
	var p *C.float
	if len(logits) > 0 {
		p = (*C.float)(unsafe.Pointer(&logits[0]))
	}
	err := call(func() C.ikllm_status { return C.ikllm_sampler_sample_logits(s.ptr, p, C.int32_t(len(logits)), &t) })
	return Token(t), err
}

// Accept records tokens in the penalty history; with grammar true the grammar advances over
// them too (prompt tokens: false).
func (s *Sampler) Accept(tokens []Token, grammar bool) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	flags := C.uint32_t(SamplerAcceptNoGrammar)
	if grammar {
		flags = 0
	}
	return call(func() C.ikllm_status {
		return C.ikllm_sampler_accept_v2(s.ptr, tokenPtr(tokens), C.size_t(len(tokens)), flags)
	})
}

// Reset clears the history, re-seeds and restarts the grammar.
func (s *Sampler) Reset() error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return call(func() C.ikllm_status { return C.ikllm_sampler_reset(s.ptr) })
}

// GrammarState tells where the sampler's grammar stands (GrammarNone without a grammar).
func (s *Sampler) GrammarState() (GrammarState, error) {
	if err := s.lock(); err != nil {
		return GrammarNone, err
	}
	defer s.mu.Unlock()
	var st C.int32_t
	err := call(func() C.ikllm_status { return C.ikllm_sampler_grammar_state(s.ptr, &st) })
	return GrammarState(st), err
}
