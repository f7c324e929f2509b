// Device side of the activation rounding (act_round.cuh): one warp rounds 256 values of a row.
// Shared by the stand-alone rounding kernel (matmul.cu) and rms_norm when it rounds its output
// for the product that follows (ops_basic.cu, the executor's norm + rounding fusion), so both
// write the same values, codes and scales.
#pragma once
#include <cuda_fp16.h>

#include "act_round.cuh"

namespace ikllm::cuda {

__device__ inline float act_f16_round(float v, bool r) { return r ? __half2float(__float2half_rn(v)) : v; }

// Values [256 seg, 256 seg + 256) of a row of K values, by one whole warp, each lane holding
// its 8 values v (positions k0 = 256 seg + 8 lane ...; 0 past K; already f16-rounded where the
// product wants that). Scales reduced over 4 lanes for blocks of 32, the warp for 256: the
// rounded floats to y, and with q / d32 the int8 codes (K a multiple of 32) and one scale per
// 32 values. y, q and d32 point at this row's outputs.
__device__ inline void act_round_values(const float (&v)[8], int64_t K, int64_t seg, int mode, float* y, int8_t* q,
                                        float* d32) {
    const int lane = threadIdx.x % 32;
    const int64_t k0 = seg * 256 + lane * 8;
    float amax = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = fmaxf(amax, fabsf(v[e]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    if (mode == act_round_q8_256) {
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 8));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 16));
    }
    if (mode == act_round_none) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
            if (k0 + e < K) y[k0 + e] = v[e];
        return;
    }
    float d, id;
    act_scale(mode, amax, &d, &id);
    float c[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        c[e] = act_code(v[e], id);
        if (k0 + e < K) y[k0 + e] = c[e] * d;
    }
    if (q && k0 < K) {  // K is a multiple of 32: all 8 values of this lane are in the row
        uint32_t w[2] = {0, 0};
#pragma unroll
        for (int e = 0; e < 8; ++e) w[e / 4] |= (uint32_t)(uint8_t)(int8_t)(int)c[e] << 8 * (e % 4);
        *reinterpret_cast<uint2*>(q + k0) = make_uint2(w[0], w[1]);
        if (lane % 4 == 0) d32[k0 / 32] = d;
    }
}

// The same reading the values from row x.
__device__ inline void act_round_segment(const float* x, int64_t K, int64_t seg, int mode, bool f16, float* y,
                                         int8_t* q, float* d32) {
    const int64_t k0 = seg * 256 + (threadIdx.x % 32) * 8;
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = k0 + e < K ? act_f16_round(x[k0 + e], f16) : 0.f;
    act_round_values(v, K, seg, mode, y, q, d32);
}

// Where a rounded copy goes: rows [T][K] of floats, and with codes [T][K] int8 plus [T][K / 32]
// scales (MatArgs::xq / xq_d). x null: no rounding.
struct ActRoundOut {
    int mode = act_round_none;
    bool f16 = false;
    float* x = nullptr;
    int8_t* q = nullptr;
    float* d = nullptr;
};

}  // namespace ikllm::cuda
