// Cache blocking shared by the float-weight kernels (float_avx2.cpp, float_avx512.cpp,
// float_neon.cpp): a panel of rows is processed in chunks of the row length; within a chunk the
// panel's weights stay in L2 while every token block passes over them, and each token block's
// activations stay in L1 across the panel's row tiles. Each file brings its register tiles.
// Anonymous namespace like the other kernel headers: each ISA file compiles its own copy.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ikllm::cpu {
namespace {

// Dot products of R weight rows x T tokens over ne0 elements; `add`: accumulate into y (later
// chunks of a split row).
using FloatTileFn = void (*)(const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, int64_t ne0, float* y,
                             int64_t ys, bool add);

constexpr int64_t kFloatPanelRows = 16, kFloatChunk = 1024;  // kFloatChunk: a multiple of every tile's step

// tiles[(R - 1) * TM + (T - 1)] handles R <= RM rows and T <= TM tokens.
template <int RM, int TM>
void float_tiles_drive(const FloatTileFn* tiles, int wbytes, int xbytes, const uint8_t* w, size_t wrb, int64_t ne0,
                       int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    for (int64_t rp = r0; rp < r1; rp += kFloatPanelRows) {
        const int64_t rpe = std::min(r1, rp + kFloatPanelRows);
        for (int64_t k0 = 0; k0 < ne0; k0 += kFloatChunk) {
            const int64_t kc = std::min(kFloatChunk, ne0 - k0);
            for (int64_t t = 0; t < nt; t += TM) {
                const int tt = (int)std::min<int64_t>(TM, nt - t);
                for (int64_t r = rp; r < rpe; r += RM) {
                    const int rr = (int)std::min<int64_t>(RM, rpe - r);
                    tiles[(rr - 1) * TM + (tt - 1)](w + (size_t)r * wrb + k0 * wbytes, wrb,
                                                    act + (size_t)t * arb + k0 * xbytes, arb, kc, y + t * ys + r, ys,
                                                    k0 > 0);
                }
            }
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
