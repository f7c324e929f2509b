// IQ1_S_R4 and IQ1_M_R4 (quant-formats.md §12.8: the reference's own 4-row formats, no plain
// base to convert to) against Q8_K128 activations, the parts every ISA shares. Every weight is
// the integer code c = 8 g +- 1 (g the signed grid byte, the delta +-1/8 scaled by 8) times an
// integer multiplier m per 16 columns (IQ1_S_R4: 2s + 1 per 32, IQ1_M_R4: the 4-bit scale per
// 16) times d_k / 8 per row, so a row's product is exact integers per 128-column activation
// block, one float multiply-add per block and token:
//   y_k = d_k / 8 * sum_blocks d_a * sum_16 m * sum (c . a).
// Pass 1 (iq1r4_raw, scalar table loads) decodes a 4-row group's grid entries, delta signs and
// multipliers for the whole row length once per call; pass 2 (an ISA's tile) multiplies them
// with up to kIq1R4Tile tokens at a time. Every ISA keeps the same per-lane order: int32 lane l of
// a row sums columns 4l .. 4l + 3 of each 32-column block (8 lanes), exact over the 128-column
// block, then f_l = fma(float(lane), d_a, f_l); the row's result is d_k / 8 times the 8 lanes
// summed as (f_i + f_{i+4}) pairwise (iq1r4_hsum). Results are bit-identical across ISAs and tile
// sizes.
// Anonymous namespace: each kernel file compiles its own copy with its own ISA flags.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/fp16.h"
#include "quant/act_q8_k.h"
#include "quant/grid_tables.h"
#include "quant/type_traits.h"
#if defined(__BMI2__) && defined(__SSE4_1__)
#include <immintrin.h>
#endif

