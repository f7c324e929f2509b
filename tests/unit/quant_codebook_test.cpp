// Code book nearest-neighbour search (src/quant/grid_codebook.h), the inner loop of the trellis
// and grid encoders, which computes four distances at a time (each lane in the scalar order).
// Held to an independent scalar search: exhaustive with one cluster (the same index and error
// bits); with clusters, a point of the book whose returned error is its exact distance and which
// is close to the exhaustive optimum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/grid_codebook.h"

using ikllm::quant::Codebook;

namespace {

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// The distance as the encoders define it: sum_j w_j (t_j - p_j)^2, summed in order j.
float wdist_ref(const float* t, const float* w, const int8_t* p, int G) {
    float s = 0;
    for (int j = 0; j < G; ++j) {
        const float e = t[j] - (float)p[j];
        s += w[j] * e * e;
    }
    return s;
}

std::vector<int8_t> random_points(int G, int n, std::mt19937& rng) {
    std::uniform_int_distribution<int> v(-126, 126);
    std::vector<int8_t> pts((size_t)G * n);
    for (auto& x : pts) x = (int8_t)v(rng);
    // duplicates: ties must go to the smaller index
    for (int i = 0; i + 7 < n; i += 7) std::memcpy(&pts[(size_t)(i + 3) * G], &pts[(size_t)i * G], (size_t)G);
    return pts;
}

}  // namespace

// One cluster: the search is exhaustive, so it must return the first point of least distance
// and that distance, bit for bit, for every group size (4 and 8 take the four-lane search, 6 the
// generic one) and for book sizes that leave the last group of lanes partly empty.
TEST(QuantCodebook, ExhaustiveSearchIsTheScalarArgmin) {
    std::mt19937 rng(17);
    std::normal_distribution<float> nd(0.0f, 40.0f);
    std::uniform_real_distribution<float> uw(0.0f, 3.0f);
    for (int G : {4, 6, 8}) {
        for (int n : {1, 5, 258, 1001}) {
            const std::vector<int8_t> pts = random_points(G, n, rng);
            for (int lanes : {4, 0}) {  // four at a time, and the CPU's widest
            const Codebook book(G, pts, 1, 1, lanes);
            ASSERT_EQ(book.size(), (uint32_t)n);
            for (int trial = 0; trial < 300; ++trial) {
                float t[8], w[8];
                for (int j = 0; j < G; ++j) {
                    t[j] = trial % 5 == 0 ? (float)pts[(size_t)(trial % n) * G + j] : nd(rng);  // exact hits too
                    w[j] = trial % 7 == 0 ? 1.0f : uw(rng);
                }
                float best = INFINITY;
                uint32_t bi = 0;
                for (int i = 0; i < n; ++i) {
                    const float d = wdist_ref(t, w, &pts[(size_t)i * G], G);
                    if (d < best) {
                        best = d;
                        bi = (uint32_t)i;
                    }
                }
                float err = -1;
                const uint32_t got = book.nearest(t, w, &err);
                ASSERT_EQ(got, bi) << "G=" << G << " n=" << n << " trial " << trial;
                ASSERT_EQ(f32_bits(err), f32_bits(best)) << "G=" << G << " n=" << n << " lanes " << book.lanes() << " trial " << trial;
            }
            }
        }
    }
}

// The clustered search at the CPU's widest lanes (8 with AVX2) gives the four-lane search's
// index and error bits: same probed clusters, same candidates in the same order. Random
// importance weights, exact hits, and cluster sizes that leave last lane groups part-empty.
TEST(QuantCodebook, EveryLaneWidthGivesTheSameResults) {
    std::mt19937 rng(29);
    std::normal_distribution<float> nd(0.0f, 40.0f);
    std::uniform_real_distribution<float> uw(0.0f, 3.0f);
    for (int G : {4, 8}) {
        for (int n : {300, 4097}) {
            const std::vector<int8_t> pts = random_points(G, n, rng);
            const Codebook narrow(G, pts, 61, 4, 4), wide(G, pts, 61, 4, 0);
            if (wide.lanes() == 4) GTEST_SKIP() << "this CPU has no wider search than four lanes";
            for (int trial = 0; trial < 2000; ++trial) {
                float t[8], w[8];
                for (int j = 0; j < G; ++j) {
                    t[j] = trial % 9 == 0 ? (float)pts[(size_t)(trial % n) * G + j] : nd(rng);
                    w[j] = uw(rng);
                }
                float e4 = -1, ew = -2;
                const uint32_t i4 = narrow.nearest(t, w, &e4), iw = wide.nearest(t, w, &ew);
                ASSERT_EQ(iw, i4) << "G=" << G << " n=" << n << " trial " << trial;
                ASSERT_EQ(f32_bits(ew), f32_bits(e4)) << "G=" << G << " n=" << n << " trial " << trial;
            }
        }
    }
}

// With clusters the search visits only the probed ones: the result is a point of the book, the
// error is exactly its distance, exact hits are found (a point's own cluster is among the probed
// ones for its own coordinates), and on average the result is close to the exhaustive optimum.
TEST(QuantCodebook, ClusteredSearchFindsGoodPoints) {
    std::mt19937 rng(23);
    std::normal_distribution<float> nd(0.0f, 40.0f);
    for (int G : {4, 8}) {
        const int n = 4096;
        const std::vector<int8_t> pts = random_points(G, n, rng);
        const Codebook book(G, pts, 64, 4);
        const float w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        double got_sum = 0, best_sum = 0;
        for (int trial = 0; trial < 400; ++trial) {
            float t[8];
            const bool hit = trial % 4 == 0;
            for (int j = 0; j < G; ++j) t[j] = hit ? (float)pts[(size_t)(trial * 13 % n) * G + j] : nd(rng);
            float err = -1;
            const uint32_t got = book.nearest(t, w, &err);
            ASSERT_LT(got, (uint32_t)n);
            ASSERT_EQ(f32_bits(err), f32_bits(wdist_ref(t, w, book.point(got), G)));
            if (hit) {
                ASSERT_EQ(err, 0.0f) << "G=" << G << " trial " << trial;
            }
            float best = INFINITY;
            for (int i = 0; i < n; ++i) best = std::min(best, wdist_ref(t, w, &pts[(size_t)i * G], G));
            ASSERT_GE(err, best);
            got_sum += err;
            best_sum += best;
        }
        EXPECT_LT(got_sum, 1.5 * best_sum) << "G=" << G;
    }
}
