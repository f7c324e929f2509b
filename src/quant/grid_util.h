// Little-endian field readers and small helpers shared by the grid, trellis, ternary and
// interleaved format files (docs: quant-formats.md §1).
#pragma once
#include <cstdint>
#include <cstring>
#include "core/fp16.h"

namespace ikllm::quant {

static inline uint16_t rd_u16(const uint8_t* p) { return (uint16_t)(p[0] | (uint16_t)p[1] << 8); }
static inline uint32_t rd_u32(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline float rd_f16(const uint8_t* p) { return f16_to_f32(rd_u16(p)); }
static inline float rd_f32(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);  // little-endian host
    return f;
}
// bf16 bits -> float (exact); local copy so SIMD files need no external inline helpers.
static inline float rd_bf16(const uint8_t* p) {
    const uint32_t u = (uint32_t)rd_u16(p) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
static inline void wr_u16(uint8_t* p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void wr_u32(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void wr_f32(uint8_t* p, float f) { wr_u32(p, f32_to_bits(f)); }

// x negated iff neg (0/1), by flipping the sign bit (branch-free; -0 for x = 0 as negation gives).
static inline float neg_if(float x, uint32_t neg) { return bits_to_f32(f32_to_bits(x) ^ (neg << 31)); }

static inline int nib(uint8_t b, int h) { return h ? (b >> 4) : (b & 15); }
static inline int bit(uint32_t x, int k) { return (int)((x >> k) & 1u); }
static inline int bits(uint32_t x, int k, int n) { return (int)((x >> k) & ((1u << n) - 1u)); }

}  // namespace ikllm::quant
