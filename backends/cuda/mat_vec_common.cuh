// Device helpers shared by the matrix-vector kernels (matmul.cu: decode to float;
// mat_vec_int8.cu: int8 codes and dp4a): block geometry, operand addressing, and the epilogue
// in which a block's warps add their partial sums and write y.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "launch.cuh"
#include "matmul_kernels.cuh"
#include "warp_reduce.cuh"

namespace ikllm::cuda::mv {

constexpr int kVecWarps = 4;      // warps per block; they split the row length
constexpr int kVecMaxTokens = kMatVecMaxTokens;

using cuda::warp_sum;

// Weights of batch entry z (a routed expert's matrix when w_ids is set), or null: skip z.
__device__ inline const uint8_t* weights_of(const MatArgs& a, int64_t z) {
    if (!a.w_ids) return a.w + z * a.w_z;
    const int32_t e = a.w_ids[(z / a.ids_k) * a.ids_t + z % a.ids_k];
    return e >= 0 && e < a.w_count ? a.w + (int64_t)e * a.w_z : nullptr;
}

// The block's R weight rows (the last row repeated past N: loads stay in bounds).
template <int R>
__device__ inline void block_rows(const MatArgs& a, const uint8_t* wz, int64_t n0, const uint8_t* (&rows)[R]) {
#pragma unroll
    for (int r = 0; r < R; ++r) rows[r] = wz + min(n0 + r, a.N - 1) * a.w_row;
}

// Before the block waits for the kernel ahead (IKLLM_KERNEL_ENTRY, launch.cuh): with
// MatArgs::l2_prefetch its R weight rows (consecutive in memory) are asked into L2 by one bulk
// prefetch, so the wait overlaps their first trip from HBM. Only the 16-byte aligned inside of the
// range (the instruction's rule); not for routed or grouped experts, whose matrix an earlier kernel
// picks; once per row block (token tiles share the rows). A hint: it changes no result.
template <int R>
__device__ inline void prefetch_rows(const MatArgs& a) {
    if (!a.l2_prefetch || a.w_ids || a.grp || threadIdx.x != 0 || blockIdx.y != 0) return;
    const int64_t n0 = (int64_t)blockIdx.x * R;
    const int64_t rows = min((int64_t)R, a.N - n0);
    if (rows <= 0) return;
    const uintptr_t start = reinterpret_cast<uintptr_t>(a.w + blockIdx.z * a.w_z + n0 * a.w_row);
    const uintptr_t lo = (start + 15) & ~(uintptr_t)15, hi = (start + rows * a.w_row) & ~(uintptr_t)15;
    if (hi > lo) IKLLM_PREFETCH_L2(reinterpret_cast<const void*>(lo), hi - lo);
}

// Epilogue: every warp's partial sums meet in shared memory; y[n0 + r, t0 + i] for the nt
// valid tokens and the rows below N (+ bias; and y_res = y + res when set). Called by the whole block.
template <int R, int NT>
__device__ inline void reduce_store(const MatArgs& a, float (&acc)[R][NT], int64_t n0, int64_t t0, int64_t z, int nt) {
    IKLLM_SHARED(float, part, [kVecWarps][R * NT]);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < NT; ++i) {
            const float v = warp_sum(acc[r][i]);
            if (lane == 0) part[warp][r * NT + i] = v;
        }
    __syncthreads();
    if (threadIdx.x < R * NT) {
        const int r = threadIdx.x / NT, i = threadIdx.x % NT;
        float v = 0.f;
#pragma unroll
        for (int w = 0; w < kVecWarps; ++w) v += part[w][threadIdx.x];
        if (i < nt && n0 + r < a.N) {
            float* y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + z * a.y_z + (t0 + i) * a.y_t);
            const float out = v * a.y_scale + (a.bias ? a.bias[n0 + r] : 0.f);
            y[n0 + r] = out;
            if (a.y_res) {
                const float* res = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.res) + (t0 + i) * a.res_t);
                reinterpret_cast<float*>(reinterpret_cast<char*>(a.y_res) + (t0 + i) * a.y_res_t)[n0 + r] =
                    __fadd_rn(out, res[n0 + r]);
            }
        }
    }
}

}  // namespace ikllm::cuda::mv
