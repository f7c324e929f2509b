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
// The K-quant panels with the small-batch kernels' numerics (exact factors: Q4_K / Q5_K below
// kConvMinTokens, Q6_K below kQ6ConvMinTokens) start lower: MoE experts of a prompt batch often
// get 16-31 tokens (qwen3moe pp512: 32 on average), which the small-batch kernel ran at about
// half the panels' rate. Batch-invariant calls stay below it (kInvariantTokens, matmul_rows.h).
constexpr int64_t kP32ExactMinTokens = 16;

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
            // This row's next 8 blocks: the 16 rows are read 8 blocks at a time, a pattern the
            // hardware prefetcher follows poorly (see fill_q6k_exact_panel).
            if (k < rows && b0 + 8 < nb) {
                const char* nx = reinterpret_cast<const char*>(row + (b0 + 8) * P::kBytes);
                const int64_t nbytes = std::min<int64_t>(8, nb - b0 - 8) * P::kBytes;
                for (int64_t l = 0; l < nbytes; l += 64) _mm_prefetch(nx + l, _MM_HINT_T0);
            }
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

// T tokens over R panels (16 R rows) at once: each broadcast activation word feeds R products
// (the broadcasts, not the products, bound the loop on Zen 4). Every row lane runs the same
// operations in the same order whatever R and T are.
template <bool Affine, int R, int T>
void panel_tile(const LegacyPanel* const* pn, int64_t nb, const ActBlockOffsets& ao, const uint8_t* act, size_t arb,
                const int* rows, float* y, int64_t ys) {
    __m512 acc[T][R], acc_off[T][R];
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) acc[t][r] = acc_off[t][r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint32_t oq = ao.qs[b];
        __m512i isum[T][R];
        for (int t = 0; t < T; ++t)
            for (int r = 0; r < R; ++r) isum[t][r] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            __m512i wv[R];
            for (int r = 0; r < R; ++r)
                wv[r] = _mm512_loadu_si512((const void*)(pn[r]->q.data() + (size_t)b * 32 * kP32Rows + 64 * j));
            for (int t = 0; t < T; ++t) {
                int32_t a4;
                std::memcpy(&a4, act + (size_t)t * arb + oq + 4 * j, 4);
                const __m512i av = _mm512_set1_epi32(a4);
                for (int r = 0; r < R; ++r) isum[t][r] = _mm512_dpbusd_epi32(isum[t][r], wv[r], av);
            }
        }
        __m512 dw[R], mw[R];
        for (int r = 0; r < R; ++r) {
            dw[r] = _mm512_loadu_ps(pn[r]->d.data() + (size_t)b * kP32Rows);
            if constexpr (Affine) mw[r] = _mm512_loadu_ps(pn[r]->m.data() + (size_t)b * kP32Rows);
        }
        for (int t = 0; t < T; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            uint16_t dbits;
            int16_t sa;
            std::memcpy(&dbits, a + ao.d[b], 2);
            std::memcpy(&sa, a + ao.s[b], 2);
            const __m512 da = _mm512_set1_ps(bf16_to_f32(dbits));
            for (int r = 0; r < R; ++r) {
                if constexpr (Affine) {
                    acc[t][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t][r]), _mm512_mul_ps(dw[r], da), acc[t][r]);
                    acc[t][r] = _mm512_fmadd_ps(_mm512_mul_ps(mw[r], da), _mm512_set1_ps((float)sa), acc[t][r]);
                } else {  // codes hold v + 128: sum((v + 127) * a) = isum - sum(a)
                    const __m512i s127 = _mm512_sub_epi32(isum[t][r], _mm512_set1_epi32((int32_t)sa));
                    acc[t][r] = _mm512_fmadd_ps(_mm512_mul_ps(dw[r], da), _mm512_cvtepi32_ps(s127), acc[t][r]);
                    acc_off[t][r] = _mm512_fmadd_ps(dw[r], _mm512_set1_ps(bf16_to_f32(dbits) * (float)sa), acc_off[t][r]);
                }
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const __mmask16 m = (__mmask16)((1u << rows[r]) - 1);
        for (int t = 0; t < T; ++t) {
            if constexpr (!Affine)
                acc[t][r] = _mm512_fmadd_ps(_mm512_set1_ps(-(float)kSymBatchOffset), acc_off[t][r], acc[t][r]);
            _mm512_mask_storeu_ps(y + t * ys + r * kP32Rows, m, acc[t][r]);
        }
    }
}

// Rows [r0, r1) x nt tokens through 16-row panels filled by fill(row, rows, panel): kGroup
// panels at a time (tiles of kGroupTokens tokens, then single tokens); the panels left over at
// the end one at a time in tiles of 8, 4 and 1 tokens.
// Group sizes measured on Zen 4 (2048 x 2048, 512 tokens, one thread, interleaved runs; medians):
// 1 x 8 (the old single-panel loop) Q4_K 230 / Q8_0 222 / Q4_0 222 GFLOP/s; 2 x 4 251 / 238 / 241;
// 3 x 4 (affine) 268; the symmetric tiles keep a third accumulator set, so they stay at 2 x 4.
template <bool Affine>
struct PanelGroup {
    static constexpr int kPanels = Affine ? 3 : 2;
    static constexpr int kTokens = 4;
};

template <bool Affine, class Fill>
void panel_gemm(Fill&& fill, int64_t nb, const uint8_t* act, size_t arb, int64_t nt, int64_t r0, int64_t r1, float* y,
                int64_t ys) {
    constexpr int G = PanelGroup<Affine>::kPanels, GT = PanelGroup<Affine>::kTokens;
    const ActBlockOffsets ao(nb * 32);
    std::vector<LegacyPanel> panels((size_t)G, LegacyPanel(nb));
    const LegacyPanel* pn[G];
    for (int i = 0; i < G; ++i) pn[i] = &panels[(size_t)i];
    int64_t r = r0;
    for (; r + G * kP32Rows <= r1; r += G * kP32Rows) {
        int rows[G];
        for (int i = 0; i < G; ++i) {
            rows[i] = kP32Rows;
            fill(r + i * kP32Rows, kP32Rows, panels[(size_t)i]);
        }
        int64_t t = 0;
        for (; t + GT <= nt; t += GT) panel_tile<Affine, G, GT>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t < nt; ++t) panel_tile<Affine, G, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
    }
    for (; r < r1; r += kP32Rows) {
        const int rows[1] = {(int)std::min<int64_t>(kP32Rows, r1 - r)};
        fill(r, rows[0], panels[0]);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8) panel_tile<Affine, 1, 8>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t + 4 <= nt; t += 4) panel_tile<Affine, 1, 4>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t < nt; ++t) panel_tile<Affine, 1, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
    }
}

template <class P>
void panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32;
    panel_gemm<P::kAffine>([&](int64_t r, int rows, LegacyPanel& pn) { fill_panel<P>(w, wrb, r, rows, nb, pn); }, nb, act,
                           arb, nt, r0, r1, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
