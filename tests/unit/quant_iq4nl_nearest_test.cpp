// The IQ4_NL encoder's nearest-level step (src/quant/iq4nl_nearest.h, a table lookup by
// floor(v)) against a bisection over the level table, the form it replaced (same index for every
// value: exact levels, midpoints, neighbours of both, values beyond the ends, infinities, NaN),
// and against the definition (no level strictly closer).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "quant/iq4nl_nearest.h"

using ikllm::quant::iq4nl_nearest;
using ikllm::quant::tables::kIq4nl;

namespace {

int bisection(float v) {
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        (v < (float)kIq4nl[mid] ? hi : lo) = mid;
    }
    return (v - (float)kIq4nl[lo] <= (float)kIq4nl[hi] - v) ? lo : hi;
}

}  // namespace

TEST(QuantIq4NlNearest, MatchesBisectionEverywhere) {
    std::vector<float> vals;
    for (int i = -200 * 64; i <= 200 * 64; ++i) vals.push_back((float)i / 64.0f);  // levels and midpoints
    for (int i = -130; i <= 130; ++i)
        for (float v : {(float)i, (float)i + 0.5f})
            vals.push_back(std::nextafter(v, -INFINITY)), vals.push_back(std::nextafter(v, INFINITY));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-300.0f, 300.0f);
    for (int i = 0; i < 100000; ++i) vals.push_back(u(rng));
    const float inf = std::numeric_limits<float>::infinity();
    for (float v : {-0.0f, inf, -inf, std::nanf(""), 1e30f, -1e30f, 127.99999f, -128.0f, 128.0f, -128.00002f})
        vals.push_back(v);
    for (float v : vals) {
        const int got = iq4nl_nearest(v);
        ASSERT_EQ(got, bisection(v)) << "v = " << v;
        if (std::isfinite(v)) {
            for (int k = 0; k < 16; ++k)
                ASSERT_LE(std::fabs((double)v - kIq4nl[got]), std::fabs((double)v - kIq4nl[k])) << "v = " << v;
        }
    }
}
