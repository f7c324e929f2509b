// Code book nearest-neighbour search (see grid_codebook.h).
#include "quant/grid_codebook.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ikllm::quant {
namespace {

template <class P>
inline float wdist(const float* t, const float* w, const P* p, int G) {
    float s = 0;
    for (int j = 0; j < G; ++j) {
        const float e = t[j] - (float)p[j];
        s += w[j] * e * e;
    }
    return s;
}

constexpr int kIters = 6;
constexpr int kMaxClusters = 256;

// kLanes floats (GCC / Clang vector extension: SSE2 on x86-64, NEON on AArch64). With
// -ffp-contract=off each lane runs wdist's operations: e = t - p, s = s + (w * e) * e in order j.
typedef float Lanes __attribute__((vector_size(16)));
typedef int32_t LaneMask __attribute__((vector_size(16)));  // a comparison's lanes: -1 / 0

inline bool any_below(Lanes v, float x) {
#if defined(__SSE2__)
    __m128 m;
    std::memcpy(&m, &v, sizeof m);
    return _mm_movemask_ps(_mm_cmplt_ps(m, _mm_set1_ps(x))) != 0;
#else
    const LaneMask lt = v < x;
    return (lt[0] | lt[1] | lt[2] | lt[3]) != 0;
#endif
}

template <int G>
inline Lanes wdist_lanes(const float* t, const float* w, const float* group) {
    Lanes s = {0, 0, 0, 0};
    for (int j = 0; j < G; ++j) {
        Lanes p;
        std::memcpy(&p, group + 4 * j, sizeof p);
        const Lanes e = t[j] - p;
        s = s + (w[j] * e) * e;
    }
    return s;
}

}  // namespace

Codebook::Codebook(int G, std::vector<int8_t> points, int clusters, int probes)
    : G_(G), n_((uint32_t)(points.size() / (size_t)G)), k_(std::max(1, std::min({clusters, (int)n_, kMaxClusters}))),
      probes_(std::max(1, std::min(probes, k_))), pts_(std::move(points)) {
    build_index();
    build_centroid_lanes();
    build_member_lanes();
}

