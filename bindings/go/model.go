package ikllm

// A loaded model: metadata, tokenizer and chat templates. Immutable; safe for concurrent use.

/*
#include <stdlib.h>
#include "ikllm_gen.h"
extern int32_t ikllmGoProgress(void* user_data, float progress); // callbacks.go
static ikllm_status ikllm_go_model_load(ikllm_lib* lib, const char* path, const ikllm_options* options,
                                        uintptr_t progress, const volatile int32_t* cancel, ikllm_model** out) {
	return ikllm_model_load(lib, path, options, progress ? (ikllm_progress_fn)ikllmGoProgress : NULL,
	                        (void*)progress, cancel, out);
}
*/
import "C"

import (
	"context"
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// Token is a token id of the model's vocabulary.
type Token = int32

// Model is a loaded model.
type Model struct {
	ptr *C.ikllm_model
	lib *Library
	own owner
}

// LoadOptions are the optional arguments of Load.
type LoadOptions struct {
	Options  *Options           // OptionsModel options; nil = defaults
	Progress func(float32) bool // progress in [0, 1] on the loading goroutine; return false to cancel
}

// Load loads a GGUF model. opts may be nil.
func Load(lib *Library, path string, opts *LoadOptions) (*Model, error) {
	return LoadContext(context.Background(), lib, path, opts)
}

// LoadContext loads a GGUF model; cancelling ctx stops the load (an *Error with status
// Cancelled that unwraps to ctx.Err()).
func LoadContext(ctx context.Context, lib *Library, path string, opts *LoadOptions) (*Model, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	if err := lib.own.acquire(); err != nil {
		return nil, err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var progress cgo.Handle
	if opts.Progress != nil {
		progress = cgo.NewHandle(opts.Progress)
		defer progress.Delete()
	}
	flag := newCancelFlag()
	stop := watch(ctx, flag)
	m := &Model{lib: lib}
	err := call(func() C.ikllm_status {
		return C.ikllm_go_model_load(lib.ptr, cpath, opts.Options.raw(), C.uintptr_t(progress), flag.p, &m.ptr)
	})
	stop()
	runtime.KeepAlive(flag)
	runtime.KeepAlive(opts.Options)
	if err != nil {
		lib.own.release()
		return nil, withContext(err, ctx)
	}
	ptr := m.ptr
	m.own.free = func() {
		C.ikllm_model_free(ptr)
		lib.own.release()
	}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// watch sets flag when ctx is done, until the returned stop is called.
func watch(ctx context.Context, flag *cancelFlag) (stop func()) {
	if ctx.Err() != nil {
		flag.set(1) // already done: no race with a watcher that has not run yet
		return func() {}
	}
	if ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			flag.set(1)
		case <-done:
		}
	}()
	return func() { close(done) }
}

// withContext ties a cancellation to the context that caused it.
func withContext(err error, ctx context.Context) error {
	if e, ok := err.(*Error); ok && e.Status == Cancelled && ctx.Err() != nil {
		e.cause = ctx.Err()
	}
	return err
}

// Close frees the model once every session, sampler and detokenizer of it is closed. Idempotent.
func (m *Model) Close() error {
	m.own.close()
	return nil
}

func (m *Model) goString(p *C.char) string {
	defer runtime.KeepAlive(m)
	return C.GoString(p)
}

// Architecture is general.architecture, e.g. "llama".
func (m *Model) Architecture() string { return m.goString(C.ikllm_model_architecture(m.ptr)) }

// Name is general.name or "".
func (m *Model) Name() string { return m.goString(C.ikllm_model_name(m.ptr)) }

// Placement says how the weights were placed in memory.
func (m *Model) Placement() string { return m.goString(C.ikllm_model_placement(m.ptr)) }

func (m *Model) NParams() uint64 {
	defer runtime.KeepAlive(m)
	return uint64(C.ikllm_model_n_params(m.ptr))
}
func (m *Model) SizeBytes() uint64 {
	defer runtime.KeepAlive(m)
	return uint64(C.ikllm_model_size_bytes(m.ptr))
}
func (m *Model) NVocab() int { defer runtime.KeepAlive(m); return int(C.ikllm_model_n_vocab(m.ptr)) }
func (m *Model) NCtxTrain() int {
	defer runtime.KeepAlive(m)
	return int(C.ikllm_model_n_ctx_train(m.ptr))
}
func (m *Model) NEmbd() int  { defer runtime.KeepAlive(m); return int(C.ikllm_model_n_embd(m.ptr)) }
func (m *Model) NLayer() int { defer runtime.KeepAlive(m); return int(C.ikllm_model_n_layer(m.ptr)) }

// MetaKeys lists the GGUF metadata keys in file order.
func (m *Model) MetaKeys() []string {
	defer runtime.KeepAlive(m)
	n := int(C.ikllm_model_meta_count(m.ptr))
	keys := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if k := C.ikllm_model_meta_key(m.ptr, C.int32_t(i)); k != nil {
			keys = append(keys, C.GoString(k))
		}
	}
	return keys
}

