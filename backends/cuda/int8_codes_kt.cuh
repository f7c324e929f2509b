// Integer views (int8_codes.cuh) of the trellis types IQ1_KT..IQ4_KT: the generated integers
// (|v| <= 126) as codes, the sub-block scale d * s per 32 weights. Their reference matmul
// (CPU: trellis_kt.h, trellis_scalar.cpp) multiplies that scale by 1.05 (IQ2_KT) or 1.01
// (IQ3_KT), a factor the dequantization does not have (matmul_scale), and in calls of 32 tokens or
// more multiplies the rows as Q8_0_R8: that scale rounded to fp16 (kBatchF16Scale), the sums in
// the symmetric types' batch order (kSymBatch). Products are exact integer sums per 32.
#pragma once
#include "int8_codes.cuh"

namespace ikllm::cuda {

template <uint32_t TYPE, int kFactorPercent>
struct KtCodes : Int8Plain {
    using D = BlockDecoder<TYPE>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kSymBatch = true, kBatchF16Scale = true;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        int v[8];
        D::values(row, ib, chunk, scale, v);
        lo = hi = 0;
IKLLM_UNROLL
        for (int i = 0; i < 4; ++i) {
            lo |= (uint32_t)(uint8_t)(int8_t)v[i] << 8 * i;
            hi |= (uint32_t)(uint8_t)(int8_t)v[4 + i] << 8 * i;
        }
        bias = 0.f;
    }
    IKLLM_HD static float matmul_scale(float s) {
        if constexpr (kFactorPercent == 100) return s;
        else return bd::fmul(s, kFactorPercent / 100.0f);
    }
};

template <>
struct Int8Codes<quant::T_IQ1_KT> : KtCodes<quant::T_IQ1_KT, kt_factor_percent(quant::T_IQ1_KT)> {};
template <>
struct Int8Codes<quant::T_IQ2_KT> : KtCodes<quant::T_IQ2_KT, kt_factor_percent(quant::T_IQ2_KT)> {};
template <>
struct Int8Codes<quant::T_IQ3_KT> : KtCodes<quant::T_IQ3_KT, kt_factor_percent(quant::T_IQ3_KT)> {};
template <>
struct Int8Codes<quant::T_IQ4_KT> : KtCodes<quant::T_IQ4_KT, 100> {};

}  // namespace ikllm::cuda

#define IKLLM_I8_KT_TYPES(X) X(T_IQ1_KT) X(T_IQ2_KT) X(T_IQ3_KT) X(T_IQ4_KT)
