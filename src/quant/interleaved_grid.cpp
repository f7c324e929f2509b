// Row-interleaved grid i-quants IQ2_XXS_R4, IQ2_XS_R4, IQ2_S_R4, IQ3_XXS_R4, IQ3_S_R4, the own
// 4-row formats IQ1_S_R4 / IQ1_M_R4, and IQ2_BN_R4 (docs: quant-formats.md §12.7, §12.8).
#include <cstring>

#include "quant/grid_quantize.h"
#include "quant/grid_tables.h"
#include "quant/interleaved_impl.h"
#include "quant/interleaved_layouts.h"

namespace ikllm::quant {
namespace {



// ---- IQ2_XXS_R4: 264 bytes; sas word byte l = (tau_l << 1) | scale bit l ----------------------
inline int sas_scale(uint32_t a) { return (int)((a & 1) | (a >> 7 & 2) | (a >> 14 & 4) | (a >> 21 & 8)); }

void deq_iq2_xxs_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 264)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t a = rd_u32(src + 8 + 4 * (4 * ib + k));
                const float dl = (0.125f * d) * (float)(2 * sas_scale(a) + 1);
                for (int l = 0; l < 4; ++l) {
                    const uint8_t tau = (uint8_t)((a >> (8 * l)) & 0xff) >> 1;
                    put8(yk + 32 * ib + 8 * l, dl, kIq2xxsGrid[src[136 + 16 * ib + 4 * k + l]], unscramble_sign(tau));
                }
            }
        }
}
void rep_iq2_xxs_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 264)
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 66 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            for (int ib = 0; ib < 8; ++ib) {
                const uint8_t* q = b + 2 + 8 * ib;
                const uint32_t a = rd_u32(q + 4), s = a >> 28;
                uint32_t out = 0;
                for (int l = 0; l < 4; ++l) {
                    out |= (uint32_t)(kScrambledSign[bits(a, 7 * l, 7)] << 1 | bit(s, l)) << (8 * l);
                    dst[136 + 16 * ib + 4 * k + l] = q[l];
                }
                wr_u32(dst + 8 + 4 * (4 * ib + k), out);
            }
        }
}

// ---- IQ2_XS_R4: 296 bytes ----------------------------------------------------------------------
void deq_iq2_xs_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 296)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const uint8_t sc = src[264 + 4 * ib + k];
                for (int l = 0; l < 4; ++l) {
                    const uint16_t v = rd_u16(src + 8 + 2 * (16 * ib + 4 * k + l));
                    const float dl = (0.125f * d) * (float)(2 * nib(sc, l / 2) + 1);
                    put8(yk + 32 * ib + 8 * l, dl, kIq2xsGrid[v & 511], unscramble_sign((uint8_t)(v >> 9)));
                }
            }
        }
}
void rep_iq2_xs_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 296)
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 74 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            for (int ib = 0; ib < 8; ++ib) {
                dst[264 + 4 * ib + k] = b[66 + ib];
                for (int l = 0; l < 4; ++l) {
                    const uint16_t v = rd_u16(b + 2 + 2 * (4 * ib + l));
                    wr_u16(dst + 8 + 2 * (16 * ib + 4 * k + l), (uint16_t)((v & 511) | kScrambledSign[v >> 9] << 9));
                }
            }
        }
}

// ---- IQ2_S_R4: 328 bytes -----------------------------------------------------------------------
void deq_iq2_s_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 328)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const uint8_t sc = src[296 + 4 * ib + k], qh = src[136 + 4 * ib + k];
                for (int l = 0; l < 4; ++l) {
                    const int idx = src[8 + 16 * ib + 4 * k + l] | bits(qh, 2 * l, 2) << 8;
                    const float dl = (0.125f * d) * (float)(2 * nib(sc, l / 2) + 1);
                    put8(yk + 32 * ib + 8 * l, dl, kIq2sGrid[idx], src[168 + 16 * ib + 4 * k + l]);
                }
            }
        }
}
void rep_iq2_s_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 328)
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 82 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            for (int ib = 0; ib < 8; ++ib) {
                dst[136 + 4 * ib + k] = b[66 + ib];
                dst[296 + 4 * ib + k] = b[74 + ib];
                for (int l = 0; l < 4; ++l) {
                    dst[8 + 16 * ib + 4 * k + l] = b[2 + 4 * ib + l];
                    dst[168 + 16 * ib + 4 * k + l] = b[34 + 4 * ib + l];
                }
            }
        }
}

