// Decoding quantized weight rows to bf16 for the AMX tile GEMM (amx_bf16.h): Fill::rows(w, wrb,
// r, n, k0, nk, A) writes columns [k0, k0 + nk) of rows r..r+n-1 (n <= 16) as one 16-row A block,
// [nk/32][16][32] bf16, and zero rows after n (k0 and nk: multiples of the type's block). Values are the type's dequantized floats (same formulas as quant/*.cpp, so they
// equal the scalar dequantizer's up to the rounding order of a product) rounded to bf16 (RNE).
// Three families: the 32-weight legacy types (legacy_simd.h policies), the K-quant / ik-K types
// through the unpackers of kquant_simd.h (a ConvSink gives P = sc * v and the per-16 correction),
// and Q4_K / Q5_K / Q6_K, which have no sink unpacker, decoded here.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/amx_bf16.h"
#include "kernels/kquant_q82.h"
#include "kernels/legacy_simd.h"

namespace ikllm::cpu::amx {

// 32 floats (weights 0..15 in lo, 16..31 in hi) -> 64 bytes of bf16 at dst.
inline void put32(uint16_t* dst, __m512 lo, __m512 hi) {
    _mm512_store_si512((void*)dst, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}
inline void zero_row(uint16_t* dst, int64_t kc) {
    for (int64_t c = 0; c < kc; ++c) _mm512_store_si512((void*)(dst + c * kTileElems), _mm512_setzero_si512());
}
inline __m512 f32_of_i8(__m128i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)); }
inline __m512 f32_of_u8(__m128i v) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v)); }

// The row walk shared by the 256-weight-block decoders: block(row, x, out) for every block x of rows
// r..r+n-1 in columns [k0, k0 + nk) (`meta` header bytes per row, `bytes` per block), out = the
// block's first 32-weight chunk in that row's slot of A (chunk c at out + c * kTileElems); rows
// n..15 are zeroed.
template <class Block>
inline void for_blocks256(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, size_t meta,
                          size_t bytes, uint16_t* A, Block&& block) {
    for (int i = 0; i < kTileRows; ++i) {
        uint16_t* dst = A + i * kChunk;
        if (i >= n) {
            zero_row(dst, nk / kChunk);
            continue;
        }
        const uint8_t* row = w + (size_t)(r + i) * wrb;
        const uint8_t* blocks = row + meta + (size_t)(k0 / 256) * bytes;
        for (int64_t b = 0; b < nk / 256; ++b) block(row, blocks + (size_t)b * bytes, dst + 8 * b * kTileElems);
    }
}

// Legacy 32-weight blocks: w = d * v (+ m for the affine types).
template <class P>
struct LegacyFill {
    static constexpr int32_t kMinTokens = 16;
    static void rows(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, uint16_t* A) {
        const int64_t nb = nk / 32;
        for (int i = 0; i < kTileRows; ++i) {
            uint16_t* dst = A + i * kChunk;
            if (i >= n) {
                zero_row(dst, nb);
                continue;
            }
            const uint8_t* row = w + (size_t)(r + i) * wrb + (k0 / 32) * P::kBytes;
            for (int64_t b = 0; b < nb; ++b) {
                const uint8_t* blk = row + b * P::kBytes;
                const __m256i v = P::values(blk);
                const __m512 d = _mm512_set1_ps(P::scale(blk));
                __m512 lo = _mm512_mul_ps(d, f32_of_i8(_mm256_castsi256_si128(v)));
                __m512 hi = _mm512_mul_ps(d, f32_of_i8(_mm256_extracti128_si256(v, 1)));
                if constexpr (P::kAffine) {
                    const __m512 m = _mm512_set1_ps(P::min(blk));
                    lo = _mm512_add_ps(lo, m);
                    hi = _mm512_add_ps(hi, m);
                }
                put32(dst + b * kTileElems, lo, hi);
            }
        }
    }
};

