package ikllm

// Options objects (typed settings by string key) and the library's option listing.

/*
#include <stdlib.h>
#include "ikllm_gen.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// OptionInfo describes one option as the library lists it.
type OptionInfo struct {
	Name                   string
	Type                   OptionType
	Default, Min, Max, Doc string
}

// ListOptions returns every option of a kind, in the library's order.
func ListOptions(kind OptionsKind) ([]OptionInfo, error) {
	n := int(C.ikllm_option_count(C.int32_t(kind)))
	out := make([]OptionInfo, 0, n)
	for i := 0; i < n; i++ {
		var name, def, min, max, doc *C.char
		var ty C.int32_t
		err := call(func() C.ikllm_status {
			return C.ikllm_option_info(C.int32_t(kind), C.int32_t(i), &name, &ty, &def, &min, &max, &doc)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, OptionInfo{C.GoString(name), OptionType(ty), C.GoString(def), C.GoString(min),
			C.GoString(max), C.GoString(doc)})
	}
	return out, nil
}

// Options is an options object of one kind, every key at its default until set.
// Not safe for concurrent use.
type Options struct {
	ptr  *C.ikllm_options
	kind OptionsKind
}

// NewOptions creates an options object of a kind (OptionsModel, OptionsSession, ...).
func NewOptions(kind OptionsKind) (*Options, error) {
	o := &Options{kind: kind}
	if err := call(func() C.ikllm_status { return C.ikllm_options_create(C.int32_t(kind), &o.ptr) }); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(o, (*Options).Close)
	return o, nil
}

// Close frees the object. Idempotent.
func (o *Options) Close() error {
	if o.ptr != nil {
		C.ikllm_options_free(o.ptr)
		o.ptr = nil
	}
	return nil
}

// Kind is the kind the object was created for.
func (o *Options) Kind() OptionsKind { return o.kind }

func (o *Options) raw() *C.ikllm_options {
	if o == nil {
		return nil
	}
	return o.ptr
}

func (o *Options) with(key string, f func(k *C.char) C.ikllm_status) error {
	if o.ptr == nil {
		return ErrClosed
	}
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	defer runtime.KeepAlive(o)
	return call(func() C.ikllm_status { return f(k) })
}

// SetInt sets an integer option (errors: ErrNotFound for an unknown key, ErrInvalidArgument
// for a wrong type or a value out of range).
func (o *Options) SetInt(key string, v int64) error {
	return o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_set_int(o.ptr, k, C.int64_t(v)) })
}

// SetFloat sets a float option.
func (o *Options) SetFloat(key string, v float64) error {
	return o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_set_float(o.ptr, k, C.double(v)) })
}

// SetString sets a string option.
func (o *Options) SetString(key, v string) error {
	cv := C.CString(v)
	defer C.free(unsafe.Pointer(cv))
	return o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_set_string(o.ptr, k, cv) })
}

// SetText sets any option from text ("512", "0.8", "f16"), converted to its type.
func (o *Options) SetText(key, v string) error {
	cv := C.CString(v)
	defer C.free(unsafe.Pointer(cv))
	return o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_set_from_text(o.ptr, k, cv) })
}

// Int reads an integer option.
func (o *Options) Int(key string) (int64, error) {
	var v C.int64_t
	err := o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_get_int(o.ptr, k, &v) })
	return int64(v), err
}

// Float reads a float option.
func (o *Options) Float(key string) (float64, error) {
	var v C.double
	err := o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_get_float(o.ptr, k, &v) })
	return float64(v), err
}

// String reads a string option.
func (o *Options) String(key string) (string, error) {
	var v *C.char
	err := o.with(key, func(k *C.char) C.ikllm_status { return C.ikllm_options_get_string(o.ptr, k, &v) })
	if err != nil {
		return "", err
	}
	return C.GoString(v), nil
}
