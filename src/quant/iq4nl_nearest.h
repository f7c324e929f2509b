// Nearest IQ4_NL level to a value (the IQ4_NL encoder's inner step, 60 candidate scales x 32
// weights a block): index of the level of tables::kIq4nl closest to v, ties to the lower one.
// The levels are integers, so the interval [level lo, level lo + 1] holding v depends on
// floor(v) alone: one table load instead of a bisection's four unpredictable branches. Large
// values and NaN go where a bisection's comparisons put them (below -128: 0; else the top).
#pragma once
#include <cstdint>

#include "quant/quant_tables.h"

namespace ikllm::quant {

struct Iq4NlIntervals {
    uint8_t lo[256];  // lo[i]: how many of levels 1..14 are <= i - 128
    float level[16];  // the levels as floats (int8 -> float conversions in the loop cost a third)
    constexpr Iq4NlIntervals() : lo(), level() {
        for (int k = 0; k < 16; ++k) level[k] = tables::kIq4nl[k];
        for (int i = 0; i < 256; ++i) {
            int c = 0;
            for (int k = 1; k < 15; ++k) c += tables::kIq4nl[k] <= i - 128;
            lo[i] = (uint8_t)c;
        }
    }
};
inline constexpr Iq4NlIntervals kIq4NlIntervals{};

inline int iq4nl_nearest(float v) {
    int lo;
    if (v >= -128.0f && v < 128.0f) {
        int f = (int)v;  // floor without libm
        f -= (float)f > v;
        lo = kIq4NlIntervals.lo[f + 128];
    } else {
        lo = v < -128.0f ? 0 : 14;
    }
    const float a = kIq4NlIntervals.level[lo], b = kIq4NlIntervals.level[lo + 1];
    return lo + (int)!(v - a <= b - v);  // a flag, not a branch (to a predictor, a coin flip)
}

}  // namespace ikllm::quant