// K-quant / ik-K types through their SIMD unpackers: w = dw * P + dc * corr (per 16 weights).
template <class U>
struct SinkFill {
    static constexpr int32_t kMinTokens = 32;
    static void rows(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, uint16_t* A) {
        ConvSink<U::uns> sink;
        for_blocks256(w, wrb, r, n, k0, nk, U::meta, U::bytes, A, [&](const uint8_t* row, const uint8_t* x, uint16_t* out) {
            U::unpack(x, U::row_scale(row), sink);
            const __m512 dw = _mm512_set1_ps(sink.dw);
            for (int c = 0; c < 8; ++c) {
                __m512 v[2];
                for (int h = 0; h < 2; ++h) {
                    const int s = 2 * c + h;
                    const __m512 p = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_load_si256((const __m256i*)(sink.P + 16 * s))));
                    v[h] = _mm512_add_ps(_mm512_mul_ps(dw, p), _mm512_set1_ps(sink.dc * (float)sink.cr[s]));
                }
                put32(out + c * kTileElems, v[0], v[1]);
            }
        });
    }
};

// A 64-byte byte-permute table: `period` values repeated (built at compile time).
struct alignas(64) Table64 {
    int8_t v[64];
};
constexpr Table64 repeat64(const int8_t* values, int period) {
    Table64 t{};
    for (int i = 0; i < 64; ++i) t.v[i] = values[i % period];
    return t;
}
inline __m512i load_table(const Table64& t) { return _mm512_load_si512((const void*)t.v); }

// 16 scale nibbles (nibble s % 2 of byte s / 2 of the 8 bytes at p) as 16 dwords, in order.
inline __m512i nibbles16(const uint8_t* p) {
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i b = _mm_loadl_epi64((const __m128i*)p);
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16(b, 4), m4)));
}
// The IQ4_K / IQ5_K 6-bit signed scales of the 16 sub-blocks: low 4 bits nibbles @8, high 2 bits
// at bits 2 (s mod 4) of byte s / 4 @4, minus 32.
inline __m512i k6_scales16(const uint8_t* x) {
    uint32_t h;
    std::memcpy(&h, x + 4, 4);
    const __m512i hb = _mm512_cvtepu8_epi32(
        _mm_shuffle_epi8(_mm_cvtsi32_si128((int)h), _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)));
    const __m512i hi = _mm512_srlv_epi32(hb, _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6));
    return _mm512_sub_epi32(_mm512_or_si512(nibbles16(x + 8), _mm512_slli_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(3)), 4)),
                            _mm512_set1_epi32(32));
}

