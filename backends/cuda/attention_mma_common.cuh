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

}  // namespace ikllm::cuda::attn
