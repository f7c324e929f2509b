// Code book search L distances at a time (included by grid_codebook.cpp with L = 4 at the
// baseline ISA, and by grid_codebook_avx2.cpp with L = 8 under its flags;
// internal linkage, so each file keeps its own copy). Each lane computes the scalar distance's
// operations in its order (these files are compiled with -ffp-contract=off: no fused
// multiply-adds), and candidates are compared in the scalar search's order, so every width
// returns the scalar search's index and error bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace ikllm::quant {
namespace {

constexpr int kMaxBookClusters = 256;

template <int L>
struct LaneOps {
    typedef float V __attribute__((vector_size(4 * L)));
    // Any lane of v below x?
    static bool any_below(V v, float x) {
#if defined(__AVX512F__)
        if constexpr (L == 16) {
            __m512 m;
            std::memcpy(&m, &v, sizeof m);
            return _mm512_cmp_ps_mask(m, _mm512_set1_ps(x), _CMP_LT_OQ) != 0;
        }
#endif
#if defined(__AVX2__)
        if constexpr (L == 8) {
            __m256 m;
            std::memcpy(&m, &v, sizeof m);
            return _mm256_movemask_ps(_mm256_cmp_ps(m, _mm256_set1_ps(x), _CMP_LT_OQ)) != 0;
        }
#endif
#if defined(__SSE2__)
        if constexpr (L == 4) {
            __m128 m;
            std::memcpy(&m, &v, sizeof m);
            return _mm_movemask_ps(_mm_cmplt_ps(m, _mm_set1_ps(x))) != 0;
        }
#endif
        alignas(64) float a[L];
        std::memcpy(a, &v, sizeof v);
        for (int l = 0; l < L; ++l)
            if (a[l] < x) return true;
        return false;
    }
    // Lane l: sum_j w_j (t_j - p_j)^2 in order j, p_j = group[j * L + l].
    template <int G>
    static V wdist(const float* t, const float* w, const float* group) {
        V s = {};
        for (int j = 0; j < G; ++j) {
            V p;
            std::memcpy(&p, group + L * j, sizeof p);
            const V e = t[j] - p;
            s = s + (w[j] * e) * e;
        }
        return s;
    }
};

// The probes closest clusters in order of (distance, index), then the closest point among
// their members. Layouts (Codebook::build_*_lanes with this L): per group of L clusters or
// points, value j at [j * L + lane]; cluster k's members fill groups lane_start[k] ..
// lane_start[k + 1] (last one padded).
template <int G, int L>
uint32_t nearest_lanes(const float* t, const float* w, const float* cent_lanes, int k_count, int probes,
                       const uint32_t* lane_start, const uint32_t* start, const uint32_t* members,
                       const float* member_lanes, float* err) {
    using Ops = LaneOps<L>;
    using V = typename Ops::V;
    alignas(64) float cd[kMaxBookClusters + L];
    V cdl[kMaxBookClusters / L + 1];
    for (int k = 0; k < k_count; k += L) {
        cdl[k / L] = Ops::template wdist<G>(t, w, cent_lanes + (size_t)(k / L) * G * L);
        std::memcpy(cd + k, &cdl[k / L], sizeof(V));
    }
    // One pass, insertion into a sorted list (strictly closer, or as close with a smaller index,
    // goes first). Once the list is full, a cluster enters only below its last distance (thr):
    // groups with no lane below it are skipped.
    int probe[16];
    int np = 0;
    float thr = 0;
    for (int k0 = 0; k0 < k_count; k0 += L) {
        if (np == probes && !Ops::any_below(cdl[k0 / L], thr)) continue;
        for (int k = k0; k < std::min(k0 + L, k_count); ++k) {
            if (np == probes && !(cd[k] < thr)) continue;
            int pos = np < probes ? np++ : np - 1;
            while (pos > 0 && cd[k] < cd[probe[pos - 1]]) {
                probe[pos] = probe[pos - 1];
                --pos;
            }
            probe[pos] = k;
            if (np == probes) thr = cd[probe[np - 1]];
        }
    }
    float best_err = INFINITY;
    uint32_t best_i = 0;
    for (int p = 0; p < np; ++p) {
        const int k = probe[p];
        const uint32_t m0 = start[k], m1 = start[k + 1];
        for (uint32_t g = lane_start[k], m = m0; m < m1; ++g, m += L) {
            const V v = Ops::template wdist<G>(t, w, member_lanes + (size_t)g * G * L);
            if (!Ops::any_below(v, best_err)) continue;  // no lane improves (most groups)
            alignas(64) float d[L];
            std::memcpy(d, &v, sizeof v);
            const int n = (int)std::min<uint32_t>(L, m1 - m);
            for (int l = 0; l < n; ++l)
                if (d[l] < best_err) {
                    best_err = d[l];
                    best_i = members[m + l];
                }
        }
    }
    *err = best_err;
    return best_i;
}

}  // namespace
}  // namespace ikllm::quant
