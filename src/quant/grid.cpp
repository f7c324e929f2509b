// Grid ("codebook") i-quants: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M
// (docs: quant-formats.md §9). Every product here is exact in float32, so the order of
// operations only has to keep negation after the multiplication (sign of zero).
#include "quant/families.h"
#include "quant/grid_quantize.h"
#include "quant/grid_tables.h"
#include "quant/grid_util.h"

namespace ikllm::quant {
namespace {



void deq_iq2_xxs(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 66, y += QK) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = src + 2 + 8 * ib;
            const uint32_t a = rd_u32(q + 4);
            const float db = (d * (0.5f + (float)(a >> 28))) * 0.25f;
            for (int l = 0; l < 4; ++l)
                put8(y + 32 * ib + 8 * l, db, kIq2xxsGrid[q[l]], kKsignsIq2xs[bits(a, 7 * l, 7)]);
        }
    }
}

void deq_iq2_xs(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 74, y += QK) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t sc = src[66 + ib];
            for (int l = 0; l < 4; ++l) {
                const uint16_t v = rd_u16(src + 2 + 2 * (4 * ib + l));
                const float db = (d * (0.5f + (float)nib(sc, l / 2))) * 0.25f;
                put8(y + 32 * ib + 8 * l, db, kIq2xsGrid[v & 511], kKsignsIq2xs[v >> 9]);
            }
        }
    }
}

void deq_iq2_s(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 82, y += QK) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t sc = src[74 + ib];
            for (int l = 0; l < 4; ++l) {
                const int idx = src[2 + 4 * ib + l] | bits(src[66 + ib], 2 * l, 2) << 8;
                const float db = (d * (0.5f + (float)nib(sc, l / 2))) * 0.25f;
                put8(y + 32 * ib + 8 * l, db, kIq2sGrid[idx], src[34 + 4 * ib + l]);
            }
        }
    }
}

void deq_iq3_xxs(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 98, y += QK) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t a = rd_u32(src + 66 + 4 * ib);
            const float db = (d * (0.5f + (float)(a >> 28))) * 0.5f;
            for (int l = 0; l < 4; ++l) {
                const uint64_t g = (uint64_t)kIq3xxsGrid[src[2 + 8 * ib + 2 * l]] |
                                   (uint64_t)kIq3xxsGrid[src[2 + 8 * ib + 2 * l + 1]] << 32;
                put8(y + 32 * ib + 8 * l, db, g, kKsignsIq2xs[bits(a, 7 * l, 7)]);
            }
        }
    }
}

void deq_iq3_s(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 110, y += QK) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const float db = d * (float)(1 + 2 * nib(src[106 + ib / 2], ib % 2));
            for (int m = 0; m < 8; ++m) {
                const int idx = src[2 + 8 * ib + m] | bit(src[66 + ib], m) << 8;
                const uint32_t g = kIq3sGrid[idx];
                const uint8_t s = src[74 + 4 * ib + m / 2];
                for (int j = 0; j < 4; ++j) {
                    y[32 * ib + 4 * m + j] = neg_if(db * (float)grid_byte(g, j), (uint32_t)bit(s, 4 * (m % 2) + j));
                }
            }
        }
    }
}


void deq_iq1_s(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 50, y += QK) {
        const float d = rd_f16(src);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t h = rd_u16(src + 34 + 2 * ib);
            const float dl = d * (float)(2 * bits(h, 12, 3) + 1);
            const float delta = bit(h, 15) ? -0.125f : 0.125f;
            for (int l = 0; l < 4; ++l) {
                const int idx = src[2 + 4 * ib + l] | bits(h, 3 * l, 3) << 8;
                put8_iq1(y + 32 * ib + 8 * l, dl, kIq1sGrid[idx], delta);
            }
        }
    }
}

void deq_iq1_m(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 56, y += QK) {
        uint16_t sc[4];
        for (int i = 0; i < 4; ++i) sc[i] = rd_u16(src + 48 + 2 * i);
        const uint16_t u = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                      (sc[3] & 0xF000));
        const float d = f16_to_f32(u);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t t = sc[ib / 2];
            const int o = 6 * (ib % 2);
            const float dl1 = d * (float)(2 * bits(t, o, 3) + 1);
            const float dl2 = d * (float)(2 * bits(t, o + 3, 3) + 1);
            const uint8_t h0 = src[32 + 2 * ib], h1 = src[33 + 2 * ib];
            const int idx[4] = {src[4 * ib] | bits(h0, 0, 3) << 8, src[4 * ib + 1] | bits(h0, 4, 3) << 8,
                                src[4 * ib + 2] | bits(h1, 0, 3) << 8, src[4 * ib + 3] | bits(h1, 4, 3) << 8};
            const int neg[4] = {bit(h0, 3), bit(h0, 7), bit(h1, 3), bit(h1, 7)};
            for (int l = 0; l < 4; ++l)
                put8_iq1(y + 32 * ib + 8 * l, l < 2 ? dl1 : dl2, kIq1sGrid[idx[l]], neg[l] ? -0.125f : 0.125f);
        }
    }
}

const FamilyEntry kGridEntries[] = {
    {T_IQ2_XXS, deq_iq2_xxs, quantize_iq2_xxs}, {T_IQ2_XS, deq_iq2_xs, quantize_iq2_xs},
    {T_IQ2_S, deq_iq2_s, quantize_iq2_s},       {T_IQ3_XXS, deq_iq3_xxs, quantize_iq3_xxs},
    {T_IQ3_S, deq_iq3_s, quantize_iq3_s},       {T_IQ1_S, deq_iq1_s, quantize_iq1_s},
    {T_IQ1_M, deq_iq1_m, quantize_iq1_m},
};

}  // namespace

FamilyTable grid_family() { return {kGridEntries, sizeof(kGridEntries) / sizeof(kGridEntries[0])}; }

}  // namespace ikllm::quant