namespace ikllm::cpu {
namespace {

constexpr int kIq1R4Tile = 4;  // tokens per pass over a group's decoded blocks

// One 32-column block of the 4 rows after pass 1.
struct Iq1R4Raw {
    alignas(64) uint64_t g[16];  // row k's 4 grid entries (columns 8i .. 8i + 7) at 4k + i
    int16_t m[8];                // multiplier of columns 16h .. 16h + 15 of row k at 2k + h
    uint16_t neg;                // bit 4k + i: the delta of row k's columns 8i .. is -1
};

template <uint32_t Type>
inline void iq1r4_raw(const uint8_t* b, Iq1R4Raw& o) {
    using quant::kIq1sGrid;
    o.neg = 0;
#if defined(__BMI2__) && defined(__SSE4_1__)
    // Row k's 4 indices built at once in 16-bit fields: its 4 low bytes (qs transposed to row
    // order by one shuffle) and its 4 3-bit high parts deposited by pdep (~1/4 fewer operations
    // than one index at a time; pass 1 is ~70 % of a token's time).
    const __m128i qt = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)),
                                        _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    uint32_t lo[4];
    lo[0] = (uint32_t)_mm_cvtsi128_si32(qt);
    lo[1] = (uint32_t)_mm_extract_epi32(qt, 1);
    lo[2] = (uint32_t)_mm_extract_epi32(qt, 2);
    lo[3] = (uint32_t)_mm_extract_epi32(qt, 3);
    auto put = [&](int k, uint64_t idx4) {
        for (int i = 0; i < 4; ++i) o.g[4 * k + i] = kIq1sGrid[(idx4 >> (16 * i)) & 0xFFFF];
    };
    if constexpr (Type == quant::T_IQ1_S_R4) {
        uint64_t h4;
        std::memcpy(&h4, b + 16, 8);
        for (int k = 0; k < 4; ++k) {
            const uint32_t h = (uint32_t)(h4 >> (16 * k)) & 0xFFFF;
            o.m[2 * k] = o.m[2 * k + 1] = (int16_t)(2 * ((h >> 12) & 7) + 1);
            if (h >> 15) o.neg |= (uint16_t)(15u << (4 * k));
            put(k, _pdep_u64(lo[k], 0x00FF00FF00FF00FFull) | _pdep_u64(h, 0x0700070007000700ull));
        }
    } else {  // IQ1_M_R4: group i of row k at qs[8 (i / 2) + 4 (i % 2) + k], high parts in qh[4 (i / 2) + k]
        for (int k = 0; k < 4; ++k) {
            const uint8_t sc = b[24 + k];
            o.m[2 * k] = (int16_t)(sc & 15);
            o.m[2 * k + 1] = (int16_t)(sc >> 4);
            const uint32_t hq = (uint32_t)b[16 + k] | (uint32_t)b[20 + k] << 8;  // groups 0, 1 | 2, 3
            o.neg |= (uint16_t)(_pext_u32(hq, 0x8888u) << (4 * k));
            // qt (transposed qs) row k bytes: qs[k], qs[4 + k], qs[8 + k], qs[12 + k] = groups 0, 1, 2, 3
            put(k, _pdep_u64(lo[k], 0x00FF00FF00FF00FFull) | _pdep_u64(_pext_u32(hq, 0x7777u), 0x0700070007000700ull));
        }
    }
    return;
#endif
    if constexpr (Type == quant::T_IQ1_S_R4) {  // qs[16], h_k at 16 + 2k
        for (int k = 0; k < 4; ++k) {
            uint16_t h;
            std::memcpy(&h, b + 16 + 2 * k, 2);
            o.m[2 * k] = o.m[2 * k + 1] = (int16_t)(2 * ((h >> 12) & 7) + 1);
            if (h >> 15) o.neg |= (uint16_t)(15u << (4 * k));
            for (int i = 0; i < 4; ++i) o.g[4 * k + i] = kIq1sGrid[b[4 * i + k] | ((h >> (3 * i)) & 7) << 8];
        }
    } else {  // IQ1_M_R4: qs[16], qh[8] at 16, scales[4] at 24
        for (int k = 0; k < 4; ++k) {
            const uint8_t sc = b[24 + k];
            o.m[2 * k] = (int16_t)(sc & 15);
            o.m[2 * k + 1] = (int16_t)(sc >> 4);
            for (int i = 0; i < 2; ++i) {
                const uint8_t hq = b[16 + 4 * i + k];
                o.g[4 * k + 2 * i] = kIq1sGrid[b[8 * i + k] | (hq & 7) << 8];
                o.g[4 * k + 2 * i + 1] = kIq1sGrid[b[8 * i + 4 + k] | ((hq >> 4) & 7) << 8];
                o.neg |= (uint16_t)((((hq >> 3) & 1) | ((hq >> 7) & 1) << 1) << (4 * k + 2 * i));
            }
        }
    }
}

template <uint32_t Type>
constexpr int iq1r4_block_bytes() { return Type == quant::T_IQ1_S_R4 ? 24 : 28; }

// The 8 lanes of a row summed in the order of the SIMD kernels' horizontal sum.
inline float iq1r4_hsum(const float f[8]) {
    const float s0 = f[0] + f[4], s1 = f[1] + f[5], s2 = f[2] + f[6], s3 = f[3] + f[7];
    return (s0 + s2) + (s1 + s3);
}

