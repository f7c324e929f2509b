// AVX2 kernels of the trellis types (quant-formats.md §10) against Q8_2_X4 activations (§15).
// Each 256-weight block of a row is generated into 256 signed bytes (the generator vectorises
// over the 8 (or 4) weights of a code: lane j multiplies the seed by MULT^(j+1)), then dotted
// with every token of the tile via maddubs on |v| and sign-adjusted codes. Sub-block scales
// follow trellis_kt.h (the reference's matmul factors, fp16 rounding for large batches).
#include "kernels/interleaved_common.h"

#include <vector>

#if defined(__AVX2__)
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"
#include "kernels/trellis_kt.h"
#include "kernels/trellis_direct.h"
#include "kernels/sym_lanes_avx2.h"

namespace ikllm::cpu {
namespace {

using namespace quant;

// u_j = bytesum((x0 * mpow_j) & 0x3f3f3f3f) in each 32-bit lane (0..252).
inline __m256i kt_lanes(__m256i x0, __m256i mpow) {
    const __m256i x = _mm256_and_si256(_mm256_mullo_epi32(x0, mpow), _mm256_set1_epi32((int)kKtMask));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, _mm256_set1_epi8(1)), _mm256_set1_epi16(1));  // byte pairs, then pairs of pairs
}

// Four vectors of 8 lane values (in order a, b, c, d) -> 32 signed bytes v = u - 126.
inline __m256i kt_pack(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packus_epi32(a, b), cd = _mm256_packus_epi32(c, d);
    const __m256i abcd = _mm256_packus_epi16(ab, cd);  // dwords: a0-3 b0-3 c0-3 d0-3 a4-7 b4-7 c4-7 d4-7
    const __m256i v = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    return _mm256_sub_epi8(v, _mm256_set1_epi8((char)kKtBias));
}

inline __m256i mpow8() {
    return _mm256_setr_epi32((int)kt_mult_pow(0), (int)kt_mult_pow(1), (int)kt_mult_pow(2), (int)kt_mult_pow(3),
                             (int)kt_mult_pow(4), (int)kt_mult_pow(5), (int)kt_mult_pow(6), (int)kt_mult_pow(7));
}
inline __m256i mpow4x2() {
    return _mm256_setr_epi32((int)kt_mult_pow(0), (int)kt_mult_pow(1), (int)kt_mult_pow(2), (int)kt_mult_pow(3),
                             (int)kt_mult_pow(0), (int)kt_mult_pow(1), (int)kt_mult_pow(2), (int)kt_mult_pow(3));
}

// 32 values of four 8-weight codes c[0..3] (IQ2_KT / IQ3_KT sub-block).
inline __m256i kt_gen32(const uint8_t* codes, __m256i mp) {
    const __m256i off = _mm256_set1_epi32((int)kKtOffset);
    return kt_pack(kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes)), off), mp),
                   kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes + 2)), off), mp),
                   kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes + 4)), off), mp),
                   kt_lanes(_mm256_add_epi32(_mm256_set1_epi32(rd_u16(codes + 6)), off), mp));
}

// A decoded block: v[256] signed weights (|v| <= 126), s[8] float scales per 32 weights.
struct Block {
    alignas(32) int8_t v[256];
    alignas(32) int8_t absv[256];
    float s[8];
};

// IQ1_KT's 13-bit codes of sub-blocks 2c, 2c+1 (groups i = 0..7): ql byte 8 + 8c + i, nibble c / 2
// of qh byte 40 + 4 (2c mod 4) + i, bit 4 + i mod 4 of sh[2c + i / 4].
inline __m256i iq1_kt_codes(const uint8_t* b, int c) {
    const __m256i ql = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 8 + 8 * c)));
    const __m256i qh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 40 + 4 * ((2 * c) % 4))));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * (c / 2)), _mm256_set1_epi32(15));
    const __m256i sh = _mm256_setr_epi32(b[2 * c], b[2 * c], b[2 * c], b[2 * c], b[2 * c + 1], b[2 * c + 1], b[2 * c + 1], b[2 * c + 1]);
    const __m256i top = _mm256_and_si256(_mm256_srlv_epi32(sh, _mm256_setr_epi32(4, 5, 6, 7, 4, 5, 6, 7)), _mm256_set1_epi32(1));
    return _mm256_or_si256(ql, _mm256_or_si256(_mm256_slli_epi32(hi, 8), _mm256_slli_epi32(top, 12)));
}

