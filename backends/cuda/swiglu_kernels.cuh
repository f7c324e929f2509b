// The SwiGLU kernels of the gate/up products (ops_weights.cu), in a header of their own so that
// tests/cuda/cuda_fused_kernels_emu_test.cpp runs them on the host (tests/cuda/emu_cuda.h).
// Included by one translation unit each: internal linkage.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "act_round_kernel.cuh"

namespace ikllm::cuda {

namespace {

__device__ inline float silu(float g) { return g / (1.0f + expf(-g)); }

// y[t][n] = silu(g[t][n]) * u[t][n]; g, u contiguous [T][N]; optionally rounded to f16.
__global__ void swiglu_rows_kernel(const float* g, const float* u, int64_t N, int64_t T, float* y, size_t y_t,
                                   bool round_f16) {
    IKLLM_KERNEL_ENTRY();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * T) return;
    const int64_t t = i / N, n = i % N;
    float v = silu(g[i]) * u[i];
    if (round_f16) v = __half2float(__float2half_rn(v));
    reinterpret_cast<float*>(reinterpret_cast<char*>(y) + t * y_t)[n] = v;
}

// The same values (round_f16 off) by one warp per 256 of a row, written to y and rounded for
// the product that reads them next (act_round_values: the executor's fusion).
__global__ void swiglu_round_kernel(const float* g, const float* u, int64_t N, int64_t T, float* y, size_t y_t,
                                    ActRoundOut ro) {
    IKLLM_KERNEL_ENTRY();
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t per_row = (N + 255) / 256;
    const int64_t t = warp / per_row, seg = warp % per_row;
    if (t >= T) return;  // (whole warps)
    const int64_t k0 = seg * 256 + (threadIdx.x % 32) * 8;
    float* yr = reinterpret_cast<float*>(reinterpret_cast<char*>(y) + t * y_t);
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        v[e] = 0.f;
        if (k0 + e < N) {
            const int64_t i = t * N + k0 + e;
            const float w = silu(g[i]) * u[i];
            yr[k0 + e] = w;
            v[e] = act_f16_round(w, ro.f16);
        }
    }
    act_round_values(v, N, seg, ro.mode, ro.x + t * N, ro.q ? ro.q + t * N : nullptr, ro.d ? ro.d + t * (N / 32) : nullptr);
}

}  // namespace

}  // namespace ikllm::cuda
