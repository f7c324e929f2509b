// Device helpers shared by the tensor-core attention kernels (attention_mma.cu: blocks of 64
// query rows; attention_mma16.cu: blocks of 16).
#pragma once
#include <cuda_fp16.h>

#include <cmath>

#include "attention_args.cuh"
#include "warp_reduce.cuh"

namespace ikllm::cuda::attn {

// Whether a token at position pos of sequence seq sees cell c, whose position is cp.
__device__ __forceinline__ bool sees(const AttnArgs& a, int32_t c, int32_t cp, int32_t pos, int32_t seq) {
    if (seq < 0 || seq >= 64 * a.seq_words || c >= a.n_cells || cp < 0 || cp > pos) return false;
    return (a.cell_seqs[(int64_t)c * a.seq_words + seq / 64] >> (seq % 64)) & 1ull;
}

// x as two f16 terms: hi = f16(x), lo = f16(x - hi) (together ~22 significant bits).
__device__ __forceinline__ void split_f16(float x, __half* hi, __half* lo) {
    const __half h = __float2half_rn(x);
    *hi = h;
    *lo = __float2half_rn(x - __half2float(h));
}

// One query row of d values (null: zeros) split into hi / lo f16 terms by a whole warp. Below
// 2^14 the values stay as they are; a row with larger ones is scaled into f16's range by a
// power of two first. Returns the row's score factor: scale times that power of two.
__device__ __forceinline__ float split_q_row(const float* q, int d, __half* hi, __half* lo, float scale) {
    const int lane = threadIdx.x % 32;
    float mx = 0.0f;
    for (int i = lane; i < d; i += 32) mx = fmaxf(mx, q ? fabsf(q[i]) : 0.0f);
    mx = warp_max(mx);
    int e = 0;
    if (mx >= 16384.0f && mx <= 3.0e38f) e = ilogbf(mx) - 13;
    const float down = ldexpf(1.0f, -e);
    for (int i = lane; i < d; i += 32) split_f16(q ? q[i] * down : 0.0f, hi + i, lo + i);
    return ldexpf(scale, e);
}

// One online-softmax step of a query row over a tile: this thread's N scores (-inf where the row
// does not see the cell), Group adjacent lanes (a power of two) holding the row's other cells.
// Updates the row's running max m and sum l, writes the thread's P values as hi / lo f16 terms
// and returns the factor that rescales the row's output. A row that has seen nothing yet keeps
// its state exactly (factor 1, P 0).
template <int N, int Group>
__device__ __forceinline__ float online_softmax(const float (&sv)[N], float& m, float& l, __half* ph, __half* pl) {
    float tmax = -INFINITY;
#pragma unroll
    for (int j = 0; j < N; ++j) tmax = fmaxf(tmax, sv[j]);
#pragma unroll
    for (int o = 1; o < Group; o *= 2) tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, o));
    const float m_new = fmaxf(m, tmax);
    const bool none = m_new == -INFINITY;
    const float resc = none ? 1.0f : expf(m - m_new);
    float psum = 0.0f;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        const float p = none || sv[j] == -INFINITY ? 0.0f : expf(sv[j] - m_new);
        psum += p;
        split_f16(p, ph + j, pl + j);
    }
#pragma unroll
    for (int o = 1; o < Group; o *= 2) psum += __shfl_xor_sync(0xffffffffu, psum, o);
    l = l * resc + psum;
    m = m_new;
    return resc;
}

}  // namespace ikllm::cuda::attn