// IQ4_XS / IQ4_K / IQ4_KS: 4-bit indices (P4N: per 32 weights, low nibbles = weights 0-15, high =
// 16-31) into a 16-value table (iq4k_values: the IQ4_NL set, or the same + 4), 6- or 7-bit scales;
// one byte shuffle per 16 weights instead of the ConvSink round trip (a prompt batch's MoE experts
// see few tokens each, so decoding sets their speed). Scales and value sets: IQ4_K per 16 weights
// (value set from `extra`), IQ4_XS per 32 (always the IQ4_NL set), IQ4_KS per 32 (one byte each:
// (s & 254) - 127 times the row's float scale, value set s & 1).
enum class Iq4Kind { xs, k, ks };
template <Iq4Kind Kind>
struct Iq4Fill {
    static constexpr int32_t kMinTokens = 16;
    static constexpr bool K = Kind == Iq4Kind::k;
    static constexpr int kBytes = K ? 144 : 136;
    static constexpr int kMeta = Kind == Iq4Kind::ks ? 4 : 0;  // row header: float scale
    static constexpr int kQs = K ? 16 : 8;                      // offset of the indices
    // dl[s] = the scale of 16-weight half s; returns the value-set bit of every half.
    // Low scale bits: nibbles (IQ4_K @8, one per s; IQ4_XS @4, one per s / 2); high 2 bits: IQ4_K
    // bytes @4 (bits 2 (s mod 4) of byte s / 4), IQ4_XS the uint16 @2 (bits 2 (s / 2)).
    static uint32_t scales(const uint8_t* x, float d, float* dl) {
        const __m128i m4 = _mm_set1_epi8(15);
        const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        uint16_t e16;
        std::memcpy(&e16, x + 2, 2);
        __m512i ls;
        uint32_t sel = 0;
        if constexpr (Kind == Iq4Kind::ks) {
            const __m512i b = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_loadl_epi64((const __m128i*)x), dup));
            ls = _mm512_sub_epi32(_mm512_and_si512(b, _mm512_set1_epi32(254)), _mm512_set1_epi32(127));
            sel = (uint32_t)_mm512_test_epi32_mask(b, _mm512_set1_epi32(1));
        } else {
            if constexpr (K) {
                ls = k6_scales16(x);
                sel = e16;
            } else {
                uint32_t l;
                std::memcpy(&l, x + 4, 4);
                const __m128i b = _mm_cvtsi32_si128((int)l);
                const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16(b, 4), m4));
                const __m512i lo = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(nib, dup));
                const __m512i hi = _mm512_srlv_epi32(_mm512_set1_epi32(e16),
                                                     _mm512_setr_epi32(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14));
                ls = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(3)), 4)),
                                      _mm512_set1_epi32(32));
            }
        }
        _mm512_store_ps(dl, _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(ls)));
        return sel;
    }
    static void rows(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, uint16_t* A) {
        static constexpr Table64 kTab = repeat64(quant::tables::kIq4k, 32);  // 6-bit index = set * 16 + nibble
        const __m512i tab = load_table(kTab);
        const __m256i m4 = _mm256_set1_epi8(15);
        alignas(64) float dl[16];
        for_blocks256(w, wrb, r, n, k0, nk, kMeta, kBytes, A, [&](const uint8_t* row, const uint8_t* x, uint16_t* out) {
            float d;
            if constexpr (kMeta) {
                std::memcpy(&d, row, 4);
            } else {
                uint16_t h16;
                std::memcpy(&h16, x, 2);
                d = _cvtsh_ss(h16);
            }
            const uint32_t sel = scales(x, d, dl);
            for (int g = 0; g < 4; ++g) {
                // 32 index bytes = chunks 2g, 2g+1; 16-byte lanes of [low nibbles | high nibbles] hold
                // the halves 4g, 4g+2, 4g+1, 4g+3. The value-set bits go to the lanes through a
                // byte mask (no branch: the bits are data, a branch on them mispredicts half the time).
                const __m256i b = _mm256_loadu_si256((const __m256i*)(x + kQs + 32 * g));
                __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(b, m4)),
                                                 _mm256_and_si256(_mm256_srli_epi16(b, 4), m4), 1);
                const uint32_t e = (sel >> (4 * g)) & 15u;
                const uint32_t lanes = (e & 9u) | ((e & 2u) << 1) | ((e & 4u) >> 1);
                const __mmask64 set = _pdep_u64(lanes, 0x0001000100010001ull) * 0xFFFFull;
                idx = _mm512_mask_add_epi8(idx, set, idx, _mm512_set1_epi8(16));
                const __m512i v = _mm512_permutexvar_epi8(idx, tab);
                // (extract indices must be literal constants for clang)
                const __m128i h0 = _mm512_castsi512_si128(v), h2 = _mm512_extracti32x4_epi32(v, 1);
                const __m128i h1 = _mm512_extracti32x4_epi32(v, 2), h3 = _mm512_extracti32x4_epi32(v, 3);
                put32(out + (2 * g) * kTileElems, _mm512_mul_ps(_mm512_set1_ps(dl[4 * g]), f32_of_i8(h0)),
                      _mm512_mul_ps(_mm512_set1_ps(dl[4 * g + 1]), f32_of_i8(h1)));
                put32(out + (2 * g + 1) * kTileElems, _mm512_mul_ps(_mm512_set1_ps(dl[4 * g + 2]), f32_of_i8(h2)),
                      _mm512_mul_ps(_mm512_set1_ps(dl[4 * g + 3]), f32_of_i8(h3)));
            }
        });
    }
};

