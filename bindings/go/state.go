package ikllm

// Session extras: embeddings and hidden states, scoring, sequence tools, state save/restore,
// importance-matrix collection.

/*
#include <stdlib.h>
#include "ikllm_gen.h"
*/
import "C"

import (
	"unsafe"
)

func floats(p *C.float, n C.int32_t) []float32 {
	out := make([]float32, int(n))
	if n > 0 {
		copy(out, unsafe.Slice((*float32)(unsafe.Pointer(p)), int(n)))
	}
	return out
}

// HiddenState is a copy of the final hidden state of batch token index of the last decode
// (session option embeddings = 1; -1 = the batch's last token).
func (s *Session) HiddenState(index int) ([]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var p *C.float
	var n C.int32_t
	err := call(func() C.ikllm_status { return C.ikllm_session_hidden_state(s.ptr, C.int32_t(index), &p, &n) })
	if err != nil {
		return nil, err
	}
	return floats(p, n), nil
}

// Embeddings is a copy of the pooled embedding of a sequence from the last decode.
func (s *Session) Embeddings(seq int) ([]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var p *C.float
	var n C.int32_t
	err := call(func() C.ikllm_status { return C.ikllm_session_embeddings(s.ptr, C.int32_t(seq), &p, &n) })
	if err != nil {
		return nil, err
	}
	return floats(p, n), nil
}

// Pooling is the pooling in effect (PoolingNone, PoolingMean, ...); ok is false when
// embeddings are off.
func (s *Session) Pooling() (p Pooling, ok bool) {
	if s.lock() != nil {
		return 0, false
	}
	defer s.mu.Unlock()
	v := int32(C.ikllm_session_pooling(s.ptr))
	return Pooling(v), v >= 0
}

// ScoreTokens returns ln p(tokens[i+1] | tokens[..i]) for i in [first, len-1), decoding tokens
// as the continuation of seq. On failure the sequence is left as it was.
func (s *Session) ScoreTokens(seq int, tokens []Token, first int) ([]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	n := len(tokens) - 1 - first
	if n < 0 {
		n = 0
	}
	out := make([]float32, n+1) // +1: never a nil buffer
	var needed C.size_t
	err := call(func() C.ikllm_status {
		return C.ikllm_session_score_tokens(s.ptr, C.int32_t(seq), tokenPtr(tokens), C.int32_t(len(tokens)),
			C.int32_t(first), (*C.float)(unsafe.Pointer(&out[0])), C.size_t(n), &needed, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	return out[:int(needed)], nil
}

// SeqKeep removes every sequence but seq.
func (s *Session) SeqKeep(seq int) error {
	return s.seqCall(func() C.ikllm_status { return C.ikllm_session_seq_keep(s.ptr, C.int32_t(seq)) })
}

// SeqShift adds delta to positions [p0, p1) of a sequence.
func (s *Session) SeqShift(seq, p0, p1, delta int) error {
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_seq_shift(s.ptr, C.int32_t(seq), C.int32_t(p0), C.int32_t(p1), C.int32_t(delta))
	})
}

// SeqTokens lists the tokens a sequence holds, in position order (-1 where unknown).
func (s *Session) SeqTokens(seq int) ([]Token, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var n C.size_t
	err := call(func() C.ikllm_status {
		st := C.ikllm_session_seq_tokens(s.ptr, C.int32_t(seq), nil, 0, &n)
		if st == C.ikllm_status(ErrBufferTooSmall) {
			return C.ikllm_status(OK)
		}
		return st
	})
	if err != nil || n == 0 {
		return []Token{}, err
	}
	out := make([]Token, int(n))
	err = call(func() C.ikllm_status {
		return C.ikllm_session_seq_tokens(s.ptr, C.int32_t(seq), tokenPtr(out), C.size_t(len(out)), &n)
	})
	return out[:int(n)], err
}

// PromptReuse keeps the longest cached prefix of tokens in seq and returns its length: decode
// tokens[reused:] next.
func (s *Session) PromptReuse(seq int, tokens []Token) (int, error) {
	var reused C.int32_t
	err := s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_prompt_reuse(s.ptr, C.int32_t(seq), tokenPtr(tokens), C.int32_t(len(tokens)), &reused)
	})
	return int(reused), err
}

