// Row-interleaved K-quants Q2_K_R4..Q6_K_R4 and IQ4_XS_R8 (docs: quant-formats.md §12.4, §12.5), and
// ikllm's run-time IQ2_K_R8, IQ3_K_R8, Q2_K_R8, Q3_K_R8, Q4_K_R8, Q5_K_R8, Q6_K_R8, IQ4_K_R8 and IQ4_XS_X8 (kquant_r8.h).
// Arithmetic follows the base types exactly; only the byte placement differs.
#include <cstring>

#include "quant/interleaved_impl.h"
#include "quant/kquant_r8.h"
#include "quant/interleaved_layouts.h"
#include "quant/interleaved_values.h"

namespace ikllm::quant {
namespace {

using namespace layout;

// ---- Q2_K_R4: 336 bytes per 256 columns --------------------------------------------------------
void deq_q2_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 336)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k), dmin = rd_f16(src + 8 + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int w = 0; w < QK; ++w) {
                const uint8_t sc = src[16 + 4 * (w / 16) + k];
                const int q = bits(src[80 + r4q2_byte(k, w)], r4q2_shift(w), 2);
                yk[w] = ((d * (float)(sc & 15)) * (float)q) - (dmin * (float)(sc >> 4));
            }
        }
}
void rep_q2_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 336) {
        std::memset(dst, 0, 336);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 84 * ibl;
            std::memcpy(dst + 2 * k, b + 80, 2);
            std::memcpy(dst + 8 + 2 * k, b + 82, 2);
            for (int s = 0; s < 16; ++s) dst[16 + 4 * s + k] = b[s];
            for (int w = 0; w < QK; ++w) dst[80 + r4q2_byte(k, w)] |= (uint8_t)(q2(b + 16, w) << r4q2_shift(w));
        }
    }
}

// ---- Q3_K_R4: 440 bytes ------------------------------------------------------------------------
void deq_q3_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 440)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int w = 0; w < QK; ++w) {
                const int s16 = w / 16, is = 4 * s16 + k;
                const int sc = get_split6(src + 24, src + 8, is) - 32;
                const int h = (w % 32) / 16, t = (w % 16) / 4, i = w % 4;
                const int hbit = bit(src[56 + 16 * (w / 32) + 4 * k + i], 4 * h + t);
                const int q = (bits(src[184 + r4q2_byte(k, w)], r4q2_shift(w), 2) | hbit << 2) - 4;
                yk[w] = (d * (float)sc) * (float)q;
            }
        }
}
void rep_q3_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 440) {
        std::memset(dst, 0, 440);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 110 * ibl;
            std::memcpy(dst + 2 * k, b + 108, 2);
            int sc[16];
            q3k_scales_raw(b + 96, sc);
            for (int s = 0; s < 16; ++s) put_split6(dst + 24, dst + 8, 4 * s + k, sc[s]);
            for (int w = 0; w < QK; ++w) {
                dst[184 + r4q2_byte(k, w)] |= (uint8_t)(q2(b + 32, w) << r4q2_shift(w));
                const int h = (w % 32) / 16, t = (w % 16) / 4, i = w % 4;
                dst[56 + 16 * (w / 32) + 4 * k + i] |= (uint8_t)(hb(b, w) << (4 * h + t));
            }
        }
    }
}

// Q5_K_R4 fifth-bit position beta(o) for NIB4 column offset o = 4 * (c / 4).
constexpr int kBetaQ5K[8] = {0, 2, 1, 3, 4, 6, 5, 7};