// IQ2_K / IQ3_K / IQ5_K / Q3_K: indices of 2 / 3 / 5 / 3 bits (P2, P2 + HB, P4K + HB, P2 + HB planes)
// into 4 / 8 / 32 / 8 values, for the ik types a second set (the same shifted) per 16 weights chosen
// by `extra`; 64 weights at a time through one byte permute (vpermb) from the 64-byte table
// [set 0 | set 1] repeated. (Q3_K: q = low 2 bits + 4 high bit - 4, i.e. the values -4..3; Q2_K:
// q = the 2 bits, w = (d sc) q - dmin m with a 4-bit scale and min per 16 weights.)
enum class LutKind { iq2k, iq3k, iq5k, q3k, q2k };
inline constexpr int8_t kQ3Values[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
inline constexpr int8_t kQ2Values[4] = {0, 1, 2, 3};
template <LutKind Kind>
struct LutFill {
    static constexpr int32_t kMinTokens = 16;
    static constexpr bool kQ3 = Kind == LutKind::q3k, kQ2 = Kind == LutKind::q2k;
    static constexpr int kBytes = Kind == LutKind::iq2k ? 76 : Kind == LutKind::iq5k ? 176 : kQ2 ? 84 : 110;
    static constexpr int kSet = Kind == LutKind::iq2k || kQ2 ? 4 : Kind == LutKind::iq5k ? 32 : 8;  // values per set
    static constexpr int kP2 = Kind == LutKind::iq2k ? 12 : Kind == LutKind::iq3k ? 14 : kQ2 ? 16 : 32;  // 2-bit plane
    static constexpr int kD = kQ3 ? 108 : kQ2 ? 80 : 0;  // offset of d (fp16)
    static constexpr int kHb = Kind == LutKind::iq3k ? 78 : Kind == LutKind::iq5k ? 144 : 0;  // high-bit plane
    static __m512i table() {  // [set 0 | set 1] repeated (the K-quants: one set)
        static constexpr Table64 kTab = repeat64(Kind == LutKind::iq2k   ? quant::tables::kIq2nl
                                                 : Kind == LutKind::iq3k ? quant::tables::kIq3nl
                                                 : Kind == LutKind::iq5k ? quant::tables::kIq5nl
                                                 : kQ3                   ? kQ3Values : kQ2Values,
                                                 kQ3 || kQ2 ? kSet : 2 * kSet);
        return load_table(kTab);
    }
    // dl[s] = d * scale of 16-weight sub-block s (Q2_K: also ml[s] = dmin * min).
    static void scales(const uint8_t* x, float d, float* dl, float* ml) {
        __m512i ls;
        if constexpr (kQ2) {  // 16 bytes @0: scale low nibble, min high nibble
            const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)x));
            uint16_t h;
            std::memcpy(&h, x + 82, 2);
            _mm512_store_ps(ml, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(h)), _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4))));
            ls = _mm512_and_si512(b, _mm512_set1_epi32(15));
        } else if constexpr (Kind == LutKind::iq2k) {
            ls = _mm512_sub_epi32(nibbles16(x + 4), _mm512_set1_epi32(8));
        } else if constexpr (Kind == LutKind::iq3k) {  // (2 nibble + 1), negative where bit s of the uint16 @4
            uint16_t sh;
            std::memcpy(&sh, x + 4, 2);
            const __m512i mag = _mm512_add_epi32(_mm512_slli_epi32(nibbles16(x + 6), 1), _mm512_set1_epi32(1));
            ls = _mm512_mask_sub_epi32(mag, (__mmask16)sh, _mm512_setzero_si512(), mag);
        } else if constexpr (kQ3) {  // 12 bytes @96: low 4 bits nibbles of bytes 0-7 (s < 8 low, s >= 8
                                     // high), high 2 bits at bits 2 (s / 4) of byte 8 + s mod 4; minus 32
            const __m128i m4 = _mm_set1_epi8(15);
            const __m128i b = _mm_loadu_si128((const __m128i*)(x + 96 - 4));  // bytes 92..107: the 12 at 4..15
            const __m128i lo8 = _mm_srli_si128(b, 4);
            const __m512i lo = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_and_si128(lo8, m4), _mm_and_si128(_mm_srli_epi16(lo8, 4), m4)));
            const __m512i hb = _mm512_cvtepu8_epi32(
                _mm_shuffle_epi8(b, _mm_setr_epi8(12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15)));
            const __m512i hi = _mm512_srlv_epi32(hb, _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6));
            ls = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(3)), 4)),
                                  _mm512_set1_epi32(32));
        } else {
            ls = k6_scales16(x);
        }
        _mm512_store_ps(dl, _mm512_mul_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(ls)));
    }
    // Set-less indices of weights 64 g .. 64 g + 63 of the block at x.
    static __m512i indices(const uint8_t* x, int g) {
        __m256i lo, hi;
        if constexpr (Kind == LutKind::iq5k) {  // P4K @16: 32 bytes per 64 weights, low nibbles first
            const __m256i m4 = _mm256_set1_epi8(15);
            const __m256i b = _mm256_loadu_si256((const __m256i*)(x + 16 + 32 * g));
            lo = _mm256_and_si256(b, m4);
            hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
        } else {  // P2 @12 / @14: 32 bytes per 128 weights, 2-bit fields per 32
            const __m256i m2 = _mm256_set1_epi8(3);
            const __m256i b = _mm256_loadu_si256((const __m256i*)(x + kP2 + 32 * (g >> 1)));
            const int c = 2 * (g & 1);
            lo = _mm256_and_si256(_mm256_srl_epi16(b, _mm_cvtsi32_si128(2 * c)), m2);
            hi = _mm256_and_si256(_mm256_srl_epi16(b, _mm_cvtsi32_si128(2 * c + 2)), m2);
        }
        if constexpr (Kind != LutKind::iq2k && !kQ2) {  // HB plane: bit j of byte i = weight 32 j + i
            constexpr int bit = Kind == LutKind::iq5k ? 4 : 2;
            const __m256i one = _mm256_set1_epi8(1);
            const __m256i h = _mm256_loadu_si256((const __m256i*)(x + kHb));
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * g)), one), bit));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * g + 1)), one), bit));
        }
        return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    static void rows(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, uint16_t* A) {
        const __m512i tab = table();
        alignas(64) float dl[16], ml[16];
        for_blocks256(w, wrb, r, n, k0, nk, 0, kBytes, A, [&](const uint8_t*, const uint8_t* x, uint16_t* out) {
            uint16_t h16, extra = 0;  // K-quants: d at the end, no value sets
            std::memcpy(&h16, x + kD, 2);
            if constexpr (!kQ3 && !kQ2) std::memcpy(&extra, x + 2, 2);
            scales(x, _cvtsh_ss(h16), dl, ml);
            for (int g = 0; g < 4; ++g) {
                // second value set for the 16-weight sub-blocks whose `extra` bit is set
                const __mmask64 set = _pdep_u64((extra >> (4 * g)) & 15u, 0x0001000100010001ull) * 0xFFFFull;
                __m512i idx = indices(x, g);
                idx = _mm512_mask_add_epi8(idx, set, idx, _mm512_set1_epi8((char)kSet));
                const __m512i v = _mm512_permutexvar_epi8(idx, tab);
                // (extract indices must be literal constants for clang)
                const __m128i part[4] = {_mm512_castsi512_si128(v), _mm512_extracti32x4_epi32(v, 1),
                                         _mm512_extracti32x4_epi32(v, 2), _mm512_extracti32x4_epi32(v, 3)};
                __m512 f[4];
                for (int q = 0; q < 4; ++q) {
                    f[q] = _mm512_mul_ps(_mm512_set1_ps(dl[4 * g + q]), f32_of_i8(part[q]));
                    if constexpr (kQ2) f[q] = _mm512_sub_ps(f[q], _mm512_set1_ps(ml[4 * g + q]));
                }
                put32(out + (2 * g) * kTileElems, f[0], f[1]);
                put32(out + (2 * g + 1) * kTileElems, f[2], f[3]);
            }
        });
    }
};

