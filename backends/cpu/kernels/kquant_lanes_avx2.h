// Q4_K / Q5_K batches of kQ45KLanesMinTokens tokens or more on AVX2, eight tokens per register:
// the activation blocks are transposed once per call (sym_lanes_avx2.h, build_lanes) and each
// 32-weight chunk's unsigned codes are broadcast four at a time against them, so every lane ends
// with its token's exact chunk dot and no horizontal adds. The float work is then per chunk and
// eight tokens, not per chunk and token (kquant_q82.h's tiles keep eight partial sums per row
// and token), and each lane performs the scalar kernel's operations in its order, in either
// mode (scalar_matmul_q82; conv from kConvMinTokens tokens): the scalar kernel's bits. Included
// by kquant_lanes_avx2.cpp / kquant_lanes_avxvnni.cpp, which are compiled without fused
// multiply-adds beyond the explicit ones (CMakeLists.txt).
#pragma once
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <cstdint>
#include <vector>

#include "kernels/kquant_q82.h"
#include "kernels/sym_lanes_avx2.h"

namespace ikllm::cpu {
namespace {

// One Q4_K / Q5_K block ready for broadcasting: codes of chunk j at bytes 32 j..32 j + 31.
struct alignas(32) Q45KLaneBlock {
    uint32_t q[64];  // the 256 unsigned codes, four per dword
    float D[8];      // conv: fp16(d * sc_j); direct: sc_j
    float M[8];      // conv: fp16(-dmin * m_j); direct: m_j
    float dw, dc;    // direct: d and -dmin
};

template <bool Five, bool Conv>
void q45k_lane_block(const uint8_t* x, Q45KLaneBlock& o) {
    for (int g = 0; g < 4; ++g) {
        __m256i c[2];
        q45k_codes<Five>(x, g, c);
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.q + 16 * g), c[0]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.q + 16 * g + 8), c[1]);
    }
    __m256 D, M;
    if constexpr (Conv) {
        q45k_scales(x, true, &D, &M);
    } else {
        q45k_scale_codes(x, &D, &M);
        o.dw = hf(x);
        o.dc = -hf(x + 2);
    }
    _mm256_store_ps(o.D, D);
    _mm256_store_ps(o.M, M);
}

// Int16 steps of maddubs pair sums before one madd: pair sums reach 2 * 15 * 127 (Q4_K), 2 * 31 *
// 127 (Q5_K), so 8 and 4 steps stay below 32767. With AVX-VNNI every step is one dpbusd (int32).
template <bool Five>
constexpr int q45k_lane_steps() { return Five ? 4 : 8; }

// Rows [0, nrows) (nrows <= kLaneRowChunk) against G lane groups, block by block across the rows,
// so that a block's activations (G x 8 chunks) stay in L1 while every row passes (about 10 % over
// row after row); the rows' sums wait in `sums` between blocks. block(r, b, acc) adds row r's
// 256-weight block b to acc[G]; the results go to y[t * ys + r].
template <int G, class Block>
void lanes_rows_by_block(int nrows, int64_t nb256, int ntok, float* y, int64_t ys, Block&& block) {
    alignas(32) float sums[kLaneRowChunk][G][8] = {};
    for (int64_t b = 0; b < nb256; ++b)
        for (int r = 0; r < nrows; ++r) {
            __m256 acc[G];
            for (int g = 0; g < G; ++g) acc[g] = _mm256_load_ps(sums[r][g]);
            block(r, b, acc);
            for (int g = 0; g < G; ++g) _mm256_store_ps(sums[r][g], acc[g]);
        }
    for (int r = 0; r < nrows; ++r)
        for (int g = 0; g < G; ++g)
            for (int l = 0; l < 8 && 8 * g + l < ntok; ++l) y[(8 * g + l) * ys + r] = sums[r][g][l];
}

