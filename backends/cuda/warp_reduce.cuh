// Butterfly reductions over the 32 lanes of a warp: afterwards every lane holds op over all 32
// values, combined in the butterfly's order (lane l takes op(v_l, v_{l^o}) for o = 16, 8, 4, 2, 1),
// which fixes the floating-point result. The host emulation of this backend
// (IKLLM_CUDA_EMULATION, tests/cuda/emu_cuda.h) gives every lane all 32 values in one exchange and
// replays the same butterfly on them: one warp barrier instead of five, the same bits.
#pragma once
#include <cuda_runtime.h>

namespace ikllm::cuda {

struct WarpAdd {
    template <class T>
    __device__ T operator()(T a, T b) const { return a + b; }
};
struct WarpMax {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class T, class Op>
__device__ __forceinline__ T warp_allreduce(T v, Op op) {
#ifdef IKLLM_CUDA_EMULATION
    return ::emu::warp_butterfly(v, op);
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
#endif
}

template <class T>
__device__ __forceinline__ T warp_sum(T v) { return warp_allreduce(v, WarpAdd{}); }
__device__ __forceinline__ float warp_max(float v) { return warp_allreduce(v, WarpMax{}); }

}  // namespace ikllm::cuda