// ---- IQ3_XXS_R4: 392 bytes ---------------------------------------------------------------------
void deq_iq3_xxs_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 392)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t a = rd_u32(src + 8 + 4 * (4 * ib + k));
                const float dl = (0.25f * d) * (float)(2 * sas_scale(a) + 1);
                for (int l = 0; l < 4; ++l) {
                    const uint8_t* g = src + 136 + 32 * ib + 8 * k + 2 * l;
                    const uint64_t grid = (uint64_t)kIq3xxsGrid[g[0]] | (uint64_t)kIq3xxsGrid[g[1]] << 32;
                    const uint8_t tau = (uint8_t)((a >> (8 * l)) & 0xff) >> 1;
                    put8(yk + 32 * ib + 8 * l, dl, grid, unscramble_sign(tau));
                }
            }
        }
}
void rep_iq3_xxs_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 392)
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 98 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t a = rd_u32(b + 66 + 4 * ib), s = a >> 28;
                uint32_t out = 0;
                for (int l = 0; l < 4; ++l)
                    out |= (uint32_t)(kScrambledSign[bits(a, 7 * l, 7)] << 1 | bit(s, l)) << (8 * l);
                wr_u32(dst + 8 + 4 * (4 * ib + k), out);
                for (int m = 0; m < 8; ++m) dst[136 + 32 * ib + 8 * k + m] = b[2 + 8 * ib + m];
            }
        }
}

// ---- IQ3_S_R4: 440 bytes -----------------------------------------------------------------------
void deq_iq3_s_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, src += 440)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + QK * ibl;
            for (int ib = 0; ib < 8; ++ib) {
                const int l = 4 * ib + k;
                const float dl = d * (float)(1 + 2 * nib(src[424 + l % 16], l / 16));
                const uint8_t qh = src[264 + 4 * ib + k];
                for (int m = 0; m < 8; ++m) {
                    const int idx = src[8 + 32 * ib + 8 * (m % 4) + 4 * (m / 4) + k] | bit(qh, m) << 8;
                    const uint32_t g = kIq3sGrid[idx];
                    for (int j = 0; j < 4; ++j) {
                        yk[32 * ib + 4 * m + j] =
                            neg_if(dl * (float)grid_byte(g, j), (uint32_t)bit(src[296 + 16 * ib + 4 * k + j], m));
                    }
                }
            }
        }
}
void rep_iq3_s_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ibl = 0; ibl < ne0 / QK; ++ibl, dst += 440) {
        std::memset(dst, 0, 440);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 110 * ibl;
            std::memcpy(dst + 2 * k, b, 2);
            for (int ib = 0; ib < 8; ++ib) {
                const int l = 4 * ib + k;
                dst[424 + l % 16] |= (uint8_t)(nib(b[106 + ib / 2], ib % 2) << (4 * (l / 16)));
                dst[264 + 4 * ib + k] = b[66 + ib];
                for (int m = 0; m < 8; ++m) {
                    dst[8 + 32 * ib + 8 * (m % 4) + 4 * (m / 4) + k] = b[2 + 8 * ib + m];
                    const uint8_t s = b[74 + 4 * ib + m / 2];
                    for (int j = 0; j < 4; ++j)
                        dst[296 + 16 * ib + 4 * k + j] |= (uint8_t)(bit(s, 4 * (m % 2) + j) << m);
                }
            }
        }
    }
}

// ---- IQ1_S_R4 (own format): 4 fp16 d_k, then 24 bytes per 32 columns -------------------------

void deq_iq1_s_r4(const uint8_t* src, float* y, int64_t ne0) {
    float d[4];
    for (int k = 0; k < 4; ++k) d[k] = rd_f16(src + 2 * k);
    src += 8;
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 24)
        for (int k = 0; k < 4; ++k) {
            const uint16_t h = rd_u16(src + 16 + 2 * k);
            const float dl = d[k] * (float)(2 * bits(h, 12, 3) + 1);
            const float delta = bit(h, 15) ? -0.125f : 0.125f;
            for (int i = 0; i < 4; ++i) {
                const int idx = src[4 * i + k] | bits(h, 3 * i, 3) << 8;
                put8_iq1(y + k * ne0 + 32 * ib + 8 * i, dl, kIq1sGrid[idx], delta);
            }
        }
}

// Quantizer: each row is encoded on its own (grid_quantize.cpp), then the 4 rows are interleaved.
void q_iq1_s_r4(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    Iq1R4RowCodes r[4];
    for (int k = 0; k < 4; ++k) {
        quantize_iq1_s_r4_row(x + k * ne0, ne0, imatrix, &r[k]);
        wr_u16(dst + 2 * k, r[k].d16);
    }
    dst += 8;
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 24)
        for (int k = 0; k < 4; ++k) {
            uint16_t h = (uint16_t)(r[k].scale[ib] << 12 | (r[k].neg_delta[4 * ib] ? 0x8000 : 0));
            for (int i = 0; i < 4; ++i) {
                const uint16_t idx = r[k].idx[4 * ib + i];
                dst[4 * i + k] = (uint8_t)(idx & 255);
                h |= (uint16_t)((idx >> 8) << (3 * i));
            }
            wr_u16(dst + 16 + 2 * k, h);
        }
}

