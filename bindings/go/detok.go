package ikllm

// Incremental detokenizer for streaming: only complete UTF-8 is returned.

/*
#include "ikllm_gen.h"
*/
import "C"

import (
	"runtime"
	"sync"
)

// Detokenizer turns a token stream into text pieces; its methods serialize on an internal lock.
type Detokenizer struct {
	mu    sync.Mutex
	ptr   *C.ikllm_detok
	model *Model
}

// NewDetokenizer creates a detokenizer (flags: DetokRenderSpecial | DetokKeepLeadingSpace).
func NewDetokenizer(model *Model, flags DetokFlags) (*Detokenizer, error) {
	if err := model.own.acquire(); err != nil {
		return nil, err
	}
	d := &Detokenizer{model: model}
	if err := call(func() C.ikllm_status { return C.ikllm_detok_create(model.ptr, C.uint32_t(flags), &d.ptr) }); err != nil {
		model.own.release()
		return nil, err
	}
	runtime.SetFinalizer(d, (*Detokenizer).Close)
	return d, nil
}

// Close frees the detokenizer. Idempotent.
func (d *Detokenizer) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ptr != nil {
		C.ikllm_detok_free(d.ptr)
		d.ptr = nil
		d.model.own.release()
	}
	return nil
}

func (d *Detokenizer) text(f func(text **C.char, n *C.size_t) C.ikllm_status) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ptr == nil {
		return "", ErrClosed
	}
	var p *C.char
	var n C.size_t
	if err := call(func() C.ikllm_status { return f(&p, &n) }); err != nil {
		return "", err
	}
	return C.GoStringN(p, C.int(n)), nil
}

// Push feeds one token and returns the newly completed text (possibly "").
func (d *Detokenizer) Push(token Token) (string, error) {
	return d.text(func(p **C.char, n *C.size_t) C.ikllm_status {
		return C.ikllm_detok_push(d.ptr, C.ikllm_token(token), p, n)
	})
}

// Flush ends the stream (a dangling incomplete sequence becomes U+FFFD) and resets.
func (d *Detokenizer) Flush() (string, error) {
	return d.text(func(p **C.char, n *C.size_t) C.ikllm_status { return C.ikllm_detok_flush(d.ptr, p, n) })
}