// Rows [0, nrows) (nb256 prepared blocks each, row after row) against G lane groups of 8 tokens
// (nb32 chunks per group), into y[t * ys + r], block by block (lanes_rows_by_block).
// Conv (kConvMinTokens tokens or more): acc += d_j * (D_j * dot + M_j * s_j); direct: acc += d_j *
// (d * (sc_j * dot) + (-dmin) * (m_j * s_j)), where sc_j * dot and m_j * s_j are the scalar
// kernel's exact integer sums (below 2^24, so exact as float products too).
template <int G, bool Five, bool Conv>
void q45k_rows_lanes(const Q45KLaneBlock* wb, int nrows, int64_t nb256, const LaneBlock* lb, int ntok, float* y,
                     int64_t ys) {
    const int64_t nb32 = nb256 * 8;
    lanes_rows_by_block<G>(nrows, nb256, ntok, y, ys, [&](int r, int64_t b, __m256* acc) {
        const Q45KLaneBlock& w = wb[r * nb256 + b];
        for (int j = 0; j < 8; ++j) {
            const int64_t ib = 8 * b + j;
            const uint32_t* wq = w.q + 8 * j;
            __m256i dot[G];
            for (int g = 0; g < G; ++g) dot[g] = _mm256_setzero_si256();
#ifdef __AVXVNNI__
            for (int st = 0; st < 8; ++st) {
                const __m256i c = _mm256_set1_epi32((int)wq[st]);
                for (int g = 0; g < G; ++g)
                    dot[g] = _mm256_dpbusd_avx_epi32(dot[g], c, _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb32 + ib].q[st])));
            }
#else
            constexpr int S = q45k_lane_steps<Five>();
            for (int s0 = 0; s0 < 8; s0 += S) {
                __m256i p[G];
                for (int g = 0; g < G; ++g) p[g] = _mm256_setzero_si256();
                for (int st = s0; st < s0 + S; ++st) {
                    const __m256i c = _mm256_set1_epi32((int)wq[st]);
                    for (int g = 0; g < G; ++g)
                        p[g] = _mm256_add_epi16(
                            p[g], _mm256_maddubs_epi16(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb32 + ib].q[st]))));
                }
                for (int g = 0; g < G; ++g) dot[g] = _mm256_add_epi32(dot[g], _mm256_madd_epi16(p[g], _mm256_set1_epi16(1)));
            }
#endif
            const __m256 D = _mm256_set1_ps(w.D[j]), M = _mm256_set1_ps(w.M[j]);
            for (int g = 0; g < G; ++g) {
                const LaneBlock& B = lb[g * nb32 + ib];
                const __m256 s = _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(B.off)));
                __m256 v;
                if constexpr (Conv) {
                    v = _mm256_add_ps(_mm256_mul_ps(D, _mm256_cvtepi32_ps(dot[g])), _mm256_mul_ps(M, s));
                } else {
                    const __m256 isum = _mm256_mul_ps(D, _mm256_cvtepi32_ps(dot[g])), icorr = _mm256_mul_ps(M, s);
                    v = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(w.dw), isum), _mm256_mul_ps(_mm256_set1_ps(w.dc), icorr));
                }
                acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_load_ps(B.da), v));
            }
        }
    });
}

// Rows r0..r1 against nt Q8_2_X4 activation rows (kQ45KLanesMinTokens or more), in the scalar
// kernel's mode for nt (conv from kConvMinTokens tokens).
template <bool Five, bool Conv>
void q45k_lanes_mode(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                     int64_t nt, float* y, int64_t ys) {
    constexpr int bytes = Five ? 176 : 144;
    const int64_t nb256 = ne0 / 256;
    std::vector<Q45KLaneBlock> blocks;
    int64_t first = 0;
    auto prepare = [&](int64_t ra, int64_t rb) {
        blocks.resize((size_t)((rb - ra) * nb256));
        for (int64_t r = ra; r < rb; ++r)
            for (int64_t b = 0; b < nb256; ++b)
                q45k_lane_block<Five, Conv>(w + (size_t)r * wrb + (size_t)b * bytes, blocks[(size_t)((r - ra) * nb256 + b)]);
        first = ra;
    };
    // offset 1: LaneBlock::off holds the tokens' chunk code sums s_j
    lanes_drive(ne0, r0, r1, act, arb, nt, y, ys, 1, false, prepare,
                [&](auto g, int64_t ra, int64_t rb, const LaneBlock* lb, int ntok, float* yo) {
                    q45k_rows_lanes<decltype(g)::value, Five, Conv>(blocks.data() + (ra - first) * nb256, (int)(rb - ra), nb256,
                                                                   lb, ntok, yo + ra, ys);
                });
}
template <bool Five>
void q45k_lanes_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt >= kConvMinTokens) return q45k_lanes_mode<Five, true>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    q45k_lanes_mode<Five, false>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

