// AVX-512 kernels of the trellis types (quant-formats.md §10) against Q8_2_X4 activations (§15).
// A 256-weight block of a row is generated 16 values per zmm (two codes, lane j multiplies the
// seed by MULT^(j+1)); the byte sum of the masked state is one VNNI dot product with 0x01010101.
// Weights are decoded as unsigned v + 128, flipped to signed v once per block, and multiplied
// with the activation codes stored as a + 128 by one vpdpbusd; 128 * Σ v per lane (once per
// block) is taken off, keeping every 32-weight dot exact. Sub-block scales follow trellis_kt.h.
#include "kernels/interleaved_common.h"

#include <cstring>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"
#include "kernels/trellis_kt.h"

namespace ikllm::cpu {
namespace {

using namespace quant;

// Byte sums (0..252) of (x0 * mpow) & mask per 32-bit lane, narrowed to 16 bytes.
inline __m128i kt_lanes16(__m512i x0, __m512i mpow) {
    const __m512i x = _mm512_and_si512(_mm512_mullo_epi32(x0, mpow), _mm512_set1_epi32((int)kKtMask));
    return _mm512_cvtepi32_epi8(_mm512_dpbusd_epi32(_mm512_setzero_si512(), x, _mm512_set1_epi32(0x01010101)));
}
inline __m256i join(__m128i lo, __m128i hi) { return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1); }

inline __m512i mpow_pattern(int G) {  // lanes j: MULT^((j mod G) + 1)
    alignas(64) uint32_t m[16];
    for (int j = 0; j < 16; ++j) m[j] = kt_mult_pow(j % G);
    return _mm512_load_si512(m);
}
// Decoded block: u = v + 128 (unsigned bytes) and float scales per 32 weights.
struct Block {
    alignas(64) uint8_t u[256];
    float s[8];
};

// IQ2_KT / IQ3_KT: 32 codes of 8 weights; out[i] = byte sums of code i's lanes, in order.
inline void gen8(const uint8_t* codes, uint8_t* out) {
    const __m512i mp = mpow_pattern(8), off = _mm512_set1_epi32((int)kKtOffset);
    for (int h = 0; h < 2; ++h) {
        const __m512i c = _mm512_add_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(codes + 32 * h))), off);
        for (int p = 0; p < 8; ++p) {
            const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1), 1);
            _mm_store_si128((__m128i*)(out + 128 * h + 16 * p), kt_lanes16(_mm512_permutexvar_epi32(idx, c), mp));
        }
    }
}

void decode_iq1_kt(const uint8_t* b, float d, Block& o) {
    alignas(64) uint16_t c[32];  // code of 8-weight group 4 ib + g
    for (int ib = 0; ib < 8; ++ib)
        for (int g = 0; g < 4; ++g)
            c[4 * ib + g] = (uint16_t)(b[8 + 4 * ib + g] | nib(b[40 + 4 * (ib % 4) + g], ib / 4) << 8 | bit(b[ib], 4 + g) << 12);
    gen8((const uint8_t*)c, o.u);
    const __m512i two = _mm512_set1_epi8(2);  // byte sum - 126 + 128
    for (int i = 0; i < 4; ++i)
        _mm512_store_si512(o.u + 64 * i, _mm512_add_epi8(_mm512_load_si512(o.u + 64 * i), two));
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
}

void decode_iq2_kt(const uint8_t* b, float d, Block& o) {
    gen8(b + 4, o.u);
    const __m512i two = _mm512_set1_epi8(2);  // byte sum - 126 + 128
    for (int i = 0; i < 4; ++i)
        _mm512_store_si512(o.u + 64 * i, _mm512_add_epi8(_mm512_load_si512(o.u + 64 * i), two));
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
}

void decode_iq3_kt(const uint8_t* b, float d, Block& o) {
    gen8(b + 4, o.u);
    const __m256i qh = _mm256_loadu_si256((const __m256i*)(b + 68));
    const __m256i bias = _mm256_set1_epi8((char)kKtBias), zero = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
        const __m256i a = _mm256_abs_epi8(_mm256_sub_epi8(_mm256_load_si256((const __m256i*)(o.u + 32 * ib)), bias));
        const __mmask32 neg = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << ib)));
        const __m256i v = _mm256_mask_sub_epi8(a, neg, zero, a);
        _mm256_store_si256((__m256i*)(o.u + 32 * ib), _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)));
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
    const __m512i mp = mpow_pattern(4);
    const __m512i two = _mm512_set1_epi8(2);
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        const uint32_t offset = (S & 1) ? kKtOffsetIq4Odd : kKtOffset;
        const __m512i cv = _mm512_zextsi256_si512(kt4_codes(b, ib, S, offset));
        // lanes 4q..4q+3 take code 4h + q (h = half of the sub-block)
        const __m512i i0 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(4));
        const __m256i v = join(kt_lanes16(_mm512_permutexvar_epi32(i0, cv), mp),
                               kt_lanes16(_mm512_permutexvar_epi32(i1, cv), mp));
        _mm256_store_si256((__m256i*)(o.u + 32 * ib), _mm256_add_epi8(v, _mm512_castsi512_si256(two)));
    }
}