// ---- IQ1_M_R4 (own format): 4 fp16 d_k, then 28 bytes per 32 columns --------------------------
void deq_iq1_m_r4(const uint8_t* src, float* y, int64_t ne0) {
    float d[4];
    for (int k = 0; k < 4; ++k) d[k] = rd_f16(src + 2 * k);
    src += 8;
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 28)
        for (int k = 0; k < 4; ++k) {
            const uint8_t sc = src[24 + k];
            for (int i = 0; i < 2; ++i) {
                const float dl = d[k] * (float)nib(sc, i);
                const uint8_t hq = src[16 + 4 * i + k];
                float* yy = y + k * ne0 + 32 * ib + 16 * i;
                put8_iq1(yy, dl, kIq1sGrid[src[8 * i + k] | bits(hq, 0, 3) << 8], bit(hq, 3) ? -0.125f : 0.125f);
                put8_iq1(yy + 8, dl, kIq1sGrid[src[8 * i + 4 + k] | bits(hq, 4, 3) << 8],
                         bit(hq, 7) ? -0.125f : 0.125f);
            }
        }
}

void q_iq1_m_r4(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    Iq1R4RowCodes r[4];
    for (int k = 0; k < 4; ++k) {
        quantize_iq1_m_r4_row(x + k * ne0, ne0, imatrix, &r[k]);
        wr_u16(dst + 2 * k, r[k].d16);
    }
    dst += 8;
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 28)
        for (int k = 0; k < 4; ++k) {
            dst[24 + k] = (uint8_t)(r[k].scale[2 * ib] | r[k].scale[2 * ib + 1] << 4);
            for (int i = 0; i < 2; ++i) {
                uint8_t hq = 0;
                for (int q = 0; q < 2; ++q) {
                    const size_t g = (size_t)(4 * ib + 2 * i + q);
                    dst[8 * i + 4 * q + k] = (uint8_t)(r[k].idx[g] & 255);
                    hq |= (uint8_t)(((r[k].idx[g] >> 8) | (r[k].neg_delta[g] ? 8 : 0)) << (4 * q));
                }
                dst[16 + 4 * i + k] = hq;
            }
        }
}

// ---- IQ2_BN_R4: 4 float32 d_k, then 64 bytes per 64 columns -----------------------------------
void deq_iq2_bn_r4(const uint8_t* src, float* y, int64_t ne0) {
    float d[4];
    for (int k = 0; k < 4; ++k) d[k] = rd_f32(src + 4 * k);
    src += 16;
    for (int64_t ib = 0; ib < ne0 / 64; ++ib, src += 64)
        for (int k = 0; k < 4; ++k)
            for (int c = 0; c < 64; ++c) {
                const int l = c / 16, t = (c % 16) / 4, i = c % 4;
                y[k * ne0 + 64 * ib + c] = d[k] * (float)(bits(src[16 * l + 4 * k + i], 2 * t, 2) - 1);
            }
}
void rep_iq2_bn_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int k = 0; k < 4; ++k) std::memcpy(dst + 4 * k, rows[k], 4);
    dst += 16;
    for (int64_t ib = 0; ib < ne0 / 64; ++ib, dst += 64) {
        std::memset(dst, 0, 64);
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 4 + 16 * ib;
            for (int c = 0; c < 64; ++c) {
                const int l = c / 16, t = (c % 16) / 4, i = c % 4;
                dst[16 * l + 4 * k + i] |= (uint8_t)(bits(b[c % 16], 2 * (c / 16), 2) << (2 * t));
            }
        }
    }
}

const InterleavedCodec kGridCodecs[] = {
    {T_IQ2_XXS_R4, T_IQ2_XXS, 4, deq_iq2_xxs_r4, rep_iq2_xxs_r4, nullptr},
    {T_IQ2_XS_R4, T_IQ2_XS, 4, deq_iq2_xs_r4, rep_iq2_xs_r4, nullptr},
    {T_IQ2_S_R4, T_IQ2_S, 4, deq_iq2_s_r4, rep_iq2_s_r4, nullptr},
    {T_IQ3_XXS_R4, T_IQ3_XXS, 4, deq_iq3_xxs_r4, rep_iq3_xxs_r4, nullptr},
    {T_IQ3_S_R4, T_IQ3_S, 4, deq_iq3_s_r4, rep_iq3_s_r4, nullptr},
    {T_IQ1_S_R4, T_F32, 4, deq_iq1_s_r4, nullptr, q_iq1_s_r4},
    {T_IQ1_M_R4, T_F32, 4, deq_iq1_m_r4, nullptr, q_iq1_m_r4},
    {T_IQ2_BN_R4, T_IQ2_BN, 4, deq_iq2_bn_r4, rep_iq2_bn_r4, nullptr},
};

}  // namespace

CodecList interleaved_grid_codecs() { return {kGridCodecs, sizeof(kGridCodecs) / sizeof(kGridCodecs[0])}; }

}  // namespace ikllm::quant
