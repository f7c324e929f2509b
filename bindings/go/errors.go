package ikllm

// Errors: a failing call returns *Error with the status and the library's message. The message
// is per OS thread in the C library, so every call and its error read run with the goroutine
// locked to its thread.

/*
#cgo LDFLAGS: -likllm
#include "ikllm_gen.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
)

// String is the library's name of the status, e.g. "IKLLM_ERR_IO".
func (s Status) String() string {
	return C.GoString(C.ikllm_status_name(C.ikllm_status(s)))
}

// Error makes a Status usable as a sentinel: errors.Is(err, ikllm.ErrIO).
func (s Status) Error() string { return s.String() }

// Error is a failed call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
	// Structured detail, when the library knows it: the tensor concerned (""), the file offset
	// and the bytes needed (-1 when unknown).
	Tensor      string
	Offset      int64
	BytesNeeded int64
	cause       error // context error behind a cancellation, if any
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Status, e.Message) }

// Is matches a Status sentinel (errors.Is(err, ikllm.ErrNotFound)).
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && s == e.Status
}

// Unwrap gives the context's error when a context cancelled the call.
func (e *Error) Unwrap() error { return e.cause }

// ErrClosed is returned by methods of an object after Close.
var ErrClosed = errors.New("ikllm: object is closed")

func newError(s Status, msg string) *Error {
	return &Error{Status: s, Message: msg, Offset: -1, BytesNeeded: -1}
}

func known(v C.uint64_t) int64 {
	if uint64(v) == ^uint64(0) {
		return -1
	}
	return int64(v)
}

// lastError reads the thread's last error; the caller holds the OS thread.
func lastError(st C.ikllm_status) *Error {
	return &Error{Status: Status(st), Message: C.GoString(C.ikllm_last_error()),
		Tensor: C.GoString(C.ikllm_last_error_tensor()), Offset: known(C.ikllm_last_error_offset()),
		BytesNeeded: known(C.ikllm_last_error_bytes_needed())}
}

// call runs f (one C call returning a status) and, on failure, reads the message on the same
// OS thread.
func call(f func() C.ikllm_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f()
	if st == C.ikllm_status(OK) {
		return nil
	}
	return lastError(st)
}
