// Kernel launches go through IKLLM_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...):
// with nvcc it is the <<<...>>> launch, or, when `stream` is a StreamRef asking for it, a
// launch with programmatic dependent launch (below); in the host emulation build of this backend
// (IKLLM_CUDA_EMULATION, tests/cuda/emu_runtime.cpp) it runs the kernel's threads as fibers on the
// calling thread, or records it into the stream's graph while the stream is being captured.
#pragma once
#include <cuda_runtime.h>

#include <utility>

namespace ikllm::cuda {

// Where an op's kernel goes: its stream, and whether it may start before the kernel ahead of it
// on that stream has finished (programmatic dependent launch, compute capability 9.0 on;
// OpEnv::pdl). Such a kernel must begin with IKLLM_KERNEL_ENTRY() (below): nothing before that
// point may read what an earlier kernel writes, nor write anything.
struct StreamRef {
    cudaStream_t stream = nullptr;
    bool pdl = false;
    StreamRef(cudaStream_t s = nullptr, bool p = false) : stream(s), pdl(p) {}  // NOLINT: a plain stream is a StreamRef
};

#if !defined(IKLLM_CUDA_EMULATION) && defined(__CUDACC__)
template <class... P>
struct PdlLauncher {
    dim3 grid, block;
    size_t shared;
    StreamRef on;
    void (*kernel)(P...);
    template <class... A>
    void operator()(A&&... args) const {
        if (!on.pdl) {
            kernel<<<grid, block, shared, on.stream>>>(std::forward<A>(args)...);
            return;
        }
        cudaLaunchAttribute attr[1] = {};
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = block;
        cfg.dynamicSmemBytes = shared;
        cfg.stream = on.stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        // (an error here is the runtime's last error too: IKLLM_CUDA_LAUNCHED reports it)
        (void)cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
    }
};
template <class... P>
PdlLauncher<P...> launcher(dim3 grid, dim3 block, size_t shared, StreamRef on, void (*kernel)(P...)) {
    return {grid, block, shared, on, kernel};
}
template <class... P>
PdlLauncher<P...> launcher(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, void (*kernel)(P...)) {
    return {grid, block, shared, StreamRef{stream, false}, kernel};
}
#endif

}  // namespace ikllm::cuda

#ifdef IKLLM_CUDA_EMULATION
#define IKLLM_LAUNCH(grid, block, shared_bytes, stream, ...) \
    ::emu::launcher((grid), (block), (shared_bytes), (stream), __VA_ARGS__)
#else
#define IKLLM_LAUNCH(grid, block, shared_bytes, stream, ...) \
    ::ikllm::cuda::launcher((grid), (block), (shared_bytes), (stream), __VA_ARGS__)
#endif

// The first statement of every kernel an op launches. Under programmatic dependent launch
// (StreamRef::pdl) the kernel's blocks may be resident before the kernel ahead of them has
// finished: griddepcontrol.wait holds each thread here until it has, with its writes visible
// (no cost without such a launch); griddepcontrol.launch_dependents then lets the next kernel's
// blocks start their own prologue (IKLLM_PREFETCH_L2 of weights) while this one runs. Every
// thread waits before anything else, so a kernel finishes only after the one ahead of it: the
// chain stays ordered for the ops (copies, events) that follow. Compute capability 9.0 on.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define IKLLM_KERNEL_ENTRY()                                   \
    do {                                                       \
        asm volatile("griddepcontrol.wait;\n" ::: "memory");   \
        asm volatile("griddepcontrol.launch_dependents;\n" ::); \
    } while (0)
// A hint: bring `bytes` bytes (a multiple of 16) at p (16-byte aligned) of global memory into L2.
#define IKLLM_PREFETCH_L2(p, bytes)                                                   \
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(__cvta_generic_to_global(p)), \
                 "r"((unsigned)(bytes))                                                \
                 : "memory")
#elif defined(IKLLM_CUDA_EMULATION)
#define IKLLM_KERNEL_ENTRY() ::emu::kernel_entry()
#define IKLLM_PREFETCH_L2(p, bytes) ::emu::prefetch_l2((p), (bytes))
#else
#define IKLLM_KERNEL_ENTRY() \
    do {                     \
    } while (0)
#define IKLLM_PREFETCH_L2(p, bytes) \
    do {                            \
    } while (0)
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
