// Prompt-batch GEMM for the 32-weight block types on AVX-512 VNNI (included by
// legacy_avx512.cpp after the block policies of legacy_simd.h). For batches of
// kP32MinTokens tokens or more, 16 weight rows are unpacked once per call into a panel:
// per 32-column block, 8 vectors of 16 rows x 4 columns of unsigned bytes (signed values v
// stored as v + 128, affine codes as they are) plus the 16 block scales (and mins). Every
// token then runs over the panel with 4 activation codes broadcast to all 16 row lanes, so one
// vpdpbusd advances 16 rows and no horizontal sums are needed. The +128 is taken back per block
// with the activation code sum of Q8_2_X4. Per block and row the float result is
// (d_w * d_a) * isum (+ (m_w * d_a) * sum_a for affine types), accumulated per row lane.
// Symmetric types follow the reference's batch order instead (legacy_sym_accum.h,
// SymBatchAccum): sums with offset 127 and the offset term in a second accumulator.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/legacy_simd.h"
#include "kernels/legacy_sym_accum.h"
#include "kernels/panel_codes_avx512.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

constexpr int kP32Rows = 16;
// Unpacking a panel costs about as much as 15-30 tokens' dot products over it (Zen 4 / Sapphire
// Rapids): from 24 tokens on the panel is faster (Zen 4, 768 x 2048: Q4_K at 32 tokens 131 against
// 105 GFLOP/s, Q4_1 131 / 90). The threshold stays at the batch forms' common 32 so batch-invariant
// calls (kInvariantTokens = 31, matmul_rows.h) never take it; MoE experts in prompt batches
// often have 32-63 tokens each.
constexpr int64_t kP32MinTokens = 32;

struct LegacyPanel {
    std::vector<uint8_t> q;  // [nb][8][16][4]
    std::vector<float> d, m;  // [nb][16]
    explicit LegacyPanel(int64_t nb) : q((size_t)nb * 32 * kP32Rows), d((size_t)nb * kP32Rows), m((size_t)nb * kP32Rows) {}
};

// Activation blocks of one Q8_2_X4 row layout: byte offsets of codes, scale and sum.
struct ActBlockOffsets {
    std::vector<uint32_t> qs, d, s;
    ActBlockOffsets(int64_t ne0) {
        const int64_t nb = ne0 / 32, ng = nb / 4;
        for (int64_t ib = 0; ib < nb; ++ib) {
            if (ib < 4 * ng) {
                const uint32_t g = (uint32_t)(144 * (ib / 4)), k = (uint32_t)(ib % 4);
                qs.push_back(g + 16 + 32 * k);
                d.push_back(g + 2 * k);
                s.push_back(g + 8 + 2 * k);
            } else {
                const uint32_t b = (uint32_t)(144 * ng + 36 * (ib - 4 * ng));
                qs.push_back(b + 4);
                d.push_back(b);
                s.push_back(b + 2);
            }
        }
    }
};

template <class P>
void fill_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb, LegacyPanel& pn) {
    alignas(64) uint8_t tmp[kP32Rows * 256];
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const int nblk = (int)std::min<int64_t>(8, nb - b0);
        for (int k = 0; k < kP32Rows; ++k) {
            const uint8_t* row = w + (size_t)(r0 + k) * wrb;
            for (int i = 0; i < nblk; ++i) {
                const int64_t b = b0 + i;
                const size_t si = (size_t)b * kP32Rows + k;
                __m256i v;
                if (k < rows) {
                    v = P::values(row + b * P::kBytes);
                    if constexpr (!P::kAffine) v = _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
                    pn.d[si] = P::scale(row + b * P::kBytes);
                    if constexpr (P::kAffine) pn.m[si] = P::min(row + b * P::kBytes);
                    else pn.d[si] = sym_batch_scale(pn.d[si], P::kE8M0);
                } else {  // padding rows: value 0, scale 0
                    v = _mm256_set1_epi8(P::kAffine ? 0 : (char)0x80);
                    pn.d[si] = 0.0f;
                    pn.m[si] = 0.0f;
                }
                _mm256_store_si256((__m256i*)(tmp + 256 * k + 32 * i), v);
            }
        }
        simd512::panel_put_codes(tmp, 256, pn.q.data() + (size_t)b0 * 32 * kP32Rows, 8 * nblk);
    }
}

template <bool Affine, int T>
void panel_tile(const LegacyPanel& pn, int64_t nb, const ActBlockOffsets& ao, const uint8_t* act, size_t arb, int rows,
                float* y, int64_t ys) {
    __m512 acc[T], acc_off[T];
    for (int t = 0; t < T; ++t) acc[t] = acc_off[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* pq = pn.q.data() + (size_t)b * 32 * kP32Rows;
        const uint32_t oq = ao.qs[b];
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            const __m512i wv = _mm512_loadu_si512((const void*)(pq + 64 * j));
            for (int t = 0; t < T; ++t) {
                int32_t a4;
                std::memcpy(&a4, act + (size_t)t * arb + oq + 4 * j, 4);
                isum[t] = _mm512_dpbusd_epi32(isum[t], wv, _mm512_set1_epi32(a4));
            }
        }
        const __m512 dw = _mm512_loadu_ps(pn.d.data() + (size_t)b * kP32Rows);
        __m512 mw;
        if constexpr (Affine) mw = _mm512_loadu_ps(pn.m.data() + (size_t)b * kP32Rows);
        for (int t = 0; t < T; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            uint16_t dbits;
            int16_t sa;
            std::memcpy(&dbits, a + ao.d[b], 2);
            std::memcpy(&sa, a + ao.s[b], 2);
            const __m512 da = _mm512_set1_ps(bf16_to_f32(dbits));
            if constexpr (Affine) {
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, da), acc[t]);
                acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(mw, da), _mm512_set1_ps((float)sa), acc[t]);
            } else {  // codes hold v + 128: sum((v + 127) * a) = isum - sum(a)
                const __m512i s127 = _mm512_sub_epi32(isum[t], _mm512_set1_epi32((int32_t)sa));
                acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(s127), acc[t]);
                acc_off[t] = _mm512_fmadd_ps(dw, _mm512_set1_ps(bf16_to_f32(dbits) * (float)sa), acc_off[t]);
            }
        }
    }
    const __mmask16 m = (__mmask16)((1u << rows) - 1);
    for (int t = 0; t < T; ++t) {
        if constexpr (!Affine) acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(-(float)kSymBatchOffset), acc_off[t], acc[t]);
        _mm512_mask_storeu_ps(y + t * ys, m, acc[t]);
    }
}

template <class P>
void panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32;
    const ActBlockOffsets ao(ne0);
    LegacyPanel pn(nb);
    for (int64_t r = r0; r < r1; r += kP32Rows) {
        const int rows = (int)std::min<int64_t>(kP32Rows, r1 - r);
        fill_panel<P>(w, wrb, r, rows, nb, pn);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8) panel_tile<P::kAffine, 8>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
        for (; t + 4 <= nt; t += 4) panel_tile<P::kAffine, 4>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
        for (; t < nt; ++t) panel_tile<P::kAffine, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + t * ys + r, ys);
    }
}

}  // namespace
}  // namespace ikllm::cpu
