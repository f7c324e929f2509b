// Prompt-batch GEMM for Q4_K / Q5_K on AVX-512 VNNI (included by kquant_avx512.cpp): for batches
// of kP32ExactMinTokens tokens or more, rows are unpacked once per call into the 16-row panels of
// legacy_panel_avx512.h, each 32-weight chunk as unsigned codes with its conv-mode factors
// D_j = fp16(d * sc_j) and M_j = fp16(-dmin * m_j) (kquant_q82.h), then multiplied by the
// affine panel tile: per chunk d_a * D_j * sum q a + d_a * M_j * s_a. Below kConvMinTokens the
// factors are exact (the numerics of the small-batch kernel, in another summation order); from
// there rounded to fp16 like the reference's batch path.
#pragma once
#include "kernels/kquant_q6k_conv.h"
#include "kernels/kquant_q82.h"
#include "kernels/legacy_panel_avx512.h"
#include "kernels/q6k_panel_lanes_avx512.h"

namespace ikllm::cpu {
namespace {

// conv: the factors rounded to fp16 as the reference does for batches of kConvMinTokens or more;
// else exact, as the small-batch kernel computes them.
template <bool Five>
void fill_q45k_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, bool conv, LegacyPanel& pn) {
    constexpr int bytes = Five ? 176 : 144;
    alignas(32) float D[8], M[8];
    alignas(64) uint8_t tmp[kP32Rows * 256];
    for (int64_t b = 0; b < nb256; ++b) {
        for (int k = 0; k < kP32Rows; ++k) {
            uint8_t* codes = tmp + 256 * k;
            if (k < rows) {
                const uint8_t* x = w + (size_t)(r0 + k) * wrb + (size_t)b * bytes;
                if (b + 1 < nb256)  // the next block of this row (see fill_q6k_exact_panel)
                    for (int l = 0; l < bytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(x + bytes + l), _MM_HINT_T0);
                __m256 vd, vm;
                q45k_scales(x, conv, &vd, &vm);
                _mm256_store_ps(D, vd);
                _mm256_store_ps(M, vm);
                for (int g = 0; g < 4; ++g) {
                    __m256i c[2];
                    q45k_codes<Five>(x, g, c);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 64 * g), c[0]);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 64 * g + 32), c[1]);
                }
            } else {
                std::memset(codes, 0, 256);
                for (int j = 0; j < 8; ++j) D[j] = M[j] = 0.0f;
            }
            for (int j = 0; j < 8; ++j) {
                pn.d[(size_t)(8 * b + j) * kP32Rows + k] = D[j];
                pn.m[(size_t)(8 * b + j) * kP32Rows + k] = M[j];
            }
        }
        simd512::panel_put_codes(tmp, 256, pn.q.data() + (size_t)(8 * b) * 32 * kP32Rows, 64);
    }
}

template <bool Five>
void q45k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t arb, int64_t nt, float* y, int64_t ys) {
    if (q82_rows1_fits(nt, ne0)) return q82_rows1<Q45KAvx512<Five>>(w, wrb, ne0, r0, r1, act, y);
    if (nt < kP32ExactMinTokens) return q82_matmul<Q45KAvx512<Five>, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    const int64_t nb = ne0 / 32;
    const bool conv = nt >= kConvMinTokens;
    panel_gemm<true>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q45k_panel<Five>(w, wrb, r, rows, ne0 / 256, conv, pn); }, nb,
                     act, arb, nt, r0, r1, y, ys);
}

// One block of 16 plain Q6_K rows in the lanes of q6k_panel_lanes_avx512.h: the rows' codes
// 0..63 transposed into the panel at q (8 chunks of 8 vectors), their scales as 4 vectors of 4
// scale bytes per row lane (scale s in byte s % 4 of vector s / 4) and d per row lane.
inline void q6k_plain_lane_block(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t b, int64_t nb256, uint8_t* q,
                                 __m512i scv[4], __m512* d) {
    alignas(64) uint8_t tmp[kP32Rows * 256];
    alignas(64) uint8_t sct[kP32Rows * 64] = {};
    alignas(64) float dv[kP32Rows];
    for (int k = 0; k < kP32Rows; ++k) {
        uint8_t* codes = tmp + 256 * k;
        if (k >= rows) {  // padding rows: codes 32, scales 0, d 0
            std::memset(codes, 32, 256);
            dv[k] = 0.0f;
            continue;
        }
        const uint8_t* x = w + (size_t)(r0 + k) * wrb + (size_t)b * 210;
        // The rows are read a block at a time across 16 rows, a pattern the hardware
        // prefetcher does not follow: fetch this row's next block now (47 % of the fill's
        // time waited on the scale load of each block before).
        if (b + 1 < nb256)
            for (int l = 0; l < 210; l += 64) _mm_prefetch(reinterpret_cast<const char*>(x + 210 + l), _MM_HINT_T0);
        __m256i qc[8];
        q6k_chunk_codes(x, qc);
        for (int j = 0; j < 8; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(codes + 32 * j), qc[j]);
        std::memcpy(sct + 64 * k, x + 192, 16);
        dv[k] = h2f(x + 208);
    }
    simd512::panel_put_codes(tmp, 256, q, 64);
    simd512::panel_put_codes(sct, 64, reinterpret_cast<uint8_t*>(scv), 4);
    *d = _mm512_load_ps(dv);
}