namespace {

// The search of Codebook::nearest for a group size known at compile time (4 and 8 cover every
// code book), four distances at a time from the lane layouts (build_lanes): each lane computes
// wdist's operations in its order, and candidates are compared in the generic form's order, so
// the results are the generic form's.
template <int G>
uint32_t nearest_fixed(const float* t, const float* w, const float* cent_lanes, int k_count, int probes,
                       const uint32_t* lane_start, const uint32_t* start, const uint32_t* members,
                       const float* member_lanes, float* err) {
    constexpr int L = 4;
    alignas(16) float cd[kMaxClusters + L];
    Lanes cdl[kMaxClusters / L + 1];
    for (int k = 0; k < k_count; k += L) {
        cdl[k / L] = wdist_lanes<G>(t, w, cent_lanes + (size_t)(k / L) * G * L);
        std::memcpy(cd + k, &cdl[k / L], sizeof(Lanes));
    }
    // The probes closest clusters in order of (distance, index): one pass, insertion into a
    // sorted list (strictly closer, or as close with a smaller index, goes first). Once the list
    // is full, a cluster enters only below its last distance (thr): groups of four with none
    // below it are skipped.
    int probe[16];
    int np = 0;
    float thr = 0;
    for (int k0 = 0; k0 < k_count; k0 += L) {
        if (np == probes && !any_below(cdl[k0 / L], thr)) continue;
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
            alignas(16) float d[L];
            const Lanes v = wdist_lanes<G>(t, w, member_lanes + (size_t)g * G * L);
            if (!any_below(v, best_err)) continue;  // no lane improves (most groups)
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

uint32_t Codebook::nearest(const float* t, const float* w, float* err) const {
    const int np = std::min(probes_, 16);
    if (G_ == 8)
        return nearest_fixed<8>(t, w, cent_lanes_.data(), k_, np, lane_start_.data(), start_.data(), members_.data(),
                                member_lanes_.data(), err);
    if (G_ == 4)
        return nearest_fixed<4>(t, w, cent_lanes_.data(), k_, np, lane_start_.data(), start_.data(), members_.data(),
                                member_lanes_.data(), err);
    float cd[kMaxClusters];
    for (int k = 0; k < k_; ++k) cd[k] = wdist(t, w, &cent_[(size_t)k * G_], G_);
    int probe[16];
    for (int p = 0; p < np; ++p) {  // the np closest clusters
        int best = -1;
        for (int k = 0; k < k_; ++k)
            if ((best < 0 || cd[k] < cd[best]) && std::find(probe, probe + p, k) == probe + p) best = k;
        probe[p] = best;
    }
    float best_err = INFINITY;
    uint32_t best_i = 0;
    for (int p = 0; p < np; ++p)
        for (uint32_t m = start_[(size_t)probe[p]]; m < start_[(size_t)probe[p] + 1]; ++m) {
            const uint32_t i = members_[m];
            const float e = wdist(t, w, &pts_[(size_t)i * G_], G_);
            if (e < best_err) {
                best_err = e;
                best_i = i;
            }
        }
    *err = best_err;
    return best_i;
}

// Lloyd's k-means with deterministic seeding (evenly spaced points).
void Codebook::build_index() {
    cent_.assign((size_t)k_ * G_, 0.0f);
    for (int k = 0; k < k_; ++k)
        for (int j = 0; j < G_; ++j) cent_[(size_t)k * G_ + j] = pts_[(size_t)k * (n_ / k_) * G_ + j];
    std::vector<uint32_t> assign(n_, 0);
    const float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int it = 0; it <= kIters && k_ > 1; ++it) {
        build_centroid_lanes();
        for (uint32_t c = 0; c < n_; ++c) {
            float tc[8];
            for (int j = 0; j < G_; ++j) tc[j] = pts_[(size_t)c * G_ + j];
            alignas(16) float cd[kMaxClusters + 4];
            if (G_ == 8 || G_ == 4) {  // four centroids at a time, each lane in wdist's order
                for (int k = 0; k < k_; k += 4) {
                    const Lanes d = G_ == 8 ? wdist_lanes<8>(tc, ones, &cent_lanes_[(size_t)(k / 4) * 8 * 4])
                                            : wdist_lanes<4>(tc, ones, &cent_lanes_[(size_t)(k / 4) * 4 * 4]);
                    std::memcpy(cd + k, &d, sizeof d);
                }
            } else {
                for (int k = 0; k < k_; ++k) cd[k] = wdist(tc, ones, &cent_[(size_t)k * G_], G_);
            }
            int best = 0;
            float bd = INFINITY;
            for (int k = 0; k < k_; ++k)
                if (cd[k] < bd) {
                    bd = cd[k];
                    best = k;
                }
            assign[c] = (uint32_t)best;
        }
        if (it == kIters) break;
        std::vector<double> sum((size_t)k_ * G_, 0.0);
        std::vector<uint32_t> cnt((size_t)k_, 0);
        for (uint32_t c = 0; c < n_; ++c) {
            ++cnt[assign[c]];
            for (int j = 0; j < G_; ++j) sum[(size_t)assign[c] * G_ + j] += pts_[(size_t)c * G_ + j];
        }
        for (int k = 0; k < k_; ++k)
            if (cnt[(size_t)k])
                for (int j = 0; j < G_; ++j)
                    cent_[(size_t)k * G_ + j] = (float)(sum[(size_t)k * G_ + j] / cnt[(size_t)k]);
    }
    start_.assign((size_t)k_ + 1, 0);
    for (uint32_t c = 0; c < n_; ++c) ++start_[assign[c] + 1];
    for (int k = 0; k < k_; ++k) start_[(size_t)k + 1] += start_[(size_t)k];
    members_.resize(n_);
    std::vector<uint32_t> pos(start_.begin(), start_.end() - 1);
    for (uint32_t c = 0; c < n_; ++c) members_[pos[assign[c]]++] = c;
}

void Codebook::build_centroid_lanes() {
    // Groups of kLanes clusters (padding clusters repeat the last one; never chosen).
    const int kg = (k_ + kLanes - 1) / kLanes;
    cent_lanes_.assign((size_t)kg * G_ * kLanes, 0.0f);
    for (int k = 0; k < kg * kLanes; ++k)
        for (int j = 0; j < G_; ++j)
            cent_lanes_[(size_t)(k / kLanes) * G_ * kLanes + (size_t)j * kLanes + k % kLanes] =
                cent_[(size_t)std::min(k, k_ - 1) * G_ + j];
}

void Codebook::build_member_lanes() {
    // Each cluster's points in groups of kLanes, in members_ order.
    lane_start_.assign((size_t)k_ + 1, 0);
    for (int k = 0; k < k_; ++k) lane_start_[(size_t)k + 1] = lane_start_[(size_t)k] + (start_[(size_t)k + 1] - start_[(size_t)k] + kLanes - 1) / kLanes;
    member_lanes_.assign((size_t)lane_start_[(size_t)k_] * G_ * kLanes, 0.0f);
    for (int k = 0; k < k_; ++k)
        for (uint32_t m = start_[(size_t)k]; m < start_[(size_t)k + 1]; ++m) {
            const uint32_t slot = m - start_[(size_t)k], g = lane_start_[(size_t)k] + slot / kLanes;
            for (int j = 0; j < G_; ++j)
                member_lanes_[(size_t)g * G_ * kLanes + (size_t)j * kLanes + slot % kLanes] = pts_[(size_t)members_[m] * G_ + j];
        }
}

}  // namespace ikllm::quant
