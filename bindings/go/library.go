package ikllm

// Library instance, version info, log sink and cancel flags.

/*
#include <stdlib.h>
#include "ikllm_gen.h"
extern void ikllmGoLog(void* user_data, int32_t level, char* message); // callbacks.go
static ikllm_status ikllm_go_set_log(ikllm_lib* lib, uintptr_t handle, int32_t min_level) {
	if (!handle) return ikllm_lib_set_log(lib, NULL, NULL, min_level);
	return ikllm_lib_set_log(lib, (ikllm_log_fn)ikllmGoLog, (void*)handle, min_level);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// VersionString is the loaded library's version, e.g. "0.1.0".
func VersionString() string { return C.GoString(C.ikllm_version_string()) }

// LibraryVersionNumber is IKLLM_VERSION_NUMBER of the loaded library.
func LibraryVersionNumber() int { return int(C.ikllm_version_number()) }

// LibraryABIVersion is the ABI major of the loaded library (part of its SONAME).
func LibraryABIVersion() int { return int(C.ikllm_abi_version()) }

// owner frees a C object once it is closed and no dependent (model of a library, session of a
// model) still uses it, so Close may be called in any order.
type owner struct {
	mu     sync.Mutex
	refs   int
	closed bool
	free   func()
}

func (o *owner) acquire() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	o.refs++
	return nil
}

func (o *owner) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refs--
	if o.closed && o.refs == 0 && o.free != nil {
		o.free()
		o.free = nil
	}
}

func (o *owner) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.closed = true
	if o.refs == 0 && o.free != nil {
		o.free()
		o.free = nil
	}
}

func (o *owner) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// Library is a library instance: the log sink and thread defaults its models and sessions use.
// Safe for concurrent use; configure it (SetLog, SetDefaultThreads) before loading models.
type Library struct {
	ptr   *C.ikllm_lib
	own   owner
	sinks []cgo.Handle // every log sink ever installed, released when the library is freed
}

// NewLibrary creates a library instance. It fails with a clear message when the loaded
// libikllm has another ABI major than this binding was generated for.
func NewLibrary() (*Library, error) {
	if abi := LibraryABIVersion(); abi != ABIVersion {
		return nil, newError(ErrUnsupported, fmt.Sprintf(
			"libikllm %s has ABI major %d, this binding was generated for ABI major %d", VersionString(), abi, ABIVersion))
	}
	l := &Library{}
	if err := call(func() C.ikllm_status { return C.ikllm_lib_create(0, &l.ptr) }); err != nil {
		return nil, err
	}
	ptr := l.ptr
	l.own.free = func() {
		C.ikllm_lib_free(ptr)
		for _, h := range l.sinks {
			h.Delete()
		}
	}
	runtime.SetFinalizer(l, (*Library).Close)
	return l, nil
}

// Close frees the library once every model loaded through it is closed. Idempotent.
func (l *Library) Close() error {
	l.own.close()
	return nil
}

// LogFunc receives the library's messages; it may be called from library worker threads.
type LogFunc func(level LogLevel, message string)

func (l *Library) configurable() error {
	l.own.mu.Lock()
	defer l.own.mu.Unlock()
	if l.own.closed {
		return ErrClosed
	}
	if l.own.refs > 0 {
		return newError(ErrInvalidArgument, "configure the library before loading models through it")
	}
	return nil
}

// SetLog sends messages at minLevel or above to fn (nil: logging off).
func (l *Library) SetLog(fn LogFunc, minLevel LogLevel) error {
	if err := l.configurable(); err != nil {
		return err
	}
	var h cgo.Handle
	if fn != nil {
		h = cgo.NewHandle(fn)
		l.sinks = append(l.sinks, h)
	}
	defer runtime.KeepAlive(l)
	return call(func() C.ikllm_status { return C.ikllm_go_set_log(l.ptr, C.uintptr_t(h), C.int32_t(minLevel)) })
}

// SetDefaultThreads sets the worker-thread count of new sessions (0 = number of cores).
func (l *Library) SetDefaultThreads(n int) error {
	if err := l.configurable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(l)
	return call(func() C.ikllm_status { return C.ikllm_lib_set_default_threads(l.ptr, C.int32_t(n)) })
}

// cancelFlag is an int32 in C memory: the library keeps its address while Go code sets it.
type cancelFlag struct{ p *C.int32_t }

func newCancelFlag() *cancelFlag {
	f := &cancelFlag{p: (*C.int32_t)(C.calloc(1, 4))}
	runtime.SetFinalizer(f, func(f *cancelFlag) { C.free(unsafe.Pointer(f.p)) })
	return f
}

func (f *cancelFlag) set(v int32) { atomic.StoreInt32((*int32)(unsafe.Pointer(f.p)), v) }