// ---- Q6_K below its re-encoding threshold (16 .. kQ6ConvMinTokens - 1 tokens) --------------------
// The scalar kernel's direct mode (KQ6K: v = q in 0..63, a scale per 16, correction -32 * sc):
// per chunk j, isum = sum_h sc_h * sum v a and icorr = -32 * sum_h sc_h * s16_h (the halves' code
// sums), acc += d_j * (d * isum + d * icorr). The int16 steps: pair sums reach 2 * 63 * 127, so
// two steps before each madd, which multiplies by the half's scale at once.
struct alignas(32) Q6KLaneBlock {
    uint32_t q[64];  // the 256 codes 0..63, chunk j at bytes 32 j
    int16_t sc[16];  // the scales of the 16-weight halves
    float d;
};

inline void q6k_lane_block(const uint8_t* x, Q6KLaneBlock& o) {
    const __m256i m30 = _mm256_set1_epi8(0x30);
    for (int c = 0; c < 2; ++c) {
        const __m256i ql0 = ld256(x + 64 * c), ql1 = ld256(x + 64 * c + 32), qh = ld256(x + 128 + 32 * c);
        __m256i* out = reinterpret_cast<__m256i*>(o.q + 32 * c);
        _mm256_store_si256(out, _mm256_or_si256(nib_lo(ql0), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)));
        _mm256_store_si256(out + 1, _mm256_or_si256(nib_lo(ql1), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)));
        _mm256_store_si256(out + 2, _mm256_or_si256(nib_hi(ql0), _mm256_and_si256(qh, m30)));
        _mm256_store_si256(out + 3, _mm256_or_si256(nib_hi(ql1), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(o.sc), _mm256_cvtepi8_epi16(ld128(x + 192)));
    o.d = hf(x + 208);
}

// The tokens' code sums of each 16-weight half: per group and chunk one dword per token, the
// first half's sum in its low int16, the second's in its high one (from the transposed codes:
// steps 0-3 are the first half).
inline void lane_half_sums(const LaneBlock* lb, int64_t n, __m256i* out) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < n; ++i) {
        __m256i h[2];
        for (int k = 0; k < 2; ++k) {
            __m256i p = _mm256_setzero_si256();
            for (int st = 4 * k; st < 4 * k + 4; ++st)
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(ones8, _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[i].q[st]))));
            h[k] = _mm256_madd_epi16(p, ones16);  // (no bias: the codes as they are)
        }
        out[i] = _mm256_or_si256(_mm256_and_si256(h[0], _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(h[1], 16));
    }
}