// Scale s (0..15) of every row lane from the 4 vectors of q6k_plain_lane_block.
inline __m512i q6k_lane_scale(const __m512i scv[4], int s) {
    return _mm512_srai_epi32(_mm512_sllv_epi32(scv[s >> 2], _mm512_set1_epi32(24 - 8 * (s & 3))), 24);
}

// Every chunk j (= 8 x block + chunk) of the plain rows [r0, r0 + rows) as chunk(j, lanes), its
// codes 0..63 already transposed into the panel codes at q + 512 j (re-encoded there in place).
template <class Chunk>
inline void q6k_plain_lane_chunks(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, uint8_t* q,
                                  Chunk&& chunk) {
    for (int64_t b = 0; b < nb256; ++b) {
        uint8_t* qb = q + (size_t)(8 * b) * 32 * kP32Rows;
        __m512i scv[4];
        Q6LaneChunk c;
        q6k_plain_lane_block(w, wrb, r0, rows, b, nb256, qb, scv, &c.d);
        for (int j = 0; j < 8; ++j) {
            for (int k = 0; k < 8; ++k) c.q[k] = _mm512_loadu_si512(qb + 512 * j + 64 * k);
            c.sc0 = q6k_lane_scale(scv, 2 * j);
            c.sc1 = q6k_lane_scale(scv, 2 * j + 1);
            chunk((size_t)(8 * b + j), c);
        }
    }
}

// Q6_K batches: every 256-weight block re-encoded (kquant_q6k_conv.h) into the symmetric panel
// form of legacy_panel_avx512.h (codes + 128, one scale per 32), multiplied in SymBatchAccum order.
inline void fill_q6k_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, LegacyPanel& pn) {
    q6k_plain_lane_chunks(w, wrb, r0, rows, nb256, pn.q.data(), [&](size_t j, const Q6LaneChunk& c) {
        q6_lane_conv_chunk(c, pn.q.data() + j * 32 * kP32Rows, pn.d.data() + j * kP32Rows);
    });
}

// Q6_K batches of kP32MinTokens .. kQ6ConvMinTokens - 1 tokens (the routed experts of prompt
// batches): exact like the small-batch kernel, which unpacked every row once per 8 tokens (60
// GFLOP/s on one Zen 4 core at 32 tokens, against 190 for Q4_K's panels). Rows are unpacked once
// into 16-row panels of signed codes q - 32, with per row and 16-weight half the float scale
// d * sc and the code sum times 128. Every token's codes enter vpdpbusd as the unsigned operand
// a + 128, taken back per half: sum (a + 128)(q - 32) - 128 sum (q - 32) = sum a (q - 32), exact
// in int32, then scaled in float per half by (d * sc) * d_a.
//
// The panel's arrays: one allocation of a local type. std::vector members would instantiate
// std::vector<float> / <int> constructors here, which an AVX-512 file must not share with
// baseline code (the linker keeps one copy of a weak symbol; isa_symbol_isolation checks it).
template <class T>
struct Q6PanelPart {
    T* p;
    T* data() const { return p; }
};
struct Q6Panel {  // one allocation: see Q6PanelPart
    uint8_t* mem;
    Q6PanelPart<uint8_t> q;        // [nb][8][16][4] codes q - 32 (as signed bytes)
    Q6PanelPart<float> s0, s1;     // [nb][16] d * sc of each 32-block's halves
    Q6PanelPart<int32_t> c0, c1;   // [nb][16] 128 * sum of the half's codes
    explicit Q6Panel(int64_t nb) {
        const size_t nq = (size_t)nb * 32 * kP32Rows, ns = (size_t)nb * kP32Rows;
        mem = new uint8_t[nq + 4 * ns * 4 + 64];
        uint8_t* p = mem;
        q.p = p;
        s0.p = reinterpret_cast<float*>(p += nq);
        s1.p = reinterpret_cast<float*>(p += 4 * ns);
        c0.p = reinterpret_cast<int32_t*>(p += 4 * ns);
        c1.p = reinterpret_cast<int32_t*>(p += 4 * ns);
    }
    ~Q6Panel() { delete[] mem; }
    Q6Panel(const Q6Panel&) = delete;
    Q6Panel& operator=(const Q6Panel&) = delete;
};

inline void fill_q6k_exact_panel(const uint8_t* w, size_t wrb, int64_t r0, int rows, int64_t nb256, Q6Panel& pn) {
    q6k_plain_lane_chunks(w, wrb, r0, rows, nb256, pn.q.data(), [&](size_t j, const Q6LaneChunk& c) {
        const size_t si = j * kP32Rows;
        q6_lane_exact_chunk(c, pn.q.data() + j * 32 * kP32Rows, pn.s0.data() + si, pn.s1.data() + si, pn.c0.data() + si,
                            pn.c1.data() + si);
    });
}