void decode_iq1_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow8();
    alignas(16) uint16_t c[32];  // code of 8-weight group 4 ib + g
    for (int ch = 0; ch < 4; ++ch) {
        const __m256i cv = iq1_kt_codes(b, ch);
        _mm_store_si128((__m128i*)(c + 8 * ch), _mm_packus_epi32(_mm256_castsi256_si128(cv), _mm256_extracti128_si256(cv, 1)));
    }
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), kt_gen32((const uint8_t*)(c + 4 * ib), mp));
    }
}

void decode_iq2_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow8();
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), kt_gen32(b + 4 + 8 * ib, mp));
    }
}

void decode_iq3_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow8();
    const __m256i qh = _mm256_loadu_si256((const __m256i*)(b + 68));
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
        const __m256i a = _mm256_abs_epi8(kt_gen32(b + 4 + 8 * ib, mp));
        // bit ib of qh[j] is the sign of weight 32ib + j: move it to bit 7, make the byte nonzero
        const __m256i sh = _mm256_sll_epi16(qh, _mm_cvtsi32_si128(7 - ib));
        const __m256i sg = _mm256_or_si256(_mm256_and_si256(sh, _mm256_set1_epi8((char)0x80)), _mm256_set1_epi8(1));
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), _mm256_sign_epi8(a, sg));
    }
}

// The 8 IQ4_KT codes of sub-block ib (§10.5), offset included, one per lane.
inline __m256i kt4_codes(const uint8_t* b, int ib, uint32_t S, uint32_t offset) {
    const __m256i ql = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 32 + 8 * ib)));
    const __m256i qh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b + 96 + 8 * (ib % 4))));
    const __m256i hi4 = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * (ib / 4)), _mm256_set1_epi32(15));
    const __m256i top = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)S), _mm256_setr_epi32(8, 11, 14, 17, 20, 23, 26, 29)),
                                         _mm256_set1_epi32(7));
    const __m256i c = _mm256_or_si256(ql, _mm256_or_si256(_mm256_slli_epi32(hi4, 8), _mm256_slli_epi32(top, 12)));
    return _mm256_add_epi32(c, _mm256_set1_epi32((int)offset));
}

void decode_iq4_kt(const uint8_t* b, float d, Block& o) {
    const __m256i mp = mpow4x2();
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        const uint32_t offset = (S & 1) ? kKtOffsetIq4Odd : kKtOffset;
        const __m256i cv = kt4_codes(b, ib, S, offset);
        __m256i q[4];
        for (int p = 0; p < 4; ++p)
            q[p] = kt_lanes(_mm256_permutevar8x32_epi32(cv, _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                                                                               2 * p + 1, 2 * p + 1, 2 * p + 1)),
                            mp);
        _mm256_store_si256((__m256i*)(o.v + 32 * ib), kt_pack(q[0], q[1], q[2], q[3]));
    }
}

inline float hsum8(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

// acc += sum over the block's 8 sub-blocks of (s_ib * d_act) * dot(v_ib, a_ib); `a` = the token's
// Q8_2_X4 data of this block (two 144-byte groups).
inline __m256 dot_block(const Block& o, const uint8_t* a, __m256 acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int grp = 0; grp < 2; ++grp) {
        const uint8_t* G = a + 144 * grp;
        for (int k = 0; k < 4; ++k) {
            const int ib = 4 * grp + k;
            const __m256i q = _mm256_loadu_si256((const __m256i*)(G + 16 + 32 * k));
            const __m256i v = _mm256_load_si256((const __m256i*)(o.v + 32 * ib));
            const __m256i av = _mm256_load_si256((const __m256i*)(o.absv + 32 * ib));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(q, v)), ones);
            const float da = rd_bf16(G + 2 * k);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(o.s[ib] * da), acc);
        }
    }
    return acc;
}

// ---- Direct form for a few tokens: no decoded block ------------------------------------------
// For IQ1_KT / IQ2_KT / IQ4_KT a weight is (byte sum of t) - 126 with t = (seed * MULT^(j+1)) & mask,
// so a * v = maddubs(t, a in all four bytes) summed over the lane - 126 a: the masked state goes
// straight into the products, against activations rearranged once per call (direct_act). Lane l
// of part k (k = 0..3) holds weight 4 l + k of the 32-weight sub-block, so the four parts summed
// give lane l dot_block's 4-weight integer sum, and the same float operations follow. Two parts
// share an int16 sum (<= 2 x 2 x 63 x 127 = 32 004) before widening.

struct Seeds {
    __m256i x[8];  // per sub-block: lane l's seed (code + offset)
    float s[8];
};

