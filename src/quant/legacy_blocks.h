// Byte layouts of the 32-weight block types (quant-formats.md §5), shared by legacy.cpp and
// the legacy CPU kernels: sizes, field offsets, value tables, and one-block code decoders.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/fp16.h"

namespace ikllm::quant::legacy {

inline constexpr int kQ4_0Bytes = 18, kQ4_1Bytes = 20, kQ5_0Bytes = 22, kQ5_1Bytes = 24;
inline constexpr int kQ8_0Bytes = 34, kQ6_0Bytes = 26, kIq4NlBytes = 18, kMxfp4Bytes = 17;
inline constexpr int kQ1_0G128Bytes = 18;

// Table kvalues_iq4nl (§5.7) and kvalues_mxfp4 (§5.8, doubled E2M1 values).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

inline uint16_t rd16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t rd32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline float rdf16(const uint8_t* p) { return f16_to_f32(rd16(p)); }

// MXFP4 scale 2^(e-128) as float32 for every e (e <= 1 gives a subnormal).
inline float e8m0_half(uint8_t e) {
    return e >= 2 ? bits_to_f32((uint32_t)(e - 1) << 23) : bits_to_f32(0x00200000u << e);
}

// Codes of one block in output order. Unsigned types give the raw code (0..2^b-1).
inline void q4_codes(const uint8_t* qs, uint8_t* q) {  // NL4 layout
    for (int j = 0; j < 16; ++j) {
        q[j] = qs[j] & 15;
        q[j + 16] = qs[j] >> 4;
    }
}
inline void q5_codes(const uint8_t* qh4, const uint8_t* qs, uint8_t* q) {
    const uint32_t qh = rd32(qh4);
    q4_codes(qs, q);
    for (int w = 0; w < 32; ++w) q[w] |= (uint8_t)(((qh >> w) & 1) << 4);
}
inline void q6_codes(const uint8_t* qh, const uint8_t* qs, uint8_t* q) {
    q4_codes(qs, q);
    for (int w = 0; w < 32; ++w) {
        const int j = w & 15, h = w >> 4;
        q[w] |= (uint8_t)(((qh[j & 7] >> (4 * (j >> 3) + 2 * h)) & 3) << 4);
    }
}

}  // namespace ikllm::quant::legacy
