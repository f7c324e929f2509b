// Lookups over the generated Unicode tables (binary search; ASCII and Latin-1 cached).
#include "tokenizer/unicode_data.h"

#include <algorithm>
#include <array>

namespace ikllm::tok {
namespace {

uint8_t flags_slow(uint32_t cp) {
    using namespace tables;
    if (cp > 0x10FFFF) return uint8_t(kControl);
    // Ranges are (start << 8 | flags); find the last start <= cp.
    const uint32_t key = (cp << 8) | 0xFF;
    const uint32_t* end = kFlagRanges + kFlagRanges_count;
    const uint32_t* it = std::upper_bound(kFlagRanges, end, key);
    return it == kFlagRanges ? uint8_t(kControl) : uint8_t(it[-1] & 0xFF);
}

// Binary search in a flat array of (key, value) pairs sorted by key.
uint32_t pair_lookup(const uint32_t* pairs, size_t n_words, uint32_t cp) {
    size_t lo = 0, hi = n_words / 2;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pairs[2 * mid] < cp) lo = mid + 1; else hi = mid;
    }
    return (lo < n_words / 2 && pairs[2 * lo] == cp) ? pairs[2 * lo + 1] : cp;
}

}  // namespace

uint8_t cpt_flags(uint32_t cp) {
    static const std::array<uint8_t, 256> latin = [] {
        std::array<uint8_t, 256> a{};
        for (uint32_t c = 0; c < 256; ++c) a[c] = flags_slow(c);
        return a;
    }();
    return cp < 256 ? latin[cp] : flags_slow(cp);
}

uint32_t cpt_to_lower(uint32_t cp) {
    if (cp < 128) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return pair_lookup(tables::kLowerPairs, tables::kLowerPairs_count, cp);
}

uint32_t cpt_nfd_base(uint32_t cp) {
    if (cp < 0xC0) return cp;
    return pair_lookup(tables::kNfdBasePairs, tables::kNfdBasePairs_count, cp);
}

int hangul_decompose(uint32_t cp, uint32_t out[3]) {
    // Unicode §3.12 conjoining jamo arithmetic.
    constexpr uint32_t S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7;
    constexpr uint32_t V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT, S_COUNT = 19 * N_COUNT;
    if (cp < S_BASE || cp >= S_BASE + S_COUNT) return 0;
    const uint32_t s = cp - S_BASE;
    out[0] = L_BASE + s / N_COUNT;
    out[1] = V_BASE + (s % N_COUNT) / T_COUNT;
    const uint32_t t = s % T_COUNT;
    if (t == 0) return 2;
    out[2] = T_BASE + t;
    return 3;
}

}  // namespace ikllm::tok
