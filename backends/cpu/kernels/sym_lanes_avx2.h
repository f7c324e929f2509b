// AVX2 batch products in the symmetric batch order (legacy_sym_accum.h, SymBatchAccum) for any
// weights that come as 32 signed 8-bit codes and one scale per block: the legacy symmetric types
// (legacy_avx2.cpp) and Q6_K re-encoded for prompts (kquant_q6k_conv.h, kquant_avx2.cpp).
// Anonymous namespace like the other kernel headers: each ISA file compiles its own copy.
#pragma once
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/fp16.h"
#include "kernels/legacy_sym_accum.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

// Batches (SymBatchAccum order: whole-block sums with offset 127, two float sums per row and
// token). Eight tokens share a register, one per lane: their activation blocks are transposed
// once per call so that step s holds every token's bytes 4s..4s+3, and each of the block's 8
// weight dwords is broadcast against a step (sign/maddubs/madd): after 8 steps every lane holds
// its token's exact block dot, with no horizontal adds; the float sums then run lane-wise with
// the reference's operations (bit-identical to the scalar kernel). Compiled with AVX-VNNI
// (legacy_avxvnni.cpp) each step is one dpbusd on the codes + 128, exact in int32, and the
// block's 128 * sum(w) comes off once: the same integers, so the same bits.
// Rows whose codes come as small unsigned numbers u = v + W::kCodeOffset (W::kDirectSteps > 0,
// legacy_simd.h kDirectU): sum (v + 127) a = sum u a + (127 - kCodeOffset) sum a, so maddubs takes
// the broadcast codes u as they are (no sign step), and kDirectSteps steps of its pair sums add in
// int16 before one madd. The same integers.
template <class W>
constexpr int lane_direct_steps() {
#ifdef __AVXVNNI__
    return 0;
#else
    if constexpr (requires { W::kDirectSteps; }) return W::kDirectSteps;
    else return 0;
#endif
}
template <class W>
constexpr int32_t lane_offset() {
    if constexpr (lane_direct_steps<W>() > 0) return kSymBatchOffset - W::kCodeOffset;
    else return kSymBatchOffset;
}

struct alignas(32) LaneBlock {
    uint8_t q[8][32];  // step s: the 8 tokens' code dwords s (with AVX-VNNI: codes + 128)
    int32_t off[8];    // offset * the tokens' block code sums (the offset part of the dot; lane_offset)
    float da[8];       // the tokens' block scales
    float das[8];      // da * block code sum
};

#ifdef __AVXVNNI__
inline int hsum_epi32_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}
#endif

#ifdef __AVXVNNI__
constexpr bool kLaneCodesBiased = true;
#else
constexpr bool kLaneCodesBiased = false;
#endif