// ---- Q4_K_R4 (576 bytes) and Q5_K_R4 (704 bytes) -----------------------------------------------
template <bool Q5>
void deq_q45_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    constexpr int kBlock = Q5 ? 704 : 576, kQuants = Q5 ? 192 : 64;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += kBlock)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k), dmin = rd_f16(src + 8 + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const int is = 4 * ib + k;
                const uint8_t sl = src[32 + is];
                const int sh = nib(src[16 + is % 16], is / 16);
                const int sc = (sl & 15) | (sh & 3) << 4, m = (sl >> 4) | (sh >> 2) << 4;
                const float dl = d * (float)sc, ml = dmin * (float)m;
                for (int c = 0; c < 32; ++c) {
                    int q = nib4_get(src + kQuants + 64 * ib, k, c);
                    if (Q5) q |= bit(src[64 + 16 * ib + 4 * k + c % 4], kBetaQ5K[c / 4]) << 4;
                    yk[32 * ib + c] = (dl * (float)q) - ml;
                }
            }
        }
}
template <bool Q5>
void rep_q45_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    constexpr int kBlock = Q5 ? 704 : 576, kQuants = Q5 ? 192 : 64, kBase = Q5 ? 176 : 144;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += kBlock) {
        std::memset(dst, 0, kBlock);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + kBase * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            std::memcpy(dst + 8 + 2 * k, b + 2, 2);
            int sc[8], m[8];
            kscales(b + 4, sc, m);
            const uint8_t* qs = b + (Q5 ? 48 : 16);
            for (int ib = 0; ib < 8; ++ib) {
                const int is = 4 * ib + k;
                dst[32 + is] = (uint8_t)((sc[ib] & 15) | (m[ib] & 15) << 4);
                dst[16 + is % 16] |= (uint8_t)(((sc[ib] >> 4) | (m[ib] >> 4) << 2) << (4 * (is / 16)));
                for (int c = 0; c < 32; ++c) {
                    const int w = 32 * ib + c;
                    nib4_put(dst + kQuants + 64 * ib, k, c, q4k(qs, w));
                    if (Q5) dst[64 + 16 * ib + 4 * k + c % 4] |= (uint8_t)(hb(b + 16, w) << kBetaQ5K[c / 4]);
                }
            }
        }
    }
}

// ---- Q6_K_R4: 840 bytes ------------------------------------------------------------------------
// High-2-bit pair index gamma for column offset o mod 16 = 0, 4, 8, 12.
constexpr int kGammaQ6K[4] = {0, 2, 1, 3};

void deq_q6_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 840)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib)
                for (int c = 0; c < 32; ++c) {
                    const int o = c & ~3, i = c % 4;
                    const int low4 = nib4_get(src + 328 + 64 * ib, k, c);
                    const uint8_t hbyte = src[72 + 32 * ib + 16 * (o / 16) + 4 * k + i];
                    const int high2 = bits(hbyte, 2 * kGammaQ6K[(o % 16) / 4], 2);
                    const int sc = (int8_t)src[8 + 4 * (2 * ib + o / 16) + k];
                    yk[32 * ib + c] = (d * (float)sc) * (float)((low4 | high2 << 4) - 32);
                }
        }
}
void rep_q6_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 840) {
        std::memset(dst, 0, 840);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 210 * ibl;
            std::memcpy(dst + 2 * k, b + 208, 2);
            for (int s = 0; s < 16; ++s) dst[8 + 4 * s + k] = b[192 + s];
            for (int w = 0; w < QK; ++w) {
                const int cc = w / 128, r = w % 128, t = r / 32, l = r % 32;
                const int low4 = nib(b[64 * cc + 32 * (t % 2) + l], t / 2);
                const int high2 = bits(b[128 + 32 * cc + l], 2 * t, 2);
                const int ib = w / 32, c = w % 32, o = c & ~3, i = c % 4;
                nib4_put(dst + 328 + 64 * ib, k, c, low4);
                dst[72 + 32 * ib + 16 * (o / 16) + 4 * k + i] |= (uint8_t)(high2 << (2 * kGammaQ6K[(o % 16) / 4]));
            }
        }
    }
}

// ---- IQ4_XS_R8: 1088 bytes per 256 columns, 8 rows ---------------------------------------------
void deq_iq4_xs_r8(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 1088)
        for (int k = 0; k < 8; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const float dl = d * (float)(get_split6(src + 32, src + 16, 8 * ib + k) - 32);
                for (int l = 0; l < 4; ++l)
                    for (int i = 0; i < 4; ++i) {
                        const uint8_t q = src[64 + 128 * ib + 32 * l + 4 * k + i];
                        yk[32 * ib + 8 * l + i] = dl * (float)vals::kIq4nl[q & 15];
                        yk[32 * ib + 8 * l + i + 4] = dl * (float)vals::kIq4nl[q >> 4];
                    }
            }
        }
}
void rep_iq4_xs_r8(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 1088) {
        std::memset(dst, 0, 1088);
        for (int k = 0; k < 8; ++k) {
            const uint8_t* b = rows[k] + 136 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            const uint16_t sh = rd_u16(b + 2);
            for (int ib = 0; ib < 8; ++ib) {
                const int ls = nib(b[4 + ib / 2], ib % 2) | bits(sh, 2 * ib, 2) << 4;
                put_split6(dst + 32, dst + 16, 8 * ib + k, ls);
                for (int l = 0; l < 4; ++l)
                    for (int i = 0; i < 4; ++i) {
                        const int w = 32 * ib + 8 * l + i;
                        dst[64 + 128 * ib + 32 * l + 4 * k + i] = (uint8_t)(q4n(b + 8, w) | q4n(b + 8, w + 4) << 4);
                    }
            }
        }
    }
}

