// Trellis types IQ1_KT, IQ2_KT, IQ3_KT, IQ4_KT (docs: quant-formats.md §10). Each row starts
// with a float32 scale d; the sub-block scale sl = d * integer is a rounded product and must be
// formed first, then y = sl * v (both rounded, in this order).
#include "quant/families.h"
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"
#include "quant/trellis_quantize.h"

namespace ikllm::quant {
namespace {


void deq_iq1_kt(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f32(src);
    src += 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 56, y += QK) {
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t sh = src[ib];
            const float sl = d * (float)vals::kIq4nl[sh & 15];
            for (int g = 0; g < 4; ++g) {
                const uint32_t c = src[8 + 4 * ib + g] | nib(src[40 + 4 * (ib % 4) + g], ib / 4) << 8 |
                                   bit(sh, 4 + g) << 12;
                int v[8];
                kt_generate(c, kKtOffset, 8, v);
                for (int j = 0; j < 8; ++j) y[32 * ib + 8 * g + j] = sl * (float)v[j];
            }
        }
    }
}

void deq_iq2_kt(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f32(src);
    src += 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 68, y += QK) {
        for (int i = 0; i < 32; ++i) {
            const int ib = i / 4;
            const float sl = d * (float)vals::kIq4nl[nib(src[ib % 4], ib / 4)];
            int v[8];
            kt_generate(rd_u16(src + 4 + 2 * i), kKtOffset, 8, v);
            for (int j = 0; j < 8; ++j) y[8 * i + j] = sl * (float)v[j];
        }
    }
}

void deq_iq3_kt(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f32(src);
    src += 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 100, y += QK) {
        for (int i = 0; i < 32; ++i) {
            const int ib = i / 4;
            const float sl = d * (float)nib(src[ib % 4], ib / 4);
            int v[8];
            kt_generate(rd_u16(src + 4 + 2 * i), kKtOffset, 8, v);
            for (int j = 0; j < 8; ++j) {
                const int w = 8 * i + j;
                const float a = sl * (float)(v[j] < 0 ? -v[j] : v[j]);
                y[w] = neg_if(a, (uint32_t)bit(src[68 + w % 32], w / 32));
            }
        }
    }
}

void deq_iq4_kt(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f32(src);
    src += 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, src += 128, y += QK) {
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t s = rd_u32(src + 4 * ib);
            const uint32_t offset = (s & 1) ? kKtOffsetIq4Odd : kKtOffset;
            const float sl = d * (float)((int)((s & 255) >> 1) - 64);
            for (int g = 0; g < 8; ++g) {
                const int jj = 8 * ib + g;
                const uint32_t c = src[32 + jj] | nib(src[96 + jj % 32], jj / 32) << 8 | bits(s, 8 + 3 * g, 3) << 12;
                int v[4];
                kt_generate(c, offset, 4, v);
                for (int j = 0; j < 4; ++j) y[32 * ib + 4 * g + j] = sl * (float)v[j];
            }
        }
    }
}

const FamilyEntry kTrellisEntries[] = {
    {T_IQ1_KT, deq_iq1_kt, quantize_iq1_kt},
    {T_IQ2_KT, deq_iq2_kt, quantize_iq2_kt},
    {T_IQ3_KT, deq_iq3_kt, quantize_iq3_kt},
    {T_IQ4_KT, deq_iq4_kt, quantize_iq4_kt},
};

}  // namespace

FamilyTable trellis_family() { return {kTrellisEntries, sizeof(kTrellisEntries) / sizeof(kTrellisEntries[0])}; }

}  // namespace ikllm::quant