// Tokens [0, nt) as ceil(nt/8) lane groups x nb blocks (missing tokens of the last group: zeros).
// biased: codes + 128 (the symmetric kernels' dpbusd with AVX-VNNI, where the weights are the signed
// side); kernels whose weights are unsigned codes take the activations as they are.
inline void build_lanes(const uint8_t* act, size_t arb, int64_t ne0, int64_t nt, int32_t offset, LaneBlock* out,
                        bool biased = kLaneCodesBiased) {
    const int64_t nb = ne0 / 32, ngr = (nt + 7) / 8;
    for (int64_t gr = 0; gr < ngr; ++gr)
        for (int64_t ib = 0; ib < nb; ++ib) {
            LaneBlock& lb = out[gr * nb + ib];
            __m256i r[8];
            for (int l = 0; l < 8; ++l) {
                const int64_t t = gr * 8 + l;
                if (t >= nt) {
                    r[l] = _mm256_setzero_si256();
                    lb.off[l] = 0;
                    lb.da[l] = lb.das[l] = 0.0f;
                    continue;
                }
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act + (size_t)t * arb, ne0, ib);
                r[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
                if (biased) r[l] = _mm256_xor_si256(r[l], _mm256_set1_epi8((char)0x80));  // codes + 128: dpbusd's unsigned side
                lb.off[l] = offset * (int32_t)ab.sum;
                lb.da[l] = bf16_to_f32(ab.d_bf16);
                lb.das[l] = lb.da[l] * (float)ab.sum;
            }
            // 8x8 dword transpose: rows = tokens, columns = steps.
            __m256i t4[8], t8[8];
            for (int l = 0; l < 8; l += 2) {
                t4[l] = _mm256_unpacklo_epi32(r[l], r[l + 1]);
                t4[l + 1] = _mm256_unpackhi_epi32(r[l], r[l + 1]);
            }
            for (int l = 0; l < 8; l += 4)
                for (int k = 0; k < 2; ++k) {
                    t8[l + k] = _mm256_unpacklo_epi64(t4[l + k], t4[l + 2 + k]);
                    t8[l + 2 + k] = _mm256_unpackhi_epi64(t4[l + k], t4[l + 2 + k]);
                }
            // t8[0..3]: steps 0,2,1,3 (low half) / 4,6,5,7 (high half) of tokens 0-3; t8[4..7]: tokens 4-7.
            const int order[4] = {0, 2, 1, 3};
            for (int k = 0; k < 4; ++k) {
                const __m256i lo = _mm256_permute2x128_si256(t8[k], t8[4 + k], 0x20);
                const __m256i hi = _mm256_permute2x128_si256(t8[k], t8[4 + k], 0x31);
                _mm256_store_si256(reinterpret_cast<__m256i*>(lb.q[order[k]]), lo);
                _mm256_store_si256(reinterpret_cast<__m256i*>(lb.q[4 + order[k]]), hi);
            }
        }
}

// One weight row (W: values(ib) = the 32 signed codes of block ib, scale(ib) = its batch scale)
// against G lane groups (8 tokens each) whose blocks start at lb (nb per group).
template <int G, class W>
void row_tile_lanes(const W& wrow, int64_t nb, const LaneBlock* lb, int ntok, float* y, int64_t ys) {
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 a[G], b[G];
    for (int g = 0; g < G; ++g) a[g] = b[g] = _mm256_setzero_ps();
    alignas(32) int32_t wv[8];
    for (int64_t ib = 0; ib < nb; ++ib) {
        const __m256i v = wrow.values(ib);
        _mm256_store_si256(reinterpret_cast<__m256i*>(wv), v);
        const __m256 dw = _mm256_set1_ps(wrow.scale(ib));
        __m256i isum[G];
#ifdef __AVXVNNI__
        // sum (a + 128) w over the block in int32 (no int16 pair sums to saturate), less 128 sum w
        const __m256i ws = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v), ones16);
        const __m256i corr = _mm256_set1_epi32(-128 * hsum_epi32_avx2(ws));
        for (int g = 0; g < G; ++g)
            isum[g] = _mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb + ib].off)), corr);
        for (int st = 0; st < 8; ++st) {
            const __m256i w = _mm256_set1_epi32(wv[st]);
            for (int g = 0; g < G; ++g)
                isum[g] = _mm256_dpbusd_avx_epi32(isum[g], _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb + ib].q[st])), w);
        }
#else
        constexpr int D = lane_direct_steps<W>();
        if constexpr (D > 0) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(wv), wrow.ucodes(ib));
            for (int g = 0; g < G; ++g) isum[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb + ib].off));
            for (int s0 = 0; s0 < 8; s0 += D) {
                __m256i p[G];
                for (int g = 0; g < G; ++g) p[g] = _mm256_setzero_si256();
                for (int st = s0; st < s0 + D; ++st) {
                    const __m256i w = _mm256_set1_epi32(wv[st]);
                    for (int g = 0; g < G; ++g)
                        p[g] = _mm256_add_epi16(
                            p[g], _mm256_maddubs_epi16(w, _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb + ib].q[st]))));
                }
                for (int g = 0; g < G; ++g) isum[g] = _mm256_add_epi32(isum[g], _mm256_madd_epi16(p[g], ones16));
            }
        } else {
            alignas(32) int32_t wa[8];
            _mm256_store_si256(reinterpret_cast<__m256i*>(wa), _mm256_sign_epi8(v, v));
            for (int g = 0; g < G; ++g) isum[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb + ib].off));
            for (int st = 0; st < 8; ++st) {
                const __m256i w = _mm256_set1_epi32(wv[st]), aw = _mm256_set1_epi32(wa[st]);
                for (int g = 0; g < G; ++g) {
                    const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(lb[g * nb + ib].q[st]));
                    isum[g] = _mm256_add_epi32(isum[g], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(q, w)), ones16));
                }
            }
        }