// Q4_K / Q5_K: w = (d * sc_j) * q - dmin * m_j per 32 weights.
template <bool Five>
struct Q45KFill {
    static constexpr int32_t kMinTokens = 16;
    static void rows(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, uint16_t* A) {
        alignas(32) float D[8], M[8];
        for_blocks256(w, wrb, r, n, k0, nk, 0, Five ? 176 : 144, A, [&](const uint8_t*, const uint8_t* x, uint16_t* out) {
            __m256 vd, vm;
            q45k_scales(x, false, &vd, &vm);
            _mm256_store_ps(D, vd);
            _mm256_store_ps(M, vm);
            for (int g = 0; g < 4; ++g) {
                __m256i c[2];
                q45k_codes<Five>(x, g, c);
                for (int h = 0; h < 2; ++h) {
                    const int j = 2 * g + h;
                    const __m512 d = _mm512_set1_ps(D[j]), m = _mm512_set1_ps(M[j]);
                    const __m512 lo = _mm512_add_ps(_mm512_mul_ps(d, f32_of_u8(_mm256_castsi256_si128(c[h]))), m);
                    const __m512 hi = _mm512_add_ps(_mm512_mul_ps(d, f32_of_u8(_mm256_extracti128_si256(c[h], 1))), m);
                    put32(out + j * kTileElems, lo, hi);
                }
            }
        });
    }
};

