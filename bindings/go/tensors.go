package ikllm

// Model tensors (info, dequantization), KV-cache sizing and quantization.

/*
#include <stdlib.h>
#include "ikllm_gen.h"
extern int32_t ikllmGoQuantizeStep(void* user_data, char* tensor_name, int32_t from_type, int32_t to_type,
                                   uint64_t bytes_before, uint64_t bytes_after, char* note, float progress);
static ikllm_status ikllm_go_quantize(ikllm_lib* lib, const char* in, const char* out, const ikllm_options* o,
                                      uintptr_t handle, uint64_t* before, uint64_t* after) {
	return ikllm_quantize(lib, in, out, o, handle ? (ikllm_quantize_tensor_fn)ikllmGoQuantizeStep : NULL,
	                      (void*)handle, before, after);
}
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// TensorInfo describes one tensor of the model file.
type TensorInfo struct {
	Name  string
	Type  int32    // tensor type id; see TypeName
	Ne    [4]int64 // dimensions (unused ones are 1)
	Bytes uint64
}

// TypeName is the name of a tensor type id ("q4_K", "f16"); "" if unknown.
func TypeName(t int32) string {
	p := C.ikllm_type_name(C.int32_t(t))
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// KVBytesPerToken is the KV-cache size per token for a cache type ("f16", "q8_0", ...).
func (m *Model) KVBytesPerToken(kvType string) (uint64, error) {
	t := C.CString(kvType)
	defer C.free(unsafe.Pointer(t))
	defer runtime.KeepAlive(m)
	var out C.uint64_t
	err := call(func() C.ikllm_status { return C.ikllm_model_kv_bytes_per_token(m.ptr, t, &out) })
	return uint64(out), err
}

// Tensors lists every tensor of the model in file order.
func (m *Model) Tensors() ([]TensorInfo, error) {
	defer runtime.KeepAlive(m)
	n := int(C.ikllm_model_tensor_count(m.ptr))
	out := make([]TensorInfo, 0, n)
	for i := 0; i < n; i++ {
		var name *C.char
		var ty C.int32_t
		var ne [4]C.int64_t
		var bytes C.uint64_t
		if err := call(func() C.ikllm_status {
			return C.ikllm_model_tensor_info(m.ptr, C.int32_t(i), &name, &ty, &ne[0], &bytes)
		}); err != nil {
			return nil, err
		}
		out = append(out, TensorInfo{C.GoString(name), int32(ty),
			[4]int64{int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3])}, uint64(bytes)})
	}
	return out, nil
}

// TensorDequantize decodes a whole tensor to float32 (rows of Ne[0] values).
func (m *Model) TensorDequantize(name string) ([]float32, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	defer runtime.KeepAlive(m)
	var needed C.size_t
	err := call(func() C.ikllm_status {
		st := C.ikllm_model_tensor_dequantize(m.ptr, cn, nil, 0, &needed)
		if st == C.ikllm_status(ErrBufferTooSmall) {
			return C.ikllm_status(OK)
		}
		return st
	})
	if err != nil {
		return nil, err
	}
	out := make([]float32, int(needed)+1)
	err = call(func() C.ikllm_status {
		return C.ikllm_model_tensor_dequantize(m.ptr, cn, (*C.float)(unsafe.Pointer(&out[0])), needed, &needed)
	})
	return out[:int(needed)], err
}

// QuantizeStep is one converted (or planned) tensor, as Quantize reports it.
type QuantizeStep struct {
	Tensor                  string
	FromType, ToType        int32
	BytesBefore, BytesAfter uint64
	Note                    string
	Progress                float32
}

// Quantize converts the GGUF model at inPath into outPath (options of kind OptionsQuantize;
// nil = defaults). onTensor (may be nil) is called per tensor; returning false cancels and no
// output file is left. Returns the total bytes before and after.
func Quantize(lib *Library, inPath, outPath string, options *Options, onTensor func(QuantizeStep) bool) (before, after uint64, err error) {
	in, out := C.CString(inPath), C.CString(outPath)
	defer C.free(unsafe.Pointer(in))
	defer C.free(unsafe.Pointer(out))
	var h cgo.Handle
	if onTensor != nil {
		h = cgo.NewHandle(onTensor)
		defer h.Delete()
	}
	var b, a C.uint64_t
	err = call(func() C.ikllm_status {
		return C.ikllm_go_quantize(lib.ptr, in, out, options.raw(), C.uintptr_t(h), &b, &a)
	})
	runtime.KeepAlive(lib)
	runtime.KeepAlive(options)
	return uint64(b), uint64(a), err
}
