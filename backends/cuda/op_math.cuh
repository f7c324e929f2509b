// Per-element math of the CUDA non-matrix ops, written as __host__ __device__ functions so the
// host test (tests/cuda/cuda_op_math_host_test.cu) can compare them with the CPU backend's
// results without a GPU. Everything here reproduces backends/cpu/op_basic.cpp,
// src/quant/kv_codec.cpp and src/core/fp16.h bit for bit where the CPU is deterministic:
//  - float products and sums are written with the _rn intrinsics on the device so nvcc cannot
//    contract them into FMAs (the CPU's op_basic.cpp is compiled without FMA);
//  - exp/cos/sin are evaluated in double and rounded to float, which gives the correctly
//    rounded float result (what glibc's expf/cosf/sinf return in practically every case).
#pragma once
#include "device_branch.cuh"
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops.h"

namespace ikllm::cuda::math {

// ---- non-contracted float arithmetic -------------------------------------------------------
__host__ __device__ inline float mul_rn(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
__host__ __device__ inline float add_rn(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
__host__ __device__ inline float sub_rn(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
__host__ __device__ inline float div_rn(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// float exp / cos / sin via double, rounded once to float.
__host__ __device__ inline float exp_f(float x) { return (float)exp((double)x); }
__host__ __device__ inline float cos_f(float x) { return (float)cos((double)x); }
__host__ __device__ inline float sin_f(float x) { return (float)sin((double)x); }

// ---- bit casts ------------------------------------------------------------------------------
__host__ __device__ inline uint32_t f2u(float f) {
#if IKLLM_DEVICE_BRANCH
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}
__host__ __device__ inline float u2f(uint32_t u) {
#if IKLLM_DEVICE_BRANCH
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

// ---- half / bfloat16 (same algorithms as src/core/fp16.h) -----------------------------------
__host__ __device__ inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return u2f(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u));
    if (exp == 0) {
        if (mant == 0) return u2f(sign);
        int e = -1;
        do {
            mant <<= 1;
            ++e;
        } while (!(mant & 0x400u));
        return u2f(sign | (uint32_t)(112 - e) << 23 | (mant & 0x3ffu) << 13);
    }
    return u2f(sign | (exp + 112u) << 23 | mant << 13);
}

// Round to nearest even, subnormals produced, overflow -> inf, NaN stays quiet.
__host__ __device__ inline uint16_t f32_to_f16(float f) {
    const uint32_t x = f2u(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7c00u | ((ax & 0x7fffffu) >> 13) | 0x200u);
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        // |f| * 2^24 (exact) rounded to nearest even integer = the subnormal mantissa
        const float scaled = mul_rn(u2f(ax), 16777216.0f);
        const float r = add_rn(scaled, 12582912.0f);  // 1.5 * 2^23
        const uint32_t m = f2u(r) - f2u(12582912.0f);
        return (uint16_t)(sign | m);
    }
    const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

__host__ __device__ inline float bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

__host__ __device__ inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// ---- q8_0 (blocks of 32 values: fp16 scale + 32 int8 codes, 34 bytes) -----------------------
// Encodes one block exactly like quant::kv_encode_row: d = amax/127, codes = rint(x * 127/amax).
__host__ __device__ inline void q8_0_encode_block(const float* x, uint8_t* out) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = fmaxf(amax, fabsf(x[i]));
    const float d = div_rn(amax, 127.0f);
    const float id = amax != 0.0f ? div_rn(127.0f, amax) : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    out[0] = (uint8_t)(dh & 0xffu);
    out[1] = (uint8_t)(dh >> 8);
    for (int i = 0; i < 32; ++i) {
        const float r = rintf(mul_rn(x[i], id));  // round half to even (nearbyint in the default mode)
        out[2 + i] = (uint8_t)(int8_t)(int)r;
    }
}

__host__ __device__ inline float q8_0_decode(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e >> 5) * 34;
    const uint16_t dh = (uint16_t)(blk[0] | ((uint16_t)blk[1] << 8));
    return mul_rn(f16_to_f32(dh), (float)(int8_t)blk[2 + (e & 31)]);
}

// ---- RoPE -----------------------------------------------------------------------------------
// The per-op constants, computed on the host with exactly the CPU's expressions
// (cpu::rope_cache): theta_scale, the YaRN ramp bounds and the magnitude.
struct RopeConsts {
    int32_t n_dims = 0;
    int32_t half = 0;
    int32_t neox = 0;
    float theta_scale = 1.0f;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;
    float low = 0.0f;
    float high = 0.0f;
    float mag = 1.0f;  // attn_factor, times the YaRN mscale when ext_factor != 0
};

inline RopeConsts rope_consts(const RopeParams& p) {
    RopeConsts c;
    c.n_dims = p.n_dims;
    c.half = p.n_dims / 2;
    c.neox = p.mode == RopeMode::neox ? 1 : 0;
    c.theta_scale = std::pow(p.freq_base, -2.0f / (float)p.n_dims);
    c.freq_scale = p.freq_scale;
    c.ext_factor = p.ext_factor;
    c.mag = p.attn_factor;
    if (p.ext_factor != 0.0f) {
        auto corr_dim = [&](float beta) {
            return (float)p.n_dims * std::log((float)p.n_ctx_orig / (beta * 2.0f * (float)3.14159265358979323846)) /
                   (2.0f * std::log(p.freq_base));
        };
        c.low = std::fmax(0.0f, std::floor(corr_dim(p.beta_fast)));
        c.high = std::fmin((float)p.n_dims - 1, std::ceil(corr_dim(p.beta_slow)));
        c.mag *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    return c;
}

// theta_j for j = 0..half-1 by the CPU's float recurrence theta_{j+1} = theta_j * theta_scale.
__host__ __device__ inline void rope_thetas(float pos, const RopeConsts& c, float* theta) {
    float th = pos;
    for (int32_t j = 0; j < c.half; ++j) {
        theta[j] = th;
        th = mul_rn(th, c.theta_scale);
    }
}

// theta_j alone: the same j multiplications as rope_thetas, so bit-identical to its entry j
// (lets every thread of a kernel compute its own pair's angle; j <= half is small).
__host__ __device__ inline float rope_theta(float pos, const RopeConsts& c, int32_t j) {
    float th = pos;
    for (int32_t i = 0; i < j; ++i) th = mul_rn(th, c.theta_scale);
    return th;
}

// cos/sin (magnitude folded in) of pair j given its recurrence angle theta_j.
__host__ __device__ inline void rope_cos_sin(float theta, int32_t j, float ff, const RopeConsts& c, float* co,
                                             float* si) {
    const float theta_extrap = div_rn(theta, ff);
    const float theta_interp = mul_rn(c.freq_scale, theta_extrap);
    float th = theta_interp;
    if (c.ext_factor != 0.0f) {
        const float y = div_rn(sub_rn((float)j, c.low), fmaxf(0.001f, sub_rn(c.high, c.low)));
        const float ramp = sub_rn(1.0f, fminf(1.0f, fmaxf(0.0f, y)));
        const float mix = mul_rn(ramp, c.ext_factor);
        th = add_rn(mul_rn(theta_interp, sub_rn(1.0f, mix)), mul_rn(theta_extrap, mix));
    }
    *co = mul_rn(cos_f(th), c.mag);
    *si = mul_rn(sin_f(th), c.mag);
}

// Rotates pair (a, b) in place.
__host__ __device__ inline void rope_rotate(float& a, float& b, float co, float si) {
    const float a0 = a, b0 = b;
    a = sub_rn(mul_rn(a0, co), mul_rn(b0, si));
    b = add_rn(mul_rn(a0, si), mul_rn(b0, co));
}

// Element indices of pair j.
__host__ __device__ inline void rope_pair(const RopeConsts& c, int32_t j, int32_t* i0, int32_t* i1) {
    if (c.neox) {
        *i0 = j;
        *i1 = j + c.half;
    } else {
        *i0 = 2 * j;
        *i1 = 2 * j + 1;
    }
}

// ---- SwiGLU / sigmoid -----------------------------------------------------------------------
__host__ __device__ inline float silu_mul(float g, float u) {
    return mul_rn(div_rn(g, add_rn(1.0f, exp_f(-g))), u);
}
__host__ __device__ inline float sigmoid(float z) { return div_rn(1.0f, add_rn(1.0f, exp_f(-z))); }

}  // namespace ikllm::cuda::math
