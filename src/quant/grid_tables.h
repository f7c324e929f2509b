// Codebook tables of the grid i-quants (docs: quant-formats.md §9, §12.7-12.8, §14).
// uint64 entries hold 8 weights (byte j = weight j), uint32 entries 4 weights.
#pragma once
#include <cstdint>

#include "quant/grid_util.h"

namespace ikllm::quant {

extern const uint64_t kIq2xxsGrid[256];   // magnitudes {8,25,43}
extern const uint64_t kIq2xsGrid[512];    // magnitudes {8,25,43}
extern const uint64_t kIq2sGrid[1024];    // magnitudes {8,25,43}
extern const uint32_t kIq3xxsGrid[256];   // magnitudes {4,12,...,62}
extern const uint32_t kIq3sGrid[512];     // odd magnitudes 1..15
extern const uint64_t kIq1sGrid[2048];    // signed bytes in {-1,0,+1}
extern const uint8_t kKsignsIq2xs[128];   // 7-bit sign index -> 8-bit sign mask (bit 7 = parity)
extern const uint8_t kScrambledSign[128]; // 7-bit sign index -> prefix-XOR form used by the _R4 repacks
extern const uint64_t kKsigns64[128];     // byte-mask form of kKsignsIq2xs (0xff = negate)

// Byte j of a grid entry.
static inline uint8_t grid_byte(uint64_t g, int j) { return (uint8_t)(g >> (8 * j)); }
static inline int8_t grid_sbyte(uint64_t g, int j) { return (int8_t)(uint8_t)(g >> (8 * j)); }

// y[0..7] = +-(db * byte j), negated where bit j of `signs` is set (IQ2_XXS / XS / S decoders).
static inline void put8(float* y, float db, uint64_t grid, uint8_t signs) {
    for (int j = 0; j < 8; ++j) y[j] = neg_if(db * (float)grid_byte(grid, j), (signs >> j) & 1u);
}
// y[0..7] = dl * (signed byte j + delta) (IQ1_S / IQ1_M decoders).
static inline void put8_iq1(float* y, float dl, uint64_t g, float delta) {
    for (int j = 0; j < 8; ++j) y[j] = dl * ((float)grid_sbyte(g, j) + delta);
}

// 8-bit sign mask of a scrambled sign index tau (§12.1): equals kKsignsIq2xs[si].
static inline uint8_t unscramble_sign(uint8_t tau) { return (uint8_t)((tau ^ (tau << 1)) & 0xff); }

}  // namespace ikllm::quant