struct MultTables {  // part k: lane l multiplies by MULT^(4 (l mod 2) + k + 1) (G = 8), MULT^(k + 1) (G = 4)
    alignas(32) uint32_t g8[4][8], g4[4][8];
    constexpr MultTables() : g8{}, g4{} {
        for (int k = 0; k < 4; ++k)
            for (int l = 0; l < 8; ++l) {
                g8[k][l] = kt_mult_pow(4 * (l % 2) + k);
                g4[k][l] = kt_mult_pow(k);
            }
    }
};
inline constexpr MultTables kMult{};
inline __m256i mult8(int k) { return _mm256_load_si256((const __m256i*)kMult.g8[k]); }
inline __m256i mult4(int k) { return _mm256_load_si256((const __m256i*)kMult.g4[k]); }

// G = 8: four codes (uint32 lanes 0-3 of c4) -> lane l takes code l / 2.
inline __m256i seeds8(__m128i c4) {
    return _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(c4), _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}

void seeds_iq2_kt(const uint8_t* b, float d, Seeds& o) {
    const __m128i off = _mm_set1_epi32((int)kKtOffset);
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
        o.x[ib] = seeds8(_mm_add_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i*)(b + 4 + 8 * ib))), off));
    }
}

void seeds_iq1_kt(const uint8_t* b, float d, Seeds& o) {
    const __m256i off = _mm256_set1_epi32((int)kKtOffset);
    for (int c = 0; c < 4; ++c) {
        const __m256i cv = _mm256_add_epi32(iq1_kt_codes(b, c), off);
        o.x[2 * c] = seeds8(_mm256_castsi256_si128(cv));
        o.x[2 * c + 1] = seeds8(_mm256_extracti128_si256(cv, 1));
    }
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
}

void seeds_iq4_kt(const uint8_t* b, float d, Seeds& o) {  // G = 4: lane l is code l of the sub-block
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        o.x[ib] = kt4_codes(b, ib, S, (S & 1) ? kKtOffsetIq4Odd : kKtOffset);
    }
}

// One token's activations for the direct form: per 32 codes, four parts (part k lane l: code
// 4 l + k in all four bytes) and -126 x the lane's 4-code sum; the Q8_2_X4 headers stay in act.
constexpr size_t kDirectSubBytes = 5 * 32;
inline void direct_act(const uint8_t* act, int64_t nb, uint8_t* out) {
    const __m256i lanes = _mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C, 0, 0x04040404, 0x08080808, 0x0C0C0C0C);
    const __m256i bias = _mm256_set1_epi8((char)kKtBias), ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b)
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i q = _mm256_loadu_si256((const __m256i*)(act + 288 * b + 144 * (ib / 4) + 16 + 32 * (ib % 4)));
            uint8_t* o = out + ((size_t)b * 8 + ib) * kDirectSubBytes;
            for (int k = 0; k < 4; ++k)  // in-lane shuffle: code 4 l + k stays in l's 128-bit lane
                _mm256_store_si256((__m256i*)(o + 32 * k), _mm256_shuffle_epi8(q, _mm256_add_epi8(lanes, _mm256_set1_epi8((char)k))));
            const __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(bias, q), ones);  // 126 x 4-code sums
            _mm256_store_si256((__m256i*)(o + 128), _mm256_sub_epi32(_mm256_setzero_si256(), sum));
        }
}

template <int G, int TN>
inline void dot_direct(const Seeds& o, const uint8_t* pa, size_t pstride, const uint8_t* a, size_t arb, __m256* acc) {
    const __m256i mask = _mm256_set1_epi32((int)kKtMask), ones = _mm256_set1_epi16(1);
    for (int ib = 0; ib < 8; ++ib) {
        __m256i t[4];
        for (int k = 0; k < 4; ++k)
            t[k] = _mm256_and_si256(_mm256_mullo_epi32(o.x[ib], G == 8 ? mult8(k) : mult4(k)), mask);
        for (int i = 0; i < TN; ++i) {
            const uint8_t* P = pa + (size_t)i * pstride + (size_t)ib * kDirectSubBytes;
            const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(t[0], _mm256_load_si256((const __m256i*)P)),
                                                 _mm256_maddubs_epi16(t[1], _mm256_load_si256((const __m256i*)(P + 32))));
            const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(t[2], _mm256_load_si256((const __m256i*)(P + 64))),
                                                 _mm256_maddubs_epi16(t[3], _mm256_load_si256((const __m256i*)(P + 96))));
            const __m256i p = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(s01, ones), _mm256_madd_epi16(s23, ones)),
                                               _mm256_load_si256((const __m256i*)(P + 128)));
            const float da = rd_bf16(a + (size_t)i * arb + 144 * (ib / 4) + 2 * (ib % 4));
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(o.s[ib] * da), acc[i]);
        }
    }
}

