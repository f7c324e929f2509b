// Exact ternary code book search (src/quant/grid_ternary.h), the inner loop of the IQ1_S / IQ1_M
// encoders: a best-first walk from the per-coordinate rounding. Held to an independent
// exhaustive scan of the book: the returned point's distance is the least one (up to float
// rounding of near-ties) and the returned error is that point's distance as the encoders define
// it. Inputs span the scales the encoders' scale search produces (|t| from ~0 to several units),
// zero importance weights, exact ties, and sparse books whose walks run long or give up.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "quant/grid_tables.h"
#include "quant/grid_ternary.h"

using ikllm::quant::TernaryBook;

namespace {

float wdist_ref(const float* t, const float* w, const int8_t* p) {
    float s = 0;
    for (int j = 0; j < 8; ++j) {
        const float e = t[j] - (float)p[j];
        s += w[j] * e * e;
    }
    return s;
}

float scan_min(const TernaryBook& b, const float* t, const float* w) {
    float m = INFINITY;
    for (uint32_t i = 0; i < b.size(); ++i) m = std::min(m, wdist_ref(t, w, b.point(i)));
    return m;
}

// Is t's own rounding (each coordinate to its cheapest value) a point of the book?
bool rounding_in_book(const TernaryBook& b, const float* t) {
    int8_t r[8];
    for (int j = 0; j < 8; ++j) r[j] = (int8_t)std::max(-1.0f, std::min(1.0f, std::nearbyint(t[j])));
    for (uint32_t i = 0; i < b.size(); ++i)
        if (std::memcmp(b.point(i), r, 8) == 0) return true;
    return false;
}

// Checks `trials` random queries; returns how many needed a walk (rounding not in the book).
int check_book(const TernaryBook& b, std::mt19937& rng, int trials) {
    std::uniform_real_distribution<float> scale(0.05f, 3.0f), uw(0.0f, 3.0f), coin(0.0f, 1.0f);
    int walked = 0;
    for (int trial = 0; trial < trials; ++trial) {
        std::normal_distribution<float> nd(0.0f, scale(rng));
        float t[8], w[8];
        for (int j = 0; j < 8; ++j) {
            t[j] = nd(rng);
            w[j] = coin(rng) < 0.1f ? 0.0f : uw(rng);
            if (coin(rng) < 0.05f) t[j] = 0.5f;  // exact tie between 0 and +1
        }
        walked += !rounding_in_book(b, t);
        float err = -1;
        const uint32_t i = b.nearest(t, w, &err);
        EXPECT_LT(i, b.size());
        if (i >= b.size()) return walked;
        const float mine = wdist_ref(t, w, b.point(i)), best = scan_min(b, t, w);
        EXPECT_EQ(err, mine) << "trial " << trial;
        EXPECT_LE(mine, best * (1 + 1e-5f) + 1e-6f) << "trial " << trial << ": not the nearest point";
    }
    return walked;
}

std::vector<uint64_t> random_ternary_grid(int n, std::mt19937& rng) {
    std::uniform_int_distribution<int> v(-1, 1);
    std::set<uint64_t> seen;
    std::vector<uint64_t> g;
    while ((int)g.size() < n) {
        uint64_t e = 0;
        for (int j = 0; j < 8; ++j) e |= (uint64_t)(uint8_t)(int8_t)v(rng) << (8 * j);
        if (seen.insert(e).second) g.push_back(e);
    }
    return g;
}

}  // namespace

TEST(QuantTernaryBook, Iq1GridSearchIsExact) {
    const TernaryBook book(ikllm::quant::kIq1sGrid, 2048);
    ASSERT_EQ(book.size(), 2048u);
    for (int j = 0; j < 8; ++j) EXPECT_GE(book.point(5)[j], -1);
    std::mt19937 rng(3);
    const int walked = check_book(book, rng, 20000);
    EXPECT_GT(walked, 2000) << "too few queries exercised the walk";
}

// Few entries: walks run long; with 24 of 6561 points some exceed the step limit and fall back
// to the scan. Both must still give the nearest point.
TEST(QuantTernaryBook, SparseBooksStayExact) {
    std::mt19937 rng(11);
    for (int n : {1, 24, 300}) {
        const std::vector<uint64_t> g = random_ternary_grid(n, rng);
        const TernaryBook book(g.data(), n);
        check_book(book, rng, 3000);
    }
}

// The error is the distance, including all-zero weights (every point ties at 0).
TEST(QuantTernaryBook, ZeroWeightsGiveZeroError) {
    const TernaryBook book(ikllm::quant::kIq1sGrid, 2048);
    const float t[8] = {0.3f, -2.0f, 5.0f, 0.0f, 0.5f, -0.5f, 1.0f, 7.0f}, w[8] = {};
    float err = -1;
    EXPECT_LT(book.nearest(t, w, &err), 2048u);
    EXPECT_EQ(err, 0.0f);
}
