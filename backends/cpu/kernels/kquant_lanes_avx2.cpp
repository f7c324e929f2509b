// Q4_K / Q5_K prompt batches, eight tokens per register, compiled with AVX2
// (kquant_lanes.h, kquant_lanes_avx2.h).
#include "kernels/kquant_lanes.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels/kquant_lanes_avx2.h"

namespace ikllm::cpu {
void q4k_lanes_matmul_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                           size_t arb, int64_t nt, float* y, int64_t ys) {
    q45k_lanes_matmul<false>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
void q5k_lanes_matmul_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                           size_t arb, int64_t nt, float* y, int64_t ys) {
    q45k_lanes_matmul<true>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
}  // namespace ikllm::cpu
#endif