// The block's weights as signed bytes v (the decoders' u = v + 128 flipped) and, per 4-weight
// lane, 128 * their sum: against activation codes stored as a + 128 (unsigned, act_plus128) one
// vpdpbusd gives Σ (a + 128) v, and the lane's 128 Σ v taken off leaves Σ a v exactly. The
// correction depends on the weights only, so it is formed once per block for every token (before:
// a second vpdpbusd per 64 weights and token removed 128 Σ a).
struct SignedBlock {
    alignas(64) int8_t v[256];
    __m512i corr[4];
};
inline void sign_block(const Block& o, SignedBlock& sb) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int i = 0; i < 4; ++i) {
        const __m512i v = _mm512_xor_si512(_mm512_load_si512(o.u + 64 * i), flip);
        _mm512_store_si512(sb.v + 64 * i, v);
        sb.corr[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, v);
    }
}
// Q8_2_X4 rows (144-byte groups: 16-byte header, 128 codes) with every code + 128.
inline void act_plus128(const uint8_t* act, size_t bytes, uint8_t* out) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (size_t g = 0; g + 144 <= bytes; g += 144) {
        std::memcpy(out + g, act + g, 16);
        for (int h = 0; h < 2; ++h)
            _mm512_storeu_si512(out + g + 16 + 64 * h, _mm512_xor_si512(_mm512_loadu_si512(act + g + 16 + 64 * h), flip));
    }
}

// acc += Σ_ib (s_ib * d_act) * dot(v_ib, a_ib), every dot exact. Flipped (sb given): a holds
// codes + 128 (act_plus128); otherwise the plain codes against u = v + 128, the offset removed
// by a second vpdpbusd (cheaper for a token or three: no per-block flip, no activation copy).
template <bool Flip>
inline void dot_block(const Block& o, const SignedBlock* sb, const uint8_t* a, __m512& acc) {
    const __m512i off = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    for (int grp = 0; grp < 2; ++grp) {
        const uint8_t* G = a + 144 * grp;
        const __m128 da = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i*)G)), 16));
        const __m512 c = _mm512_castps128_ps512(_mm_mul_ps(_mm_loadu_ps(o.s + 4 * grp), da));
        for (int h = 0; h < 2; ++h) {
            const __m512i q = _mm512_loadu_si512(G + 16 + 64 * h);
            const __m512i p =
                Flip ? _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, q, _mm512_load_si512(sb->v + 128 * grp + 64 * h)), sb->corr[2 * grp + h])
                   : _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, _mm512_load_si512(o.u + 128 * grp + 64 * h), q), _mm512_dpbusd_epi32(zero, off, q));
            const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * h), _mm256_set1_epi32(2 * h + 1), 1);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx, c), acc);
        }
    }
}

// Tiles of this many tokens or more take the flipped dot (measured one core, 2048 x 2048: +13-20 %
// at 64 tokens, level at 16, slower at 1-4 where the per-block flip and the copy do not pay).
inline constexpr int64_t kKtFlipMinTokens = 32;

template <void (*Decode)(const uint8_t*, float, Block&)>
void run_kt(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
            int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const size_t bb = (wrb - 4) / (size_t)nb;
    const bool conv = nt >= kKtConvMinTokens;
    const int64_t tile = std::clamp<int64_t>((int64_t)(196608 / std::max<size_t>(arb, 1)), 1, 64);
    Block blk;
    SignedBlock sb;
    __m512 acc[64];
    thread_local std::vector<uint8_t> ua;  // the tile's activation rows, codes + 128
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t tn = std::min(tile, nt - t0);
        const bool flip = tn >= kKtFlipMinTokens;
        if (flip) {
            if (ua.size() < (size_t)tn * arb) ua.resize((size_t)tn * arb);
            for (int64_t t = 0; t < tn; ++t) act_plus128(act + (size_t)(t0 + t) * arb, (size_t)nb * 288, ua.data() + (size_t)t * arb);
        }
        const uint8_t* a0 = flip ? ua.data() : act + (size_t)t0 * arb;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            const float d = rd_f32(row);
            for (int64_t t = 0; t < tn; ++t) acc[t] = _mm512_setzero_ps();
            for (int64_t b = 0; b < nb; ++b) {
                Decode(row + 4 + (size_t)b * bb, d, blk);
                if (conv)
                    for (int i = 0; i < 8; ++i) blk.s[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(blk.s[i]), 0)));
                if (flip) {
                    sign_block(blk, sb);
                    for (int64_t t = 0; t < tn; ++t) dot_block<true>(blk, &sb, a0 + (size_t)t * arb + 288 * b, acc[t]);
                } else {
                    for (int64_t t = 0; t < tn; ++t) dot_block<false>(blk, nullptr, a0 + (size_t)t * arb + 288 * b, acc[t]);
                }
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * ys + r] = gti_hsum512(acc[t]);
        }
    }
}

}  // namespace

KernelTable trellis_kernels_avx512() {
    static const MatmulKernel kKernels[] = {
        {T_IQ1_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq1_kt>},
        {T_IQ2_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq2_kt>},
        {T_IQ3_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq3_kt>},
        {T_IQ4_KT, Isa::avx512, act_format_q8_2_x4(), run_kt<decode_iq4_kt>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable trellis_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
