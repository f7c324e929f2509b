// The code book search at the AVX2 width (grid_codebook_avx2.cpp, compiled with that ISA's
// flags and called only where the CPU has it).
#pragma once
#include <cstdint>

namespace ikllm::quant {

// A code book's search layouts (Codebook::nearest passes its own; see grid_codebook_lanes.h).
struct BookLanes {
    int G, lanes;
    const float* cent_lanes;
    int k_count, probes;
    const uint32_t *lane_start, *start, *members;
    const float* member_lanes;
};

uint32_t codebook_nearest_avx2(const BookLanes& b, const float* t, const float* w, float* err);    // lanes 8

}  // namespace ikllm::quant
