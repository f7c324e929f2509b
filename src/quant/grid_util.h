// Little-endian field readers and small helpers shared by the grid, trellis, ternary and
// interleaved format files (docs: quant-formats.md §1).
#pragma once
#include <cstdint>
#include <cstring>
#include "core/fp16.h"
#include "quant/le_bytes.h"

namespace ikllm::quant {

// Weights per super-block of the 256-wide families.
inline constexpr int QK = 256;

static inline float rd_f16(const uint8_t* p) { return f16_to_f32(rd_u16(p)); }
// bf16 bits -> float (exact); local copy so SIMD files need no external inline helpers.
static inline float rd_bf16(const uint8_t* p) {
    const uint32_t u = (uint32_t)rd_u16(p) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// x negated iff neg (0/1), by flipping the sign bit (branch-free; -0 for x = 0 as negation gives).
static inline float neg_if(float x, uint32_t neg) { return bits_to_f32(f32_to_bits(x) ^ (neg << 31)); }

static inline int nib(uint8_t b, int h) { return h ? (b >> 4) : (b & 15); }
static inline int bit(uint32_t x, int k) { return (int)((x >> k) & 1u); }
static inline int bits(uint32_t x, int k, int n) { return (int)((x >> k) & ((1u << n) - 1u)); }

}  // namespace ikllm::quant
