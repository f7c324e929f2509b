// Exact nearest-neighbour search in a code book of ternary 8-vectors (IQ1_S / IQ1_M's 2048-entry
// grid, values in {-1, 0, +1}). The weighted distance sum_j w_j (t_j - p_j)^2 separates per
// coordinate, so the unconstrained best point is each t_j rounded to its cheapest value; when
// that point is not in the grid, points are visited in order of increasing distance (best
// first over per-coordinate penalties) until one is. A grid holding a third of all 3^8 points
// is usually hit within a few steps: exact, and much cheaper than a clustered approximate search.
// Built once per grid; immutable (and thread-safe to search) afterwards.
#pragma once
#include <cstdint>
#include <vector>

namespace ikllm::quant {

class TernaryBook {
public:
    // grid: n entries, each 8 signed bytes (little-endian in the uint64) in {-1, 0, +1}.
    TernaryBook(const uint64_t* grid, int n);

    // Index minimising sum_j w_j (t_j - p_j)^2 (w_j >= 0); *err receives that sum.
    uint32_t nearest(const float* t, const float* w, float* err) const;
    // Every entry's distance: the reference the best-first search is tested against.
    uint32_t nearest_exhaustive(const float* t, const float* w, float* err) const;
    const int8_t* point(uint32_t i) const { return &pts_[(size_t)i * 8]; }
    uint32_t size() const { return (uint32_t)(pts_.size() / 8); }

private:
    std::vector<int8_t> pts_;
    std::vector<int16_t> index_;  // base-3 code sum_j (p_j + 1) 3^j -> entry, or -1
};

}  // namespace ikllm::quant
