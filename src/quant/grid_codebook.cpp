// Code book nearest-neighbour search (see grid_codebook.h).
#include "quant/grid_codebook.h"

#include <algorithm>
#include <cmath>

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

}  // namespace

Codebook::Codebook(int G, std::vector<int8_t> points, int clusters, int probes)
    : G_(G), n_((uint32_t)(points.size() / (size_t)G)), k_(std::max(1, std::min({clusters, (int)n_, kMaxClusters}))),
      probes_(std::max(1, std::min(probes, k_))), pts_(std::move(points)) {
    build_index();
}

uint32_t Codebook::nearest(const float* t, const float* w, float* err) const {
    float cd[kMaxClusters];
    for (int k = 0; k < k_; ++k) cd[k] = wdist(t, w, &cent_[(size_t)k * G_], G_);
    int probe[16];
    const int np = std::min(probes_, 16);
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
        for (uint32_t c = 0; c < n_; ++c) {
            float tc[8];
            for (int j = 0; j < G_; ++j) tc[j] = pts_[(size_t)c * G_ + j];
            int best = 0;
            float bd = INFINITY;
            for (int k = 0; k < k_; ++k) {
                const float d = wdist(tc, ones, &cent_[(size_t)k * G_], G_);
                if (d < bd) {
                    bd = d;
                    best = k;
                }
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

}  // namespace ikllm::quant
