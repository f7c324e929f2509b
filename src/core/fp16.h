// Exact half / bfloat16 <-> float conversions (docs: quant-formats.md §4).
#pragma once
#include <cstdint>
#include <cstring>

namespace ikllm {

inline float bits_to_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t f32_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

// IEEE binary16 -> binary32, exact (subnormals, inf; NaN keeps payload, quiet bit set).
inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0));
    if (exp == 0) {
        if (mant == 0) return bits_to_f32(sign);
        int e = -1;  // normalise the subnormal
        do { mant <<= 1; ++e; } while (!(mant & 0x400u));
        return bits_to_f32(sign | (uint32_t)(112 - e) << 23 | (mant & 0x3ffu) << 13);
    }
    return bits_to_f32(sign | (exp + 112) << 23 | mant << 13);
}

// binary32 -> binary16, round to nearest even, subnormals produced, overflow -> inf.
inline uint16_t f32_to_f16(float f) {
    const uint32_t x = f32_to_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7c00u | ((ax & 0x7fffffu) >> 13) | 0x200u);
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520 -> inf
    if (ax < 0x38800000u) {                                    // result is subnormal or zero
        // value * 2^24 rounded to nearest even integer = subnormal mantissa
        const float scaled = bits_to_f32(ax) * 16777216.0f;    // exact (power of two)
        // round-half-even via the float adder trick on the magnitude
        float r = scaled + 12582912.0f;  // 1.5 * 2^23
        uint32_t m = f32_to_bits(r) - f32_to_bits(12582912.0f);
        return (uint16_t)(sign | m);
    }
    const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32((uint32_t)h << 16); }

// Reference "ref" conversion: round to nearest even, NaN keeps quiet.
inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace ikllm