#endif
        for (int g = 0; g < G; ++g) {
            const LaneBlock& B = lb[g * nb + ib];
            a[g] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_load_ps(B.da)), _mm256_cvtepi32_ps(isum[g]), a[g]);
            b[g] = _mm256_fmadd_ps(dw, _mm256_load_ps(B.das), b[g]);
        }
    }
    for (int g = 0; g < G; ++g) {
        alignas(32) float out[8];
        _mm256_store_ps(out, _mm256_fmadd_ps(_mm256_set1_ps(-(float)kSymBatchOffset), b[g], a[g]));
        for (int l = 0; l < 8 && 8 * g + l < ntok; ++l) y[(8 * g + l) * ys] = out[l];
    }
}

// Rows r0..r1 against nt tokens in lane groups (build_lanes with offset and biased), chunks of
// kLaneRowChunk rows: prepare(ra, rb) readies rows [ra, rb) (Q6_K and the K-quants convert them),
// then each chunk's weights stay in cache while every token group streams past:
// tile(std::integral_constant<int, G>{}, ra, rb, lanes of G groups, ntok, y of the groups' first
// token) for G = 2 groups (G = 1 for a last odd one) computes rows [ra, rb) into y[t * ys + r].
inline constexpr int64_t kLaneRowChunk = 16;
template <class Prepare, class Tile>
void lanes_drive(int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys,
                 int32_t offset, bool biased, Prepare&& prepare, Tile&& tile) {
    constexpr int64_t kRowChunk = kLaneRowChunk;
    const int64_t nb = ne0 / 32, ngr = (nt + 7) / 8;
    std::vector<LaneBlock> lanes((size_t)std::max<int64_t>(1, ngr * nb));
    build_lanes(act, arb, ne0, nt, offset, lanes.data(), biased);
    for (int64_t rc = r0; rc < r1; rc += kRowChunk) {
        const int64_t re = std::min(r1, rc + kRowChunk);
        prepare(rc, re);
        for (int64_t gr = 0; gr < ngr; gr += 2) {
            const int gg = (int)std::min<int64_t>(2, ngr - gr);
            const int ntok = (int)std::min<int64_t>(8 * gg, nt - 8 * gr);
            float* yo = y + 8 * gr * ys;
            if (gg == 2) tile(std::integral_constant<int, 2>{}, rc, re, lanes.data() + gr * nb, ntok, yo);
            else tile(std::integral_constant<int, 1>{}, rc, re, lanes.data() + gr * nb, ntok, yo);
        }
    }
}

// The symmetric types: Rows: prepare(ra, rb), row(r) gives a W for row_tile_lanes.
template <class Rows>
void lanes_matmul(Rows& rows, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt, float* y,
                  int64_t ys) {
    const int64_t nb = ne0 / 32;
    lanes_drive(
        ne0, r0, r1, act, arb, nt, y, ys, lane_offset<decltype(rows.row(r0))>(), kLaneCodesBiased,
        [&](int64_t ra, int64_t rb) { rows.prepare(ra, rb); },
        [&](auto g, int64_t ra, int64_t rb, const LaneBlock* lb, int ntok, float* yo) {
            for (int64_t r = ra; r < rb; ++r) row_tile_lanes<decltype(g)::value>(rows.row(r), nb, lb, ntok, yo + r, ys);
        });
}

}  // namespace
}  // namespace ikllm::cpu
#endif
