// Nearest-neighbour search in a code book of small int8 vectors, used by the encoders of the
// trellis and grid types: k-means clusters index the code book so a search visits only the
// closest clusters. Built once per code book; immutable (and thread-safe to search) afterwards.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ikllm::quant {

class Codebook {
public:
    // points: n vectors of G (<= 8) values. clusters = 1 gives an exhaustive search.
    // lanes: 4 = distances four at a time; anything else = the widest the CPU has (8 with AVX2).
    // Every width gives the same results (tests compare them).
    Codebook(int G, std::vector<int8_t> points, int clusters, int probes, int lanes = 0);

    // Index minimising sum_j w_j (t_j - p_j)^2; *err receives that sum.
    uint32_t nearest(const float* t, const float* w, float* err) const;
    const int8_t* point(uint32_t i) const { return &pts_[(size_t)i * G_]; }
    uint32_t size() const { return n_; }
    int lanes() const { return lanes_; }

private:
    void build_index();
    std::vector<float> centroid_lanes(int L) const;
    void build_member_lanes();

    int G_;
    uint32_t n_;
    int k_, probes_;
    int lanes_;  // distances computed at once: 4 (baseline) or 8 (AVX2)
    std::vector<int8_t> pts_;
    std::vector<float> cent_;
    std::vector<uint32_t> start_, members_;
    // The same data in groups of lanes_ (searches compute lanes_ distances at once, each lane in
    // the scalar order, so every width gives the same results): per group, value j of its points
    // at [j * lanes_ + lane]. Cluster k's members fill groups lane_start_[k] .. lane_start_[k + 1]
    // (last one padded).
    std::vector<float> cent_lanes_, member_lanes_;
    std::vector<uint32_t> lane_start_;
};

}  // namespace ikllm::quant