// ---- Q4_K_R8, Q6_K_R8, IQ4_K_R8, IQ4_XS_X8 (ikllm's run-time layouts, kquant_r8.h): the plain blocks --------
// Meta: bytes of row metadata (IQ2_KS / IQ3_KS: the fp16 row scale), the 8 rows' at the group's
// start; each block decodes as a one-block plain row of that metadata and the block.
template <uint32_t Base, int PlainBytes, int GroupBytes, R8UnpackBlockFn Unpack, int Meta = 0>
void deq_r8(const uint8_t* src, float* y, int64_t ne0) {
    const DequantGroupFn plain = find_type(Base)->dequant;
    uint8_t blocks[8][Meta + PlainBytes];
    uint8_t* b[8];
    for (int r = 0; r < 8; ++r) {
        std::memcpy(blocks[r], src + Meta * r, Meta);
        b[r] = blocks[r] + Meta;
    }
    src += 8 * Meta;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += GroupBytes) {
        Unpack(src, b);
        for (int r = 0; r < 8; ++r) plain(blocks[r], y + r * ne0 + QK * ibl, QK);
    }
}
template <int PlainBytes, int GroupBytes, R8PackBlockFn Pack, int Meta = 0>
void rep_r8(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int r = 0; r < 8; ++r) std::memcpy(dst + Meta * r, rows[r], Meta);
    dst += 8 * Meta;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += GroupBytes) {
        const uint8_t* b[8];
        for (int r = 0; r < 8; ++r) b[r] = rows[r] + Meta + PlainBytes * ibl;
        Pack(b, dst);
    }
}