// ContextShift drops positions [nKeep, nKeep+nDiscard) of seq and moves the later ones down.
func (s *Session) ContextShift(seq, nKeep, nDiscard int) error {
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_context_shift(s.ptr, C.int32_t(seq), C.int32_t(nKeep), C.int32_t(nDiscard))
	})
}

func seqIDs(ids []int32) *C.int32_t { return i32ptr(ids) }

func samplerPtr(sm *Sampler) *C.ikllm_sampler {
	if sm == nil {
		return nil
	}
	return sm.ptr
}

// StateSave saves the KV cache of seqs (nil: every non-empty sequence) and, with a sampler,
// its RNG and history.
func (s *Session) StateSave(seqs []int32, sampler *Sampler) ([]byte, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if sampler != nil {
		if err := sampler.lock(); err != nil {
			return nil, err
		}
		defer sampler.mu.Unlock()
	}
	var needed C.size_t
	err := call(func() C.ikllm_status {
		st := C.ikllm_session_state_save(s.ptr, seqIDs(seqs), C.int32_t(len(seqs)), samplerPtr(sampler), 0, nil, 0, &needed)
		if st == C.ikllm_status(ErrBufferTooSmall) {
			return C.ikllm_status(OK)
		}
		return st
	})
	if err != nil {
		return nil, err
	}
	buf := C.malloc(needed + 1)
	defer C.free(buf)
	err = call(func() C.ikllm_status {
		return C.ikllm_session_state_save(s.ptr, seqIDs(seqs), C.int32_t(len(seqs)), samplerPtr(sampler), 0, buf,
			needed, &needed)
	})
	if err != nil {
		return nil, err
	}
	return C.GoBytes(buf, C.int(needed)), nil
}

// StateSaveFile saves like StateSave, atomically into a file.
func (s *Session) StateSaveFile(path string, seqs []int32, sampler *Sampler) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	if sampler != nil {
		if err := sampler.lock(); err != nil {
			return err
		}
		defer sampler.mu.Unlock()
	}
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_state_save_file(s.ptr, seqIDs(seqs), C.int32_t(len(seqs)), samplerPtr(sampler), 0, p)
	})
}

func stateFlags(replaceAll bool) C.uint32_t {
	if replaceAll {
		return C.uint32_t(StateReplaceAll)
	}
	return 0
}

// StateLoad restores a saved state (replaceAll: empty every sequence first); with a sampler,
// its RNG and history too. Errors leave the session and sampler unchanged.
func (s *Session) StateLoad(data []byte, sampler *Sampler, replaceAll bool) error {
	if sampler != nil {
		if err := sampler.lock(); err != nil {
			return err
		}
		defer sampler.mu.Unlock()
	}
	buf := C.CBytes(data)
	defer C.free(buf)
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_state_load(s.ptr, buf, C.size_t(len(data)), samplerPtr(sampler), stateFlags(replaceAll))
	})
}

// StateLoadFile restores a state saved with StateSaveFile.
func (s *Session) StateLoadFile(path string, sampler *Sampler, replaceAll bool) error {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	if sampler != nil {
		if err := sampler.lock(); err != nil {
			return err
		}
		defer sampler.mu.Unlock()
	}
	return s.seqCall(func() C.ikllm_status {
		return C.ikllm_session_state_load_file(s.ptr, p, samplerPtr(sampler), stateFlags(replaceAll))
	})
}

// ImatrixStart starts collecting importance-matrix statistics of every decode from now on.
func (s *Session) ImatrixStart() error {
	return s.seqCall(func() C.ikllm_status { return C.ikllm_session_imatrix_start(s.ptr) })
}

// ImatrixSave writes the statistics so far to path (collection continues).
func (s *Session) ImatrixSave(path string, nChunks int, dataset string) error {
	p, d := C.CString(path), optCString(dataset)
	defer C.free(unsafe.Pointer(p))
	defer C.free(unsafe.Pointer(d))
	return s.seqCall(func() C.ikllm_status { return C.ikllm_session_imatrix_save(s.ptr, p, C.int32_t(nChunks), d) })
}

// ImatrixStop stops collecting and frees the statistics.
func (s *Session) ImatrixStop() error {
	return s.seqCall(func() C.ikllm_status { return C.ikllm_session_imatrix_stop(s.ptr) })
}