// readText fills a caller buffer with the C convention (size query, then fill) and returns
// the bytes without the terminating NUL.
func readText(f func(buf *C.char, size C.size_t, needed *C.size_t) C.ikllm_status) ([]byte, error) {
	var needed C.size_t
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f(nil, 0, &needed)
	for {
		if st != C.ikllm_status(OK) && st != C.ikllm_status(ErrBufferTooSmall) {
			return nil, lastError(st)
		}
		size := needed
		if size == 0 {
			size = 1
		}
		buf := C.malloc(size)
		st = f((*C.char)(buf), size, &needed)
		if st == C.ikllm_status(OK) {
			n := int(needed)
			if n > 0 {
				n-- // the terminating NUL
			}
			out := C.GoBytes(buf, C.int(n))
			C.free(buf)
			return out, nil
		}
		C.free(buf) // too small after all (the value grew): retry with the new size
	}
}

// MetaValue renders a metadata value as text (arrays abbreviated unless full).
func (m *Model) MetaValue(key string, full bool) (string, error) {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	defer runtime.KeepAlive(m)
	var flags C.uint32_t
	if full {
		flags = C.uint32_t(MetaFull)
	}
	b, err := readText(func(buf *C.char, size C.size_t, needed *C.size_t) C.ikllm_status {
		return C.ikllm_model_meta_value(m.ptr, k, flags, buf, size, needed)
	})
	return string(b), err
}

// Tokenize returns the token ids of text (flags: TokenizeAddSpecial | TokenizeParseSpecial).
func (m *Model) Tokenize(text string, flags TokenizeFlags) ([]Token, error) {
	defer runtime.KeepAlive(m)
	ctext := C.CString(text) // C memory: the library may read it during both calls
	defer C.free(unsafe.Pointer(ctext))
	var n C.size_t
	err := call(func() C.ikllm_status {
		st := C.ikllm_tokenize(m.ptr, ctext, C.size_t(len(text)), C.uint32_t(flags), nil, 0, &n)
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
		return C.ikllm_tokenize(m.ptr, ctext, C.size_t(len(text)), C.uint32_t(flags), (*C.ikllm_token)(&out[0]),
			C.size_t(len(out)), &n)
	})
	if err != nil {
		return nil, err
	}
	return out[:int(n)], nil
}

func tokenPtr(tokens []Token) *C.ikllm_token {
	if len(tokens) == 0 {
		return nil
	}
	return (*C.ikllm_token)(&tokens[0])
}

// Detokenize returns the text of tokens, valid UTF-8 (flags: DetokRenderSpecial |
// DetokKeepLeadingSpace).
func (m *Model) Detokenize(tokens []Token, flags DetokFlags) (string, error) {
	defer runtime.KeepAlive(m)
	b, err := readText(func(buf *C.char, size C.size_t, needed *C.size_t) C.ikllm_status {
		return C.ikllm_detokenize(m.ptr, tokenPtr(tokens), C.size_t(len(tokens)), C.uint32_t(flags), buf, size, needed)
	})
	return string(b), err
}

// TokenPiece returns the raw bytes of one token's piece (possibly an incomplete UTF-8 sequence).
func (m *Model) TokenPiece(token Token, flags DetokFlags) ([]byte, error) {
	defer runtime.KeepAlive(m)
	return readText(func(buf *C.char, size C.size_t, needed *C.size_t) C.ikllm_status {
		return C.ikllm_token_to_piece(m.ptr, C.ikllm_token(token), C.uint32_t(flags), buf, size, needed)
	})
}

// SpecialToken returns the id of a special token; ok is false when the vocabulary has none.
func (m *Model) SpecialToken(which SpecialToken) (tok Token, ok bool) {
	defer runtime.KeepAlive(m)
	t := Token(C.ikllm_model_special_token(m.ptr, C.int32_t(which)))
	return t, t >= 0
}

// IsEOG reports whether the token ends generation (EOS, EOT, ...).
func (m *Model) IsEOG(token Token) bool {
	defer runtime.KeepAlive(m)
	return C.ikllm_token_is_eog(m.ptr, C.ikllm_token(token)) != 0
}

// ChatTemplate returns the source of the default chat template (name "") or a named one
// (ErrNotFound when the model has none).
func (m *Model) ChatTemplate(name string) (string, error) {
	defer runtime.KeepAlive(m)
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	var out *C.char
	if err := call(func() C.ikllm_status { return C.ikllm_model_chat_template(m.ptr, cname, &out) }); err != nil {
		return "", err
	}
	return C.GoString(out), nil
}

// ChatTemplateNames lists the model's named chat templates (the default one is not listed).
func (m *Model) ChatTemplateNames() []string {
	defer runtime.KeepAlive(m)
	n := int(C.ikllm_model_chat_template_count(m.ptr))
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if p := C.ikllm_model_chat_template_name(m.ptr, C.int32_t(i)); p != nil {
			names = append(names, C.GoString(p))
		}
	}
	return names
}
