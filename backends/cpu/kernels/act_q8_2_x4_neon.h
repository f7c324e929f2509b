// NEON encoder of Q8_2_X4 activations (quant-formats.md §15), byte-identical to the reference
// encoder quant::act_q8_2_x4_encode_row: d = bf16(amax / 127) (RNE; NaN inputs ignored by the
// maximum), id = 1 / d, codes RNE(x * id) saturated to int8, where x86's conversion gives -128
// for NaN and |v| >= 2^31 (the reference follows it), int16 code sums.
// Anonymous namespace: included by the NEON kernel files only.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

inline int8x8_t q82_codes8(float32x4_t a, float32x4_t b, float32x4_t id) {
    const float32x4_t lim = vdupq_n_f32(2147483648.0f);
    const int32x4_t x86_invalid = vdupq_n_s32(INT32_MIN);
    const float32x4_t va = vmulq_f32(a, id), vb = vmulq_f32(b, id);
    // |v| < 2^31 (false for NaN): the rounded value, else x86's "integer indefinite".
    const int32x4_t ia = vbslq_s32(vcaltq_f32(va, lim), vcvtnq_s32_f32(va), x86_invalid);
    const int32x4_t ib = vbslq_s32(vcaltq_f32(vb, lim), vcvtnq_s32_f32(vb), x86_invalid);
    return vqmovn_s16(vcombine_s16(vqmovn_s32(ia), vqmovn_s32(ib)));
}

inline void q82_encode_block_neon(const float* x, uint8_t* dptr, uint8_t* sptr, int8_t* q) {
    float32x4_t v[8];
    for (int k = 0; k < 8; ++k) v[k] = vld1q_f32(x + 4 * k);
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < 8; ++k) m = vmaxnmq_f32(m, vabsq_f32(v[k]));  // maxNum: NaN ignored
    const uint16_t dbits = f32_to_bf16(vmaxnmvq_f32(m) / 127.0f);
    const float d = bf16_to_f32(dbits);
    const float32x4_t id = vdupq_n_f32(d > 0.0f ? 1.0f / d : 0.0f);
    const int8x16_t lo = vcombine_s8(q82_codes8(v[0], v[1], id), q82_codes8(v[2], v[3], id));
    const int8x16_t hi = vcombine_s8(q82_codes8(v[4], v[5], id), q82_codes8(v[6], v[7], id));
    vst1q_s8(q, lo);
    vst1q_s8(q + 16, hi);
    const int16_t sum = (int16_t)(vaddlvq_s8(lo) + vaddlvq_s8(hi));
    std::memcpy(dptr, &dbits, 2);
    std::memcpy(sptr, &sum, 2);
}

inline void encode_q8_2_x4_neon(const float* x, uint8_t* out, int64_t ne0) {
    quant::act_q8_2_x4_for_blocks(x, out, ne0, [](const float* xb, uint8_t* d, uint8_t* sum, int8_t* q) {
        q82_encode_block_neon(xb, d, sum, q);
    });
}

// This file's Q8_2_X4 activation format object (same id and bytes as act_format_q8_2_x4()).
inline const ActFormat* neon_act_q8_2_x4() {
    static const ActFormat f{quant::T_Q8_2_X4, act_format_q8_2_x4()->row_bytes, encode_q8_2_x4_neon};
    return &f;
}

}  // namespace
}  // namespace ikllm::cpu
#endif