// The direct form's pieces for trellis_direct.h.
template <void (*SeedsOf)(const uint8_t*, float, Seeds&), int G>
struct Direct {
    using Acc = __m256;
    using Seeds = ::ikllm::cpu::Seeds;
    static constexpr size_t kPrepBytes = 8 * kDirectSubBytes;
    static Acc zero() { return _mm256_setzero_ps(); }
    static float hsum(Acc v) { return hsum8(v); }
    static void prep(const uint8_t* act, int64_t nb, uint8_t* out) { direct_act(act, nb, out); }
    static void seeds(const uint8_t* b, float d, Seeds& s) { SeedsOf(b, d, s); }
    template <int TN>
    static void dot(const Seeds& o, const uint8_t* pa, size_t pstride, const uint8_t* a, size_t arb, Acc* acc) {
        dot_direct<G, TN>(o, pa, pstride, a, arb, acc);
    }
};

template <void (*Decode)(const uint8_t*, float, Block&)>
struct KtLaneRows {
    const uint8_t* w;
    size_t wrb, bb;
    int64_t nb;  // 256-weight blocks per row
    bool fp16;
    std::vector<Block> blocks;  // the prepared rows' blocks
    int64_t first = 0;
    void prepare(int64_t ra, int64_t rb) {
        blocks.resize((size_t)((rb - ra) * nb));
        for (int64_t r = ra; r < rb; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            for (int64_t b = 0; b < nb; ++b) {
                Block& o = blocks[(size_t)((r - ra) * nb + b)];
                Decode(row + 4 + (size_t)b * bb, rd_f32(row), o);
                if (fp16)
                    for (float& sc : o.s) sc = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(sc), 0)));
            }
        }
        first = ra;
    }
    struct Row {
        const Block* blk;
        __m256i values(int64_t ib) const { return _mm256_load_si256((const __m256i*)(blk[ib / 8].v + 32 * (ib % 8))); }
        float scale(int64_t ib) const { return blk[ib / 8].s[ib % 8]; }
    };
    Row row(int64_t r) const { return {blocks.data() + (r - first) * nb}; }
};

template <void (*Decode)(const uint8_t*, float, Block&), void (*SeedsOf)(const uint8_t*, float, Seeds&) = nullptr, int G = 8>
void run_kt(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
            int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const size_t bb = (wrb - 4) / (size_t)nb;  // block bytes after the row's float32 scale
    if (nt >= kKtBatchMinTokens) {
        KtLaneRows<Decode> rows{w, wrb, bb, nb, nt >= kKtConvMinTokens, {}, 0};
        return lanes_matmul(rows, ne0, r0, r1, act, arb, nt, y, ys);
    }
    const int64_t tile = std::clamp<int64_t>((int64_t)(196608 / std::max<size_t>(arb, 1)), 1, kKtBatchMinTokens - 1);
    Block blk;
    __m256 acc[kKtBatchMinTokens - 1];
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t tn = std::min(tile, nt - t0);
        if constexpr (SeedsOf != nullptr)
            if (kt_direct_tile<Direct<SeedsOf, G>>(tn, w, wrb, nb, bb, r0, r1, act + (size_t)t0 * arb, arb, y + t0 * ys, ys))
                continue;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            const float d = rd_f32(row);
            for (int64_t t = 0; t < tn; ++t) acc[t] = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; ++b) {
                Decode(row + 4 + (size_t)b * bb, d, blk);
                for (int i = 0; i < 8; ++i) {
                    const __m256i v = _mm256_load_si256((const __m256i*)(blk.v + 32 * i));
                    _mm256_store_si256((__m256i*)(blk.absv + 32 * i), _mm256_abs_epi8(v));
                }
                for (int64_t t = 0; t < tn; ++t) acc[t] = dot_block(blk, act + (size_t)(t0 + t) * arb + 288 * b, acc[t]);
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * ys + r] = hsum8(acc[t]);
        }
    }
}

}  // namespace

KernelTable trellis_kernels_avx2() {
    static const MatmulKernel kKernels[] = {
        {T_IQ1_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq1_kt, seeds_iq1_kt, 8>},
        {T_IQ2_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq2_kt, seeds_iq2_kt, 8>},
        {T_IQ3_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq3_kt>},
        {T_IQ4_KT, Isa::avx2, act_format_q8_2_x4(), run_kt<decode_iq4_kt, seeds_iq4_kt, 4>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable trellis_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