// Rows [0, nrows) against G lane groups, block by block across the rows (as q45k_rows_lanes).
template <int G>
void q6k_rows_lanes(const Q6KLaneBlock* wb, int nrows, int64_t nb256, const LaneBlock* lb, const __m256i* hs, int ntok,
                    float* y, int64_t ys) {
    const int64_t nb32 = nb256 * 8;
    lanes_rows_by_block<G>(nrows, nb256, ntok, y, ys, [&](int r, int64_t b, __m256* acc) {
        const Q6KLaneBlock& w = wb[r * nb256 + b];
        const __m256 d = _mm256_set1_ps(w.d);
        for (int j = 0; j < 8; ++j) {
            const int64_t ib = 8 * b + j;
            const uint32_t* wq = w.q + 8 * j;
            __m256i isum[G];
            for (int g = 0; g < G; ++g) isum[g] = _mm256_setzero_si256();
            for (int s0 = 0; s0 < 8; s0 += 2) {
                const __m256i sc = _mm256_set1_epi16(w.sc[2 * j + s0 / 4]);
                const __m256i c0 = _mm256_set1_epi32((int)wq[s0]), c1 = _mm256_set1_epi32((int)wq[s0 + 1]);
                for (int g = 0; g < G; ++g) {
                    const LaneBlock& B = lb[g * nb32 + ib];
                    const __m256i p = _mm256_add_epi16(
                        _mm256_maddubs_epi16(c0, _mm256_load_si256(reinterpret_cast<const __m256i*>(B.q[s0]))),
                        _mm256_maddubs_epi16(c1, _mm256_load_si256(reinterpret_cast<const __m256i*>(B.q[s0 + 1]))));
                    isum[g] = _mm256_add_epi32(isum[g], _mm256_madd_epi16(p, sc));
                }
            }
            const __m256i scp = _mm256_set1_epi32((int)(((uint32_t)(uint16_t)w.sc[2 * j + 1] << 16) | (uint16_t)w.sc[2 * j]));
            for (int g = 0; g < G; ++g) {
                const __m256i c = _mm256_madd_epi16(_mm256_load_si256(hs + g * nb32 + ib), scp);
                const __m256i icorr = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(c, 5));
                const __m256 v =
                    _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[g])), _mm256_mul_ps(d, _mm256_cvtepi32_ps(icorr)));
                acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(_mm256_load_ps(lb[g * nb32 + ib].da), v));
            }
        }
    });
}

inline void q6k_lanes_direct(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                             size_t arb, int64_t nt, float* y, int64_t ys) {
    const int64_t nb256 = ne0 / 256, nb32 = ne0 / 32;
    std::vector<Q6KLaneBlock> blocks;
    // lane_half_sums of every group (a struct: std::vector<__m256i> drops the vector type's attributes)
    struct HalfSums {
        __m256i v;
    };
    std::vector<HalfSums> hs((size_t)(((nt + 7) / 8) * nb32));
    const LaneBlock* lanes = nullptr;                           // group 0 (the first tile's)
    int64_t first = 0;
    auto prepare = [&](int64_t ra, int64_t rb) {
        blocks.resize((size_t)((rb - ra) * nb256));
        for (int64_t r = ra; r < rb; ++r)
            for (int64_t b = 0; b < nb256; ++b)
                q6k_lane_block(w + (size_t)r * wrb + (size_t)b * 210, blocks[(size_t)((r - ra) * nb256 + b)]);
        first = ra;
    };
    lanes_drive(ne0, r0, r1, act, arb, nt, y, ys, 1, false, prepare,
                [&](auto g, int64_t ra, int64_t rb, const LaneBlock* lb, int ntok, float* yo) {
                    constexpr int G = decltype(g)::value;
                    if (!lanes) lanes = lb;
                    __m256i* h = &hs[(size_t)(lb - lanes)].v;  // (lanes and sums: nb32 per group)
                    if (ra == r0) lane_half_sums(lb, G * nb32, h);  // the first row chunk meets every group
                    q6k_rows_lanes<G>(blocks.data() + (ra - first) * nb256, (int)(rb - ra), nb256, lb, h, ntok, yo + ra, ys);
                });
}

}  // namespace

// The entry points of kquant_lanes.h, named for the including file's ISA.
#ifdef __AVXVNNI__
#define IKLLM_Q45K_LANES_FN(name) name##_avxvnni
#else
#define IKLLM_Q45K_LANES_FN(name) name##_avx2
#endif
void IKLLM_Q45K_LANES_FN(q4k_lanes_matmul)(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1,
                                           const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    q45k_lanes_matmul<false>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
void IKLLM_Q45K_LANES_FN(q5k_lanes_matmul)(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1,
                                           const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    q45k_lanes_matmul<true>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
void IKLLM_Q45K_LANES_FN(q6k_lanes_matmul)(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1,
                                           const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    q6k_lanes_direct(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
#undef IKLLM_Q45K_LANES_FN
}  // namespace ikllm::cpu
#endif