// Q6_K: w = (d * sc_s) * (q - 32), 16 scales per 256 weights.
struct Q6KFill {
    static constexpr int32_t kMinTokens = 16;
    static void rows(const uint8_t* w, size_t wrb, int64_t r, int n, int64_t k0, int64_t nk, uint16_t* A) {
        const __m256i m15 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
        alignas(64) float ds[16];
        for_blocks256(w, wrb, r, n, k0, nk, 0, 210, A, [&](const uint8_t*, const uint8_t* x, uint16_t* out) {
            const __m512 d = _mm512_set1_ps(hf(x + 208));
            _mm512_store_ps(ds, _mm512_mul_ps(d, f32_of_i8(_mm_loadu_si128((const __m128i*)(x + 192)))));
            for (int c = 0; c < 2; ++c) {
                const __m256i q0 = ld256(x + 64 * c), q1 = ld256(x + 64 * c + 32), h = ld256(x + 128 + 32 * c);
                const __m256i codes[4] = {
                    _mm256_or_si256(_mm256_and_si256(q0, m15), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4)),
                    _mm256_or_si256(_mm256_and_si256(q1, m15), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q0, 4), m15),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m3), 4)),
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q1, 4), m15),
                                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m3), 4)),
                };
                for (int j = 0; j < 4; ++j) {
                    const int chunk = 4 * c + j;
                    const __m256i v = _mm256_sub_epi8(codes[j], k32);
                    const __m512 lo = _mm512_mul_ps(_mm512_set1_ps(ds[2 * chunk]), f32_of_i8(_mm256_castsi256_si128(v)));
                    const __m512 hi = _mm512_mul_ps(_mm512_set1_ps(ds[2 * chunk + 1]), f32_of_i8(_mm256_extracti128_si256(v, 1)));
                    put32(out + chunk * kTileElems, lo, hi);
                }
            }
        });
    }
};

}  // namespace ikllm::cpu::amx
