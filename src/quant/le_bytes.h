// Little-endian field access on possibly unaligned bytes (every block format in
// docs: quant-formats.md stores its fields little-endian; the host is little-endian too).
// static: SIMD kernel files include this too, and their copies must not stand in for others.
#pragma once
#include <cstdint>
#include <cstring>

namespace ikllm::quant {

static inline uint16_t rd_u16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
static inline uint32_t rd_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
static inline float rd_f32(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }
static inline void wr_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
static inline void wr_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
static inline void wr_f32(uint8_t* p, float v) { std::memcpy(p, &v, 4); }

}  // namespace ikllm::quant
