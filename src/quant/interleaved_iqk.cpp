// Row-interleaved ik K / KS types IQ2_K_R4..IQ5_K_R4, IQ4_KS_R4, IQ5_KS_R4
// (docs: quant-formats.md §12.6). Scale slot of (row k, 16-column sub-block s16) is 4*s16 + k;
// extra[k] bit ib / extra[4+k] bit ib select the value set of half 0 / half 1 of sub-block ib.
#include <cstring>

#include "quant/interleaved_impl.h"
#include "quant/interleaved_layouts.h"
#include "quant/interleaved_values.h"

namespace ikllm::quant {
namespace {

using namespace layout;

// IQ5_K_R4 / IQ5_KS_R4 fifth-bit position beta5(o) for NIB4 column offset o = 4 * (c / 4).
constexpr int kBeta5[8] = {0, 4, 1, 5, 2, 6, 3, 7};

inline int r4_xbit(const uint8_t* extra, int k, int w) { return bit(extra[4 * ((w % 32) / 16) + k], w / 32); }
inline void r4_put_xbit(uint8_t* extra, int k, int w, int v) {
    extra[4 * ((w % 32) / 16) + k] |= (uint8_t)(v << (w / 32));
}

// ---- IQ2_K_R4: 304 bytes -----------------------------------------------------------------------
void deq_iq2_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 304)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int w = 0; w < QK; ++w) {
                const int is = 4 * (w / 16) + k;
                const float dl = d * (float)(nib(src[16 + is % 32], is / 32) - 8);
                const int q = bits(src[48 + r4q2_byte(k, w)], r4q2_shift(w), 2);
                yk[w] = dl * (float)vals::kIq2nl[4 * r4_xbit(src + 8, k, w) + q];
            }
        }
}
void rep_iq2_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 304) {
        std::memset(dst, 0, 304);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 76 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            const uint16_t extra = rd_u16(b + 2);
            for (int s = 0; s < 16; ++s) {
                const int is = 4 * s + k;
                dst[16 + is % 32] |= (uint8_t)(nib(b[4 + s / 2], s % 2) << (4 * (is / 32)));
            }
            for (int w = 0; w < QK; ++w) {
                if (w % 16 == 0) r4_put_xbit(dst + 8, k, w, bit(extra, w / 16));
                dst[48 + r4q2_byte(k, w)] |= (uint8_t)(q2(b + 12, w) << r4q2_shift(w));
            }
        }
    }
}

// ---- IQ3_K_R4: 440 bytes -----------------------------------------------------------------------
void deq_iq3_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 440)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int w = 0; w < QK; ++w) {
                const int is = 4 * (w / 16) + k;
                const int mag = 2 * nib(src[24 + is % 32], is / 32) + 1;
                const float dl = (d * (float)mag) * (bit(src[16 + is % 8], is / 8) ? -1.0f : 1.0f);
                const int h = (w % 32) / 16, t = (w % 16) / 4, i = w % 4;
                const int q = bits(src[56 + r4q2_byte(k, w)], r4q2_shift(w), 2) |
                              bit(src[312 + 16 * (w / 32) + 4 * k + i], 4 * h + t) << 2;
                yk[w] = dl * (float)vals::kIq3nl[8 * r4_xbit(src + 8, k, w) + q];
            }
        }
}
void rep_iq3_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 440) {
        std::memset(dst, 0, 440);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 110 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            const uint16_t extra = rd_u16(b + 2), sh = rd_u16(b + 4);
            for (int s = 0; s < 16; ++s) {
                const int is = 4 * s + k;
                dst[24 + is % 32] |= (uint8_t)(nib(b[6 + s / 2], s % 2) << (4 * (is / 32)));
                dst[16 + is % 8] |= (uint8_t)(bit(sh, s) << (is / 8));
            }
            for (int w = 0; w < QK; ++w) {
                if (w % 16 == 0) r4_put_xbit(dst + 8, k, w, bit(extra, w / 16));
                dst[56 + r4q2_byte(k, w)] |= (uint8_t)(q2(b + 14, w) << r4q2_shift(w));
                const int h = (w % 32) / 16, t = (w % 16) / 4, i = w % 4;
                dst[312 + 16 * (w / 32) + 4 * k + i] |= (uint8_t)(hb(b + 78, w) << (4 * h + t));
            }
        }
    }
}

