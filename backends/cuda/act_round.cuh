// Activation rounding that mirrors the CPU backend (and the reference engine): before a
// product with quantized weights, activations are rounded to the 8-bit format the CPU kernels
// use for that weight type (quant-formats.md §15), so GPU and CPU results agree to float
// rounding instead of differing by the CPU's quantization error.
//   q8_32:  blocks of 32, d = bf16(amax/127), id = d > 0 ? 1/d : 0   (Q8_2_X4: legacy types,
//           Q4_K/Q5_K/Q6_K, IQ4_NL, MXFP4, the KT trellis types)
//   q8_256: blocks of 256, d = amax/127, id = amax > 0 ? 127/amax : 0 (Q8_K: Q2_K, Q3_K, IQ4_XS,
//           the IQ*_K / IQ*_KS family)
// Codes are round-half-to-even, saturated to [-127, 127]; the value used is code * d.
#pragma once
#include "device_branch.cuh"
#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/type_traits.h"

namespace ikllm::cuda {

enum ActRound : int { act_round_none = 0, act_round_q8_32 = 1, act_round_q8_256 = 2 };

// Row-interleaved K-quant and IQ*_K / IQ*_KS weights converted to their plain type for the GPU
// (Tensor::stored_type): the reference multiplies these interleaved forms as decoded weights
// times Q8_K (or Q8_K32: the same codes) activations in calls of every size -- none of its plain
// kernels' saturating pair sums or batch re-encodings -- so the GPU takes its exact integer
// products on 256-value activation blocks for them (MatArgs::exact).
inline bool exact_interleaved_form(uint32_t stored_type) {
    using namespace quant;
    switch (stored_type) {
        case T_Q2_K_R4: case T_Q3_K_R4: case T_Q4_K_R4: case T_Q5_K_R4: case T_Q6_K_R4: case T_IQ4_XS_R8:
        case T_IQ2_K_R4: case T_IQ3_K_R4: case T_IQ4_K_R4: case T_IQ5_K_R4: case T_IQ4_KS_R4: case T_IQ5_KS_R4:
            return true;
        default: return false;
    }
}

inline int act_round_for(uint32_t type) {
    using namespace quant;
    switch (type) {
        case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q6_0: case T_Q8_0: case T_IQ4_NL: case T_MXFP4:
        case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_IQ1_KT: case T_IQ2_KT: case T_IQ3_KT: case T_IQ4_KT:
        case T_Q1_0_G128:
            return act_round_q8_32;
        case T_Q2_K: case T_Q3_K: case T_IQ4_XS: case T_IQ2_K: case T_IQ3_K: case T_IQ4_K: case T_IQ5_K: case T_IQ6_K:
        case T_IQ2_KS: case T_IQ3_KS: case T_IQ4_KS: case T_IQ4_KSS: case T_IQ5_KS: case T_IQ2_KL:
            return act_round_q8_256;
        default: return act_round_none;
    }
}

// The rounding of a product whose weights have type `type`, multiplied exactly (MatArgs::exact).
inline int act_round_for(uint32_t type, bool exact) {
    const int mode = act_round_for(type);
    return exact && mode != act_round_none ? act_round_q8_256 : mode;
}

inline int act_round_block(int mode) { return mode == act_round_q8_256 ? 256 : 32; }

// float -> bf16 (round to nearest even; NaN kept) -> float.
__host__ __device__ inline float act_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return f;
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    float r;
    memcpy(&r, &u, 4);
    return r;
}

// Scale of a block with largest magnitude amax: *d the step, *id the multiplier for codes.
__host__ __device__ inline void act_scale(int mode, float amax, float* d, float* id) {
    if (mode == act_round_q8_32) {
        const float dd = act_bf16_round(amax / 127.0f);
        *d = dd;
        *id = dd > 0.0f ? 1.0f / dd : 0.0f;
    } else {
        *d = amax / 127.0f;
        *id = amax != 0.0f ? 127.0f / amax : 0.0f;
    }
}

// The code (an integer in [-127, 127], as a float) of x in a block with multiplier id.
__host__ __device__ inline float act_code(float x, float id) {
#if IKLLM_DEVICE_BRANCH
    float q = rintf(__fmul_rn(x, id));
#else
    float q = std::nearbyint(x * id);
#endif
    return q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
}

__host__ __device__ inline float act_code_value(float x, float d, float id) { return act_code(x, id) * d; }

// Host version for tests: rounds a row of n values (n a multiple of the block) in place.
inline void act_round_row_host(int mode, float* x, int64_t n) {
    if (mode == act_round_none) return;
    const int64_t B = act_round_block(mode);
    for (int64_t b0 = 0; b0 < n; b0 += B) {
        const int64_t e = b0 + B < n ? b0 + B : n;
        float amax = 0.0f;
        for (int64_t i = b0; i < e; ++i) amax = std::fabs(x[i]) > amax ? std::fabs(x[i]) : amax;
        float d, id;
        act_scale(mode, amax, &d, &id);
        for (int64_t i = b0; i < e; ++i) x[i] = act_code_value(x[i], d, id);
    }
}

}  // namespace ikllm::cuda
