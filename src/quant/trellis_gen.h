// The trellis generator of IQ1_KT..IQ4_KT (docs: quant-formats.md §10.1): a code c seeds a
// linear congruential sequence whose masked byte sums give the weight values.
#pragma once
#include <cstdint>

namespace ikllm::quant {

constexpr uint32_t kKtMult = 0xCBAC1FEDu;
constexpr uint32_t kKtOffset = 4096u;
constexpr uint32_t kKtOffsetIq4Odd = 36864u;  // 4096 + 32768, IQ4_KT sub-blocks with odd scale word
constexpr uint32_t kKtMask = 0x3F3F3F3Fu;
constexpr int kKtBias = 126;

// Value of one generator step from state x (already multiplied): byte sum of x & mask - 126.
static inline int kt_value(uint32_t x) {
    const uint32_t t = x & kKtMask;
    return (int)((t * 0x01010101u) >> 24) - kKtBias;  // no carries: each partial sum <= 252
}

// v[0..G-1] for code c with the given offset.
static inline void kt_generate(uint32_t c, uint32_t offset, int G, int* v) {
    uint32_t x = c + offset;
    for (int j = 0; j < G; ++j) {
        x *= kKtMult;
        v[j] = kt_value(x);
    }
}

// kKtMult^(j+1) mod 2^32: lane j of a vectorised generator computes x0 * kt_mult_pow(j).
static constexpr uint32_t kt_mult_pow(int j) {
    uint32_t m = 1;
    for (int i = 0; i <= j; ++i) m *= kKtMult;
    return m;
}

}  // namespace ikllm::quant
