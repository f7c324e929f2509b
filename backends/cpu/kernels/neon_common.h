// Helpers shared by the NEON kernel files: the row loop of the kernels that keep four weight rows
// per register (one per lane; kquant_neon.cpp, kquant_q8k_neon.h, trellis_neon.cpp) and the
// exact horizontal sums. Anonymous namespace: included by NEON files only.
#pragma once
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ikllm::cpu {
namespace {

// Rows r0..r1 four at a time, one per lane (the last quad repeats its last row): fill(row, lane)
// unpacks a row into the quad's lane, token(a) gives the four rows' outputs for activation row a.
template <class Fill, class Token>
void quad_rows_drive(const uint8_t* w, size_t wrb, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
                     float* y, int64_t ys, Fill&& fill, Token&& token) {
    for (int64_t r = r0; r < r1; r += 4) {
        const int nr = (int)std::min<int64_t>(4, r1 - r);
        for (int i = 0; i < 4; ++i) fill(w + (size_t)(r + std::min(i, nr - 1)) * wrb, i);
        for (int64_t t = 0; t < nt; ++t) {
            float out[4];
            vst1q_f32(out, token(act + (size_t)t * arb));
            for (int i = 0; i < nr; ++i) y[t * ys + r + i] = out[i];
        }
    }
}

// [sum x0, sum x1, sum x2, sum x3] (exact).
inline int32x4_t hsum4_lanes(int32x4_t x0, int32x4_t x1, int32x4_t x2, int32x4_t x3) {
    return vpaddq_s32(vpaddq_s32(x0, x1), vpaddq_s32(x2, x3));
}

}  // namespace
}  // namespace ikllm::cpu
#endif
