// Kernel launches go through IKLLM_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...):
// with nvcc it is the <<<...>>> launch; in the host emulation build of this backend
// (IKLLM_CUDA_EMULATION, tests/cuda/emu_runtime.cpp) it runs the kernel's threads as fibers on the
// calling thread, or records it into the stream's graph while the stream is being captured.
#pragma once

#ifdef IKLLM_CUDA_EMULATION
#define IKLLM_LAUNCH(grid, block, shared_bytes, stream, ...) \
    ::emu::launcher((grid), (block), (shared_bytes), (stream), __VA_ARGS__)
#else
#define IKLLM_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#endif

// A kernel's dynamic shared memory (the launch's shared_bytes), 16-byte aligned.
#ifndef IKLLM_DYN_SHARED  // (the host emulation maps it to its per-launch buffer)
#define IKLLM_DYN_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

// A kernel's static shared memory: IKLLM_SHARED(type, name, dims) declares `__shared__ type name dims`,
// IKLLM_SHARED_ALIGNED(n, type, name, dims) the same n-byte aligned. (The host emulation gives each
// declaration a host array of its own, which a test schedule fills with garbage as each block starts:
// the device leaves shared memory undefined; tests/cuda/emu_cuda.h.)
#ifndef IKLLM_SHARED
#define IKLLM_SHARED(type, name, dims) __shared__ type name dims
#define IKLLM_SHARED_ALIGNED(n, type, name, dims) __shared__ __align__(n) type name dims
#endif
