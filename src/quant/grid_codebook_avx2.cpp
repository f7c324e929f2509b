// Code book search, 8 distances at a time (compiled with the AVX2 flags, -ffp-contract=off).
#include "quant/grid_codebook_isa.h"
#include "quant/grid_codebook_lanes.h"

namespace ikllm::quant {

uint32_t codebook_nearest_avx2(const BookLanes& b, const float* t, const float* w, float* err) {
    if (b.G == 8)
        return nearest_lanes<8, 8>(t, w, b.cent_lanes, b.k_count, b.probes, b.lane_start, b.start, b.members,
                                     b.member_lanes, err);
    return nearest_lanes<4, 8>(t, w, b.cent_lanes, b.k_count, b.probes, b.lane_start, b.start, b.members,
                                 b.member_lanes, err);
}

}  // namespace ikllm::quant