const InterleavedCodec kKquantCodecs[] = {
    {T_Q2_K_R4, T_Q2_K, 4, deq_q2_k_r4, rep_q2_k_r4, nullptr},
    {T_Q3_K_R4, T_Q3_K, 4, deq_q3_k_r4, rep_q3_k_r4, nullptr},
    {T_Q4_K_R4, T_Q4_K, 4, deq_q45_k_r4<false>, rep_q45_k_r4<false>, nullptr},
    {T_Q5_K_R4, T_Q5_K, 4, deq_q45_k_r4<true>, rep_q45_k_r4<true>, nullptr},
    {T_Q6_K_R4, T_Q6_K, 4, deq_q6_k_r4, rep_q6_k_r4, nullptr},
    {T_IQ4_XS_R8, T_IQ4_XS, 8, deq_iq4_xs_r8, rep_iq4_xs_r8, nullptr},
    {T_IQ2_K_R8, T_IQ2_K, 8, deq_r8<T_IQ2_K, kIQ2KBlockBytes, kIQ2KR8Bytes, iq2k_r8_unpack_block>,
     rep_r8<kIQ2KBlockBytes, kIQ2KR8Bytes, iq2k_r8_pack_block>, nullptr},
    {T_IQ3_K_R8, T_IQ3_K, 8, deq_r8<T_IQ3_K, kIQ3KBlockBytes, kIQ3KR8Bytes, iq3k_r8_unpack_block>,
     rep_r8<kIQ3KBlockBytes, kIQ3KR8Bytes, iq3k_r8_pack_block>, nullptr},
    {T_Q2_K_R8, T_Q2_K, 8, deq_r8<T_Q2_K, kQ2KBlockBytes, kQ2KR8Bytes, q2k_r8_unpack_block>,
     rep_r8<kQ2KBlockBytes, kQ2KR8Bytes, q2k_r8_pack_block>, nullptr},
    {T_Q3_K_R8, T_Q3_K, 8, deq_r8<T_Q3_K, kQ3KBlockBytes, kQ3KR8Bytes, q3k_r8_unpack_block>,
     rep_r8<kQ3KBlockBytes, kQ3KR8Bytes, q3k_r8_pack_block>, nullptr},
    {T_Q4_K_R8, T_Q4_K, 8, deq_r8<T_Q4_K, kQ4KBlockBytes, kQ4KR8Bytes, q4k_r8_unpack_block>,
     rep_r8<kQ4KBlockBytes, kQ4KR8Bytes, q4k_r8_pack_block>, nullptr},
    {T_Q5_K_R8, T_Q5_K, 8, deq_r8<T_Q5_K, kQ5KBlockBytes, kQ5KR8Bytes, q5k_r8_unpack_block>,
     rep_r8<kQ5KBlockBytes, kQ5KR8Bytes, q5k_r8_pack_block>, nullptr},
    {T_Q6_K_R8, T_Q6_K, 8, deq_r8<T_Q6_K, kQ6KBlockBytes, kQ6KR8Bytes, q6k_r8_unpack_block>,
     rep_r8<kQ6KBlockBytes, kQ6KR8Bytes, q6k_r8_pack_block>, nullptr},
    {T_IQ4_K_R8, T_IQ4_K, 8, deq_r8<T_IQ4_K, kIQ4KBlockBytes, kIQ4KR8Bytes, iq4k_r8_unpack_block>,
     rep_r8<kIQ4KBlockBytes, kIQ4KR8Bytes, iq4k_r8_pack_block>, nullptr},
    {T_IQ4_XS_X8, T_IQ4_XS, 8, deq_r8<T_IQ4_XS, kIQ4XSBlockBytes, kIQ4XSX8Bytes, iq4xs_x8_unpack_block>,
     rep_r8<kIQ4XSBlockBytes, kIQ4XSX8Bytes, iq4xs_x8_pack_block>, nullptr},
    {T_IQ4_KS_R8, T_IQ4_KS, 8, deq_r8<T_IQ4_KS, kIQ4KSBlockBytes, kIQ4KSR8Bytes, iq4ks_r8_unpack_block, kIQ4KSMetaBytes>,
     rep_r8<kIQ4KSBlockBytes, kIQ4KSR8Bytes, iq4ks_r8_pack_block, kIQ4KSMetaBytes>, nullptr},
    {T_IQ2_KL_R8, T_IQ2_KL, 8, deq_r8<T_IQ2_KL, kIQ2KLBlockBytes, kIQ2KLR8Bytes, iq2kl_r8_unpack_block, kIQ23KSMetaBytes>,
     rep_r8<kIQ2KLBlockBytes, kIQ2KLR8Bytes, iq2kl_r8_pack_block, kIQ23KSMetaBytes>, nullptr},
    {T_IQ5_KS_R8, T_IQ5_KS, 8, deq_r8<T_IQ5_KS, kIQ5KSBlockBytes, kIQ5KSR8Bytes, iq5ks_r8_unpack_block, kIQ4KSMetaBytes>,
     rep_r8<kIQ5KSBlockBytes, kIQ5KSR8Bytes, iq5ks_r8_pack_block, kIQ4KSMetaBytes>, nullptr},
    {T_IQ2_KS_R8, T_IQ2_KS, 8, deq_r8<T_IQ2_KS, kIQ2KSBlockBytes, kIQ2KSR8Bytes, iq2ks_r8_unpack_block, kIQ23KSMetaBytes>,
     rep_r8<kIQ2KSBlockBytes, kIQ2KSR8Bytes, iq2ks_r8_pack_block, kIQ23KSMetaBytes>, nullptr},
    {T_IQ3_KS_R8, T_IQ3_KS, 8, deq_r8<T_IQ3_KS, kIQ3KSBlockBytes, kIQ3KSR8Bytes, iq3ks_r8_unpack_block, kIQ23KSMetaBytes>,
     rep_r8<kIQ3KSBlockBytes, kIQ3KSR8Bytes, iq3ks_r8_pack_block, kIQ23KSMetaBytes>, nullptr},
};

}  // namespace

CodecList interleaved_kquant_codecs() { return {kKquantCodecs, sizeof(kKquantCodecs) / sizeof(kKquantCodecs[0])}; }

}  // namespace ikllm::quant