// ---- IQ4_K_R4 (576 bytes) and IQ5_K_R4 (704 bytes) ---------------------------------------------
template <bool Q5>
void deq_iq45_k_r4(const uint8_t* src, float* y, int64_t ne0) {
    constexpr int kBlock = Q5 ? 704 : 576;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += kBlock)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib)
                for (int c = 0; c < 32; ++c) {
                    const int w = 32 * ib + c, is = 4 * (w / 16) + k;
                    const float dl = d * (float)(get_split6(src + 32, src + 16, is) - 32);
                    int q = nib4_get(src + 64 + 64 * ib, k, c);
                    if (Q5) {
                        q |= bit(src[576 + 16 * ib + 4 * k + c % 4], kBeta5[c / 4]) << 4;
                        yk[w] = dl * (float)vals::kIq5nl[32 * r4_xbit(src + 8, k, w) + q];
                    } else {
                        yk[w] = dl * (float)vals::kIq4k[16 * r4_xbit(src + 8, k, w) + q];
                    }
                }
        }
}
template <bool Q5>
void rep_iq45_k_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    constexpr int kBlock = Q5 ? 704 : 576, kBase = Q5 ? 176 : 144;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += kBlock) {
        std::memset(dst, 0, kBlock);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + kBase * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            const uint16_t extra = rd_u16(b + 2);
            for (int s = 0; s < 16; ++s) {
                const int v = nib(b[8 + s / 2], s % 2) | bits(b[4 + s / 4], 2 * (s % 4), 2) << 4;
                put_split6(dst + 32, dst + 16, 4 * s + k, v);
            }
            for (int w = 0; w < QK; ++w) {
                const int ib = w / 32, c = w % 32;
                if (w % 16 == 0) r4_put_xbit(dst + 8, k, w, bit(extra, w / 16));
                if (Q5) {
                    nib4_put(dst + 64 + 64 * ib, k, c, q4k(b + 16, w));
                    dst[576 + 16 * ib + 4 * k + c % 4] |= (uint8_t)(hb(b + 144, w) << kBeta5[c / 4]);
                } else {
                    nib4_put(dst + 64 + 64 * ib, k, c, q4n(b + 16, w));
                }
            }
        }
    }
}

// ---- IQ4_KS_R4 (16 + 544 per 256) and IQ5_KS_R4 (16 + 672 per 256) ----------------------------
template <bool Q5>
void deq_iq45_ks_r4(const uint8_t* src, float* y, int64_t ne0) {
    constexpr int kBlock = Q5 ? 672 : 544;
    float d[4];
    for (int k = 0; k < 4; ++k) d[k] = rd_f32(src + 4 * k);
    src += 16;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += kBlock)
        for (int k = 0; k < 4; ++k) {
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const uint8_t s = src[4 * ib + k];
                const float dl = d[k] * (float)((s & 254) - 127);
                for (int c = 0; c < 32; ++c) {
                    int q = nib4_get(src + 32 + 64 * ib, k, c);
                    if (Q5) {
                        q |= bit(src[544 + 16 * ib + 4 * k + c % 4], kBeta5[c / 4]) << 4;
                        yk[32 * ib + c] = dl * (float)vals::kIq5nl[32 * (s & 1) + q];
                    } else {
                        yk[32 * ib + c] = dl * (float)vals::kIq4k[16 * (s & 1) + q];
                    }
                }
            }
        }
}
template <bool Q5>
void rep_iq45_ks_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    constexpr int kBlock = Q5 ? 672 : 544, kBase = Q5 ? 168 : 136;
    for (int k = 0; k < 4; ++k) std::memcpy(dst + 4 * k, rows[k], 4);
    dst += 16;
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += kBlock) {
        std::memset(dst, 0, kBlock);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 4 + kBase * ibl;
            for (int ib = 0; ib < 8; ++ib) dst[4 * ib + k] = b[ib];
            for (int w = 0; w < QK; ++w) {
                const int ib = w / 32, c = w % 32;
                if (Q5) {
                    nib4_put(dst + 32 + 64 * ib, k, c, q4k(b + 8, w));
                    dst[544 + 16 * ib + 4 * k + c % 4] |= (uint8_t)(hb(b + 136, w) << kBeta5[c / 4]);
                } else {
                    nib4_put(dst + 32 + 64 * ib, k, c, q4n(b + 8, w));
                }
            }
        }
    }
}

const InterleavedCodec kIqkCodecs[] = {
    {T_IQ2_K_R4, T_IQ2_K, 4, deq_iq2_k_r4, rep_iq2_k_r4, nullptr},
    {T_IQ3_K_R4, T_IQ3_K, 4, deq_iq3_k_r4, rep_iq3_k_r4, nullptr},
    {T_IQ4_K_R4, T_IQ4_K, 4, deq_iq45_k_r4<false>, rep_iq45_k_r4<false>, nullptr},
    {T_IQ5_K_R4, T_IQ5_K, 4, deq_iq45_k_r4<true>, rep_iq45_k_r4<true>, nullptr},
    {T_IQ4_KS_R4, T_IQ4_KS, 4, deq_iq45_ks_r4<false>, rep_iq45_ks_r4<false>, nullptr},
    {T_IQ5_KS_R4, T_IQ5_KS, 4, deq_iq45_ks_r4<true>, rep_iq45_ks_r4<true>, nullptr},
};

}  // namespace

CodecList interleaved_iqk_codecs() { return {kIqkCodecs, sizeof(kIqkCodecs) / sizeof(kIqkCodecs[0])}; }

}  // namespace ikllm::quant
