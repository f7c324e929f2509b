// AVX-512 VNNI GEMM of rows re-encoded to 8-bit codes with one float scale per 256 columns
// (the "conv" prompt-batch numerics of the ik K / KS types, kquant_simd.h, and of the grid
// i-quants, grid_int.h) against Q8_K activations. 16 rows are interleaved into a panel (per
// 256-column block, 64 vectors of 16 rows x 4 columns, stored as q + 128 so vpdpbusd takes them
// as its unsigned operand), then every token runs over the panel: 4 activation codes are
// broadcast to all 16 row lanes, so each instruction advances 16 rows and no horizontal sums are
// needed. The +128 is removed per block with the activation code sum (128 * sum a). Integer sums
// are exact; the float result per block is isum * (d_w * d_a), accumulated per row lane.
// Anonymous namespace: each kernel file compiles its own copy with its own ISA flags.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/panel_codes_avx512.h"
#include "quant/act_q8_k.h"

namespace ikllm::cpu {
namespace {

constexpr int kPanelRows = 16;

struct ConvPanel {
    std::vector<uint8_t> q;  // [nb][64][16][4]
    std::vector<float> d;    // [nb][16]
    explicit ConvPanel(int64_t nb) : q((size_t)nb * 256 * kPanelRows), d((size_t)nb * kPanelRows) {}
};

// Codes of a panel's rows before interleaving: row k's q + 128 at k * stride (stride = nb * 256);
// filled by the caller, then moved into the panel by put().
// One block's 256 integer products P (8 vectors of 32 int16) re-encoded to 8-bit codes, stored
// as q + 128 at out: dnew = max|P| * d0; P kept when dnew < 1 (then dnew = 1), else
// RNE(float(P) * (1 / dnew)) saturated to int8. Returns dnew (the caller scales it by the
// block's own factor and rounds it to fp16). The grid i-quants and the K / ik-K conv types share it.
inline float requant_block_512(const __m512i P[8], float d0, uint8_t* out) {
    __m512i mx = _mm512_setzero_si512();
    for (int i = 0; i < 8; ++i) mx = _mm512_max_epi16(mx, _mm512_abs_epi16(P[i]));
    const int imax = _mm512_reduce_max_epi32(_mm512_max_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(mx)),
                                                              _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(mx, 1))));
    float dnew = (float)imax * d0;
    const bool keep = dnew < 1.0f;
    if (keep) dnew = 1.0f;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512 inv = _mm512_set1_ps(1.0f / dnew);
    // Two vectors of P at a time: their four int32 quarters packed with signed saturation (as
    // vpmovsdb) into one register whose dwords one permute puts back in order.
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i order64 = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    auto r = [&](__m256i x) { return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(x)), inv)); };
    for (int i = 0; i < 8; i += 2) {
        __m512i q8;
        if (keep) {  // per 128-bit lane: 8 bytes of P[i], then 8 of P[i + 1]
            q8 = _mm512_permutexvar_epi64(order64, _mm512_packs_epi16(P[i], P[i + 1]));
        } else {
            const __m512i a = _mm512_packs_epi32(r(_mm512_castsi512_si256(P[i])), r(_mm512_extracti64x4_epi64(P[i], 1)));
            const __m512i b = _mm512_packs_epi32(r(_mm512_castsi512_si256(P[i + 1])), r(_mm512_extracti64x4_epi64(P[i + 1], 1)));
            q8 = _mm512_permutexvar_epi32(order, _mm512_packs_epi16(a, b));
        }
        _mm512_storeu_si512(reinterpret_cast<void*>(out + 32 * i), _mm512_xor_si512(q8, flip));
    }
    return dnew;
}

struct ConvPanelRows {
    std::vector<uint8_t> codes;
    size_t stride;
    explicit ConvPanelRows(int64_t nb) : codes((size_t)nb * 256 * kPanelRows), stride((size_t)nb * 256) {}
    uint8_t* row(int k) { return codes.data() + stride * (size_t)k; }
    void pad(int k) { std::memset(row(k), 0x80, stride); }  // code 0 for rows past the matrix
    void put(ConvPanel& pn, int64_t nb) const {
        for (int64_t b = 0; b < nb; ++b)
            simd512::panel_put_codes(codes.data() + 256 * b, stride, pn.q.data() + (size_t)b * 256 * kPanelRows, 64);
    }
};

template <int T>
inline void conv_panel_tile(const ConvPanel& pn, int64_t nb, const uint8_t* act, size_t arb, const int32_t* asum,
                            int rows, float* y, int64_t ys) {
    __m512 facc[T];
    for (int t = 0; t < T; ++t) facc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        const uint8_t* pq = pn.q.data() + (size_t)b * 256 * kPanelRows;
        const uint8_t* aq[T];
        for (int t = 0; t < T; ++t) aq[t] = act + (size_t)t * arb + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffQs;
        for (int j = 0; j < 64; ++j) {
            const __m512i wv = _mm512_loadu_si512((const void*)(pq + 64 * j));
            for (int t = 0; t < T; ++t) {
                int32_t a4;
                std::memcpy(&a4, aq[t] + 4 * j, 4);
                isum[t] = _mm512_dpbusd_epi32(isum[t], wv, _mm512_set1_epi32(a4));
            }
        }
        const __m512 dw = _mm512_loadu_ps(pn.d.data() + (size_t)b * kPanelRows);
        for (int t = 0; t < T; ++t) {
            float da;
            std::memcpy(&da, act + (size_t)t * arb + (size_t)b * quant::kQ8KBlockBytes + quant::kQ8KOffD, 4);
            const __m512i exact = _mm512_sub_epi32(isum[t], _mm512_set1_epi32(128 * asum[(size_t)t * nb + b]));
            facc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), _mm512_mul_ps(dw, _mm512_set1_ps(da)), facc[t]);
        }
    }
    const __mmask16 m = (__mmask16)((1u << rows) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ys, m, facc[t]);
}

// Rows [r0, r1) of nb blocks each: fill(r, rows, panel) re-encodes rows [r, r + rows) into the
// panel (codes and block scales of the missing rows of a last, short panel: code 0, scale 0).
template <class Fill>
void conv_panel_gemm(Fill&& fill, int64_t nb, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
                     float* y, int64_t ys) {
    // Per token and block: the sum of the 256 activation codes (from the per-16 sums).
    std::vector<int32_t> asum((size_t)(nt * nb));
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* a = act + (size_t)t * arb + (size_t)b * quant::kQ8KBlockBytes;
            int32_t s = 0;
            for (int i = 0; i < 16; ++i) {
                int16_t v;
                std::memcpy(&v, a + quant::kQ8KOffBsums + 2 * i, 2);
                s += v;
            }
            asum[(size_t)(t * nb + b)] = s;
        }
    ConvPanel pn(nb);
    for (int64_t r = r0; r < r1; r += kPanelRows) {
        const int rows = (int)std::min<int64_t>(kPanelRows, r1 - r);
        fill(r, rows, pn);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8)
            conv_panel_tile<8>(pn, nb, act + (size_t)t * arb, arb, asum.data() + t * nb, rows, y + t * ys + r, ys);
        for (; t + 4 <= nt; t += 4)
            conv_panel_tile<4>(pn, nb, act + (size_t)t * arb, arb, asum.data() + t * nb, rows, y + t * ys + r, ys);
        for (; t < nt; ++t)
            conv_panel_tile<1>(pn, nb, act + (size_t)t * arb, arb, asum.data() + t * nb, rows, y + t * ys + r, ys);
    }
}

}  // namespace
}  // namespace ikllm::cpu