// T tokens over R panels; every row lane runs the same operations in the same order whatever
// R and T are.
template <int R, int T>
void q6_panel_tile(const Q6Panel* const* pn, int64_t nb, const ActBlockOffsets& ao, const uint8_t* act, size_t arb,
                   const int* rows, float* y, int64_t ys) {
    __m512 acc[T][R];
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) acc[t][r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint32_t oq = ao.qs[b];
        __m512 da[T];
        for (int t = 0; t < T; ++t) {
            uint16_t dbits;
            std::memcpy(&dbits, act + (size_t)t * arb + ao.d[b], 2);
            da[t] = _mm512_set1_ps(bf16_to_f32(dbits));
        }
        for (int h = 0; h < 2; ++h) {
            __m512i isum[T][R];
            for (int t = 0; t < T; ++t)
                for (int r = 0; r < R; ++r) isum[t][r] = _mm512_setzero_si512();
            for (int j = 4 * h; j < 4 * h + 4; ++j) {
                __m512i wv[R];
                for (int r = 0; r < R; ++r)
                    wv[r] = _mm512_loadu_si512((const void*)(pn[r]->q.data() + (size_t)b * 32 * kP32Rows + 64 * j));
                for (int t = 0; t < T; ++t) {
                    uint32_t a4;
                    std::memcpy(&a4, act + (size_t)t * arb + oq + 4 * j, 4);
                    const __m512i av = _mm512_set1_epi32((int32_t)(a4 ^ 0x80808080u));  // a + 128, unsigned
                    for (int r = 0; r < R; ++r) isum[t][r] = _mm512_dpbusd_epi32(isum[t][r], av, wv[r]);
                }
            }
            for (int r = 0; r < R; ++r) {
                const size_t si = (size_t)b * kP32Rows;
                const __m512 sw = _mm512_loadu_ps((h ? pn[r]->s1 : pn[r]->s0).data() + si);
                const __m512i cw = _mm512_loadu_si512((const void*)((h ? pn[r]->c1 : pn[r]->c0).data() + si));
                for (int t = 0; t < T; ++t)
                    acc[t][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t][r], cw)),
                                                _mm512_mul_ps(sw, da[t]), acc[t][r]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const __mmask16 m = (__mmask16)((1u << rows[r]) - 1);
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ys + r * kP32Rows, m, acc[t][r]);
    }
}

// The exact panels' GEMM; fill(r, rows, pn) unpacks rows [r, r + rows) (plain or R8 rows).
template <class Fill>
void q6_exact_panel_gemm(Fill&& fill, int64_t nb, const uint8_t* act, size_t arb, int64_t nt, int64_t r0, int64_t r1,
                         float* y, int64_t ys) {
    constexpr int G = 2, GT = 4;
    const ActBlockOffsets ao(nb * 32);
    Q6Panel panels[G] = {Q6Panel(nb), Q6Panel(nb)};
    const Q6Panel* pn[G] = {&panels[0], &panels[1]};
    int64_t r = r0;
    for (; r + G * kP32Rows <= r1; r += G * kP32Rows) {
        const int rows[G] = {kP32Rows, kP32Rows};
        for (int i = 0; i < G; ++i) fill(r + i * kP32Rows, kP32Rows, panels[i]);
        int64_t t = 0;
        for (; t + GT <= nt; t += GT) q6_panel_tile<G, GT>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t < nt; ++t) q6_panel_tile<G, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
    }
    for (; r < r1; r += kP32Rows) {
        const int rows[1] = {(int)std::min<int64_t>(kP32Rows, r1 - r)};
        fill(r, rows[0], panels[0]);
        int64_t t = 0;
        for (; t + 8 <= nt; t += 8) q6_panel_tile<1, 8>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t + 4 <= nt; t += 4) q6_panel_tile<1, 4>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
        for (; t < nt; ++t) q6_panel_tile<1, 1>(pn, nb, ao, act + (size_t)t * arb, arb, rows, y + r + t * ys, ys);
    }
}

inline void q6k_panel_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                             size_t arb, int64_t nt, float* y, int64_t ys) {
    if (q82_rows1_fits(nt, ne0)) return q82_rows1<Q6KAvx512>(w, wrb, ne0, r0, r1, act, y);
    if (nt < kP32ExactMinTokens) return q82_matmul<Q6KAvx512, 8>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    if (nt < kQ6ConvMinTokens)
        return q6_exact_panel_gemm([&](int64_t r, int rows, Q6Panel& pn) { fill_q6k_exact_panel(w, wrb, r, rows, ne0 / 256, pn); },
                                   ne0 / 32, act, arb, nt, r0, r1, y, ys);
    const int64_t nb = ne0 / 32;
    panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_q6k_panel(w, wrb, r, rows, ne0 / 256, pn); }, nb, act,
                      arb, nt, r0, r1, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
