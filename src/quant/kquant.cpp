// K-quant decoders Q2_K..Q6_K, Q8_K (docs: quant-formats.md §6) and the family table.
// Float operations follow the spec's order exactly (bit-exact with the reference to_float).
#include "core/fp16.h"
#include "quant/act_q8_k.h"
#include "quant/families.h"
#include "quant/kquant_iqk.h"
#include "quant/kquant_layout.h"

namespace ikllm::quant {
using namespace layout;

void dequant_q2_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kQ2KBytes, dst += 256) {
        const uint8_t* scales = src;
        const uint8_t* qs = src + 16;
        const float d = f16_to_f32(rd_u16(src + 80));
        const float dmin = f16_to_f32(rd_u16(src + 82));
        for (int s = 0; s < 16; ++s) {
            const float dl = d * (float)(scales[s] & 15);
            const float ml = dmin * (float)(scales[s] >> 4);
            for (int k = 0; k < 16; ++k) {
                const int w = 16 * s + k;
                dst[w] = dl * (float)p2_get(qs, w) - ml;
            }
        }
    }
}

void dequant_q3_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kQ3KBytes, dst += 256) {
        const uint8_t* hm = src;
        const uint8_t* qs = src + 32;
        const uint8_t* sc = src + 96;
        const float d = f16_to_f32(rd_u16(src + 108));
        for (int s = 0; s < 16; ++s) {
            const float dl = d * (float)q3scale_get(sc, s);
            for (int k = 0; k < 16; ++k) {
                const int w = 16 * s + k;
                const int q = p2_get(qs, w) - (hb_get(hm, w) ? 0 : 4);
                dst[w] = dl * (float)q;
            }
        }
    }
}

// Q4_K and Q5_K share everything except the 5th bit.
static void dequant_q45_k(const uint8_t* src, float* dst, int64_t ne0, bool five) {
    require_whole_blocks(ne0);
    const int bytes = five ? kQ5KBytes : kQ4KBytes;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += bytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const float dmin = f16_to_f32(rd_u16(src + 2));
        const uint8_t* S = src + 4;
        const uint8_t* qh = five ? src + 16 : nullptr;
        const uint8_t* qs = five ? src + 48 : src + 16;
        for (int j = 0; j < 8; ++j) {
            int sc, m;
            kscale_get(S, j, &sc, &m);
            const float dl = d * (float)sc;
            const float ml = dmin * (float)m;
            for (int k = 0; k < 32; ++k) {
                const int w = 32 * j + k;
                int q = p4k_get(qs, w);
                if (five) q |= hb_get(qh, w) << 4;
                dst[w] = dl * (float)q - ml;
            }
        }
    }
}
void dequant_q4_k(const uint8_t* src, float* dst, int64_t ne0) { dequant_q45_k(src, dst, ne0, false); }
void dequant_q5_k(const uint8_t* src, float* dst, int64_t ne0) { dequant_q45_k(src, dst, ne0, true); }

void dequant_q6_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kQ6KBytes, dst += 256) {
        const uint8_t* ql = src;
        const uint8_t* qh = src + 128;
        const int8_t* sc = (const int8_t*)(src + 192);
        const float d = f16_to_f32(rd_u16(src + 208));
        for (int w = 0; w < 256; ++w) {
            const int c = w >> 7, r = w & 127, t = r >> 5, l = r & 31;
            const int low4 = (ql[64 * c + 32 * (t & 1) + l] >> (4 * (t >> 1))) & 15;
            const int high2 = (qh[32 * c + l] >> (2 * t)) & 3;
            const int q = (low4 | high2 << 4) - 32;
            dst[w] = (d * (float)sc[w >> 4]) * (float)q;
        }
    }
}

void dequant_q8_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kQ8KBytes, dst += 256) {
        const float d = rd_f32(src);
        const int8_t* qs = (const int8_t*)(src + 8);
        for (int w = 0; w < 256; ++w) dst[w] = d * (float)qs[w];
    }
}

void quantize_q8_k(const float* src, uint8_t* dst, int64_t ne0, const float*) {
    require_whole_blocks(ne0);
    encode_q8_k_row(src, dst, ne0);
}

FamilyTable kquant_family() {
    static const FamilyEntry entries[] = {
        {T_Q2_K, dequant_q2_k, quantize_q2_k}, {T_Q3_K, dequant_q3_k, quantize_q3_k},
        {T_Q4_K, dequant_q4_k, quantize_q4_k}, {T_Q5_K, dequant_q5_k, quantize_q5_k},
        {T_Q6_K, dequant_q6_k, quantize_q6_k}, {T_Q8_K, dequant_q8_k, quantize_q8_k},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::quant
