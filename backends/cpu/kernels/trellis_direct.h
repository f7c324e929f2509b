// The trellis kernels' direct form for calls of 1-3 tokens (trellis_avx2.cpp, trellis_avx512.cpp):
// a call rearranges its tokens' Q8_2_X4 activations once, then every row's 256-weight blocks go
// from their generator seeds straight into the integer dot products (no decoded block). The ISA
// file supplies K:
//   K::Acc, K::zero(), K::hsum(Acc)      float accumulator of a row and token, its final sum;
//   K::kPrepBytes, K::prep(act, nb, out)  rearranged activation bytes per block, the rearranging;
//   K::Seeds, K::seeds(block, d, seeds)   a block's seeds and sub-block scales;
//   K::dot<TN>(seeds, prep, pstride, act, arb, acc)   acc[t] += the block's products, t < TN.
// Anonymous namespace: each including file compiles its own copy with its own ISA flags.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ikllm::cpu {
namespace {

// Calls of at most this many tokens take the direct form (types with seeds). Measured one core,
// 2048 x 2048: at 3 tokens still 1.2-1.8x the decoded-block tiles, at 4 level or slower.
inline constexpr int64_t kKtDirectMaxTokens = 3;

template <class K, int TN>
void run_kt_direct(const uint8_t* w, size_t wrb, int64_t nb, size_t bb, int64_t r0, int64_t r1, const uint8_t* a,
                   size_t arb, float* y, int64_t ys) {
    const size_t pstride = (size_t)nb * K::kPrepBytes;
    struct alignas(64) Line {
        uint8_t b[64];
    };
    thread_local std::vector<Line> prep;  // the tokens' rearranged activations (64-byte aligned)
    const size_t lines = ((size_t)TN * pstride + 63) / 64;
    if (prep.size() < lines) prep.resize(lines);
    uint8_t* pa = reinterpret_cast<uint8_t*>(prep.data());
    for (int i = 0; i < TN; ++i) K::prep(a + (size_t)i * arb, nb, pa + (size_t)i * pstride);
    typename K::Seeds sd;
    typename K::Acc acc[TN];
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w + (size_t)r * wrb;
        float d;
        std::memcpy(&d, row, 4);  // the row's float32 scale
        for (int i = 0; i < TN; ++i) acc[i] = K::zero();
        for (int64_t b = 0; b < nb; ++b) {
            K::seeds(row + 4 + (size_t)b * bb, d, sd);
            K::template dot<TN>(sd, pa + (size_t)b * K::kPrepBytes, pstride, a + 288 * b, arb, acc);
        }
        for (int i = 0; i < TN; ++i) y[i * ys + r] = K::hsum(acc[i]);
    }
}

// Runs a tile of tn tokens in the direct form if it is small enough; false: it is not.
template <class K>
bool kt_direct_tile(int64_t tn, const uint8_t* w, size_t wrb, int64_t nb, size_t bb, int64_t r0, int64_t r1,
                    const uint8_t* a, size_t arb, float* y, int64_t ys) {
    switch (tn) {
        case 1: run_kt_direct<K, 1>(w, wrb, nb, bb, r0, r1, a, arb, y, ys); return true;
        case 2: run_kt_direct<K, 2>(w, wrb, nb, bb, r0, r1, a, arb, y, ys); return true;
        case 3: run_kt_direct<K, 3>(w, wrb, nb, bb, r0, r1, a, arb, y, ys); return true;
        default: return false;
    }
}
static_assert(kKtDirectMaxTokens == 3, "kt_direct_tile's cases");

}  // namespace
}  // namespace ikllm::cpu