// A tile: Tile::Prep is what it reads of a 32-column block (Iq1R4Raw, or what Tile::prepare
// makes of the group's Iq1R4Raw blocks once they are all written: wide loads right after
// pass 1's narrow stores to the same bytes would stall on store forwarding), and
// Tile::template run<T>(prep, nb, act, arb, dk, y, ys) writes y[t * ys + k] for the T tokens at
// act and the group's 4 rows.
template <uint32_t Type, class Tile>
void iq1r4_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
               int64_t nt, float* y, int64_t ys) {
    using Prep = typename Tile::Prep;
    constexpr bool kRawOnly = std::is_same_v<Prep, Iq1R4Raw>;
    constexpr int kBlockBytes = iq1r4_block_bytes<Type>();
    const int64_t nb = ne0 / 32;
    std::vector<Iq1R4Raw> raw((size_t)nb);
    std::vector<Prep> prep(kRawOnly ? 0 : (size_t)nb);
    for (int64_t r = r0; r < r1; r += 4) {
        const uint8_t* grp = w + (size_t)r * wrb;  // 4 fp16 d_k, then the 32-column blocks
        for (int64_t b = 0; b < nb; ++b) iq1r4_raw<Type>(grp + 8 + (size_t)kBlockBytes * b, raw[(size_t)b]);
        const Prep* pr;
        if constexpr (kRawOnly) {
            pr = raw.data();
        } else {
            Tile::prepare(raw.data(), nb, prep.data());
            pr = prep.data();
        }
        float dk[4];
        for (int k = 0; k < 4; ++k) {
            uint16_t h;
            std::memcpy(&h, grp + 2 * k, 2);
            dk[k] = f16_to_f32(h) * 0.125f;
        }
        for (int64_t t0 = 0; t0 < nt; t0 += kIq1R4Tile) {
            const uint8_t* at = act + (size_t)t0 * arb;
            float* yt = y + t0 * ys + r;
            static_assert(kIq1R4Tile == 4);
            switch (std::min<int64_t>(kIq1R4Tile, nt - t0)) {
                case 1: Tile::template run<1>(pr, nb, at, arb, dk, yt, ys); break;
                case 2: Tile::template run<2>(pr, nb, at, arb, dk, yt, ys); break;
                case 3: Tile::template run<3>(pr, nb, at, arb, dk, yt, ys); break;
                default: Tile::template run<4>(pr, nb, at, arb, dk, yt, ys); break;
            }
        }
    }
}

// The portable tile (scalar table, ARM): the SIMD kernels' integers and float operations.
struct Iq1R4TileScalar {
    using Prep = Iq1R4Raw;
    template <int T>
    static void run(const Iq1R4Raw* raw, int64_t nb, const uint8_t* act, size_t arb, const float dk[4], float* y, int64_t ys) {
        for (int k = 0; k < 4; ++k) {
            float f[T][8] = {};
            for (int64_t c = 0; c < nb / 4; ++c) {
                int32_t acc[T][8] = {};
                for (int s = 0; s < 4; ++s) {
                    const Iq1R4Raw& o = raw[4 * c + s];
                    int8_t code[32];
                    for (int i = 0; i < 4; ++i) {
                        const uint64_t g = o.g[4 * k + i];
                        const int delta = (o.neg >> (4 * k + i)) & 1 ? -1 : 1;
                        for (int j = 0; j < 8; ++j) code[8 * i + j] = (int8_t)(8 * (int8_t)(uint8_t)(g >> (8 * j)) + delta);
                    }
                    for (int t = 0; t < T; ++t) {
                        const int8_t* a = reinterpret_cast<const int8_t*>(act + (size_t)t * arb + (size_t)quant::kQ8K128BlockBytes * c +
                                                                          quant::kQ8K128OffQs + 32 * s);
                        for (int l = 0; l < 8; ++l) {
                            int32_t p = 0;
                            for (int q = 0; q < 4; ++q) p += (int32_t)code[4 * l + q] * a[4 * l + q];
                            acc[t][l] += p * o.m[2 * k + l / 4];
                        }
                    }
                }
                for (int t = 0; t < T; ++t) {
                    float da;
                    std::memcpy(&da, act + (size_t)t * arb + (size_t)quant::kQ8K128BlockBytes * c + quant::kQ8K128OffD, 4);
                    for (int l = 0; l < 8; ++l) f[t][l] = std::fma((float)acc[t][l], da, f[t][l]);
                }
            }
            for (int t = 0; t < T; ++t) y[t * ys + k] = dk[k] * iq1r4_hsum(f[t]);
        }
    }
};

}  // namespace
}  // namespace ikllm::cpu
