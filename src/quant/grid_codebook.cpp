// Code book nearest-neighbour search (see grid_codebook.h).
#include "quant/grid_codebook.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/matmul.h"  // best_isa: the width of the distance lanes
#include "quant/grid_codebook_isa.h"
#include "quant/grid_codebook_lanes.h"

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
constexpr int kMaxClusters = kMaxBookClusters;
constexpr int kKmeansLanes = 4;  // the k-means assignment runs once per book, at the baseline width

// Distances 8 at a time where the CPU has AVX2 (IKLLM_ISA caps it, as for the kernels). 16 lanes
// on AVX-512 measured no faster: clusters are small, and padding their last group costs more.
int search_lanes() {
#if defined(__x86_64__) || defined(_M_X64)
    const cpu::Isa isa = cpu::best_isa();
    if (isa == cpu::Isa::avx2 || isa == cpu::Isa::avx512) return 8;
#endif
    return 4;
}

}  // namespace

Codebook::Codebook(int G, std::vector<int8_t> points, int clusters, int probes, int lanes)
    : G_(G), n_((uint32_t)(points.size() / (size_t)G)), k_(std::max(1, std::min({clusters, (int)n_, kMaxClusters}))),
      probes_(std::max(1, std::min(probes, k_))), lanes_(lanes == 4 ? 4 : search_lanes()), pts_(std::move(points)) {
    build_index();
    cent_lanes_ = centroid_lanes(lanes_);
    build_member_lanes();
}

uint32_t Codebook::nearest(const float* t, const float* w, float* err) const {
    const int np = std::min(probes_, 16);
    if (G_ == 8 || G_ == 4) {
        const BookLanes b{G_, lanes_, cent_lanes_.data(), k_, np, lane_start_.data(), start_.data(), members_.data(),
                          member_lanes_.data()};
        if (lanes_ == 8) return codebook_nearest_avx2(b, t, w, err);
        return G_ == 8 ? nearest_lanes<8, 4>(t, w, b.cent_lanes, k_, np, b.lane_start, b.start, b.members, b.member_lanes, err)
                       : nearest_lanes<4, 4>(t, w, b.cent_lanes, k_, np, b.lane_start, b.start, b.members, b.member_lanes, err);
    }
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
        const std::vector<float> cl = centroid_lanes(kKmeansLanes);
        for (uint32_t c = 0; c < n_; ++c) {
            float tc[8];
            for (int j = 0; j < G_; ++j) tc[j] = pts_[(size_t)c * G_ + j];
            alignas(16) float cd[kMaxClusters + 4];
            if (G_ == 8 || G_ == 4) {  // four centroids at a time, each lane in wdist's order
                for (int k = 0; k < k_; k += 4) {
                    using Ops = LaneOps<kKmeansLanes>;
                    const Ops::V d = G_ == 8 ? Ops::wdist<8>(tc, ones, &cl[(size_t)(k / 4) * 8 * 4])
                                             : Ops::wdist<4>(tc, ones, &cl[(size_t)(k / 4) * 4 * 4]);
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

std::vector<float> Codebook::centroid_lanes(int L) const {
    // Groups of L clusters (padding clusters repeat the last one; never chosen).
    const int kg = (k_ + L - 1) / L;
    std::vector<float> v((size_t)kg * G_ * L, 0.0f);
    for (int k = 0; k < kg * L; ++k)
        for (int j = 0; j < G_; ++j)
            v[(size_t)(k / L) * G_ * L + (size_t)j * L + k % L] = cent_[(size_t)std::min(k, k_ - 1) * G_ + j];
    return v;
}

void Codebook::build_member_lanes() {
    // Each cluster's points in groups of lanes_, in members_ order.
    lane_start_.assign((size_t)k_ + 1, 0);
    for (int k = 0; k < k_; ++k) lane_start_[(size_t)k + 1] = lane_start_[(size_t)k] + (start_[(size_t)k + 1] - start_[(size_t)k] + lanes_ - 1) / lanes_;
    member_lanes_.assign((size_t)lane_start_[(size_t)k_] * G_ * lanes_, 0.0f);
    for (int k = 0; k < k_; ++k)
        for (uint32_t m = start_[(size_t)k]; m < start_[(size_t)k + 1]; ++m) {
            const uint32_t slot = m - start_[(size_t)k], g = lane_start_[(size_t)k] + slot / lanes_;
            for (int j = 0; j < G_; ++j)
                member_lanes_[(size_t)g * G_ * lanes_ + (size_t)j * lanes_ + slot % lanes_] = pts_[(size_t)members_[m] * G_ + j];
        }
}

}  // namespace ikllm::quant
