package ikllm

// Go functions the library calls back (log sink, load progress). A file with //export may only
// declare C functions, so the C glue calling these lives in library.go and model.go.

// #include <stdint.h>
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

//export ikllmGoLog
func ikllmGoLog(user unsafe.Pointer, level C.int32_t, message *C.char) {
	fn := cgo.Handle(uintptr(user)).Value().(LogFunc)
	fn(LogLevel(level), C.GoString(message))
}

//export ikllmGoProgress
func ikllmGoProgress(user unsafe.Pointer, progress C.float) C.int32_t {
	fn := cgo.Handle(uintptr(user)).Value().(func(float32) bool)
	if fn(float32(progress)) {
		return 0
	}
	return 1 // false cancels the load
}

//export ikllmGoQuantizeStep
func ikllmGoQuantizeStep(user unsafe.Pointer, name *C.char, from, to C.int32_t, before, after C.uint64_t,
	note *C.char, progress C.float) C.int32_t {
	fn := cgo.Handle(uintptr(user)).Value().(func(QuantizeStep) bool)
	if fn(QuantizeStep{C.GoString(name), int32(from), int32(to), uint64(before), uint64(after), C.GoString(note),
		float32(progress)}) {
		return 0
	}
	return 1 // false cancels
}
