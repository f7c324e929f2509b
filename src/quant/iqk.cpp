// Decoders of IQ4_XS and the ik K / KS families (docs: quant-formats.md §7-§8) and the
// family table. Row-scaled types read their scale from the row start; dl = d * scale is
// rounded first, then multiplied by the level (spec order, bit-exact).
#include "core/fp16.h"
#include "quant/families.h"
#include "quant/kquant_iqk.h"
#include "quant/kquant_layout.h"
#include "quant/quant_tables.h"

namespace ikllm::quant {
using namespace layout;
using namespace tables;

void dequant_iq4_xs(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq4XsBytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const uint16_t sh = rd_u16(src + 2);
        const uint8_t* sl = src + 4;
        const uint8_t* qs = src + 8;
        for (int j = 0; j < 8; ++j) {
            const int ls = nib_get(sl, j) | ((sh >> (2 * j)) & 3) << 4;
            const float dl = d * (float)(ls - 32);
            for (int k = 0; k < 32; ++k) dst[32 * j + k] = dl * (float)kIq4nl[p4n_get(qs, 32 * j + k)];
        }
    }
}

void dequant_iq2_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq2KBytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const uint16_t extra = rd_u16(src + 2);
        const uint8_t* sc = src + 4;
        const uint8_t* qs = src + 12;
        for (int s = 0; s < 16; ++s) {
            const float dl = d * (float)(nib_get(sc, s) - 8);
            const int8_t* v = kIq2nl + 4 * ((extra >> s) & 1);
            for (int k = 0; k < 16; ++k) dst[16 * s + k] = dl * (float)v[p2_get(qs, 16 * s + k)];
        }
    }
}

void dequant_iq3_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq3KBytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const uint16_t extra = rd_u16(src + 2);
        const uint16_t sh = rd_u16(src + 4);
        const uint8_t* sl = src + 6;
        const uint8_t* qs = src + 14;
        const uint8_t* qh = src + 78;
        for (int s = 0; s < 16; ++s) {
            const int mag = 2 * nib_get(sl, s) + 1;
            const float dl = d * (float)(((sh >> s) & 1) ? -mag : mag);
            const int8_t* v = kIq3nl + 8 * ((extra >> s) & 1);
            for (int k = 0; k < 16; ++k) {
                const int w = 16 * s + k;
                dst[w] = dl * (float)v[p2_get(qs, w) | hb_get(qh, w) << 2];
            }
        }
    }
}

// IQ4_K / IQ5_K 6-bit signed scale of 16-weight sub-block s.
static inline int k6_scale(const uint8_t* sh, const uint8_t* sl, int s) {
    return (nib_get(sl, s) | ((sh[s >> 2] >> (2 * (s & 3))) & 3) << 4) - 32;
}

void dequant_iq4_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq4KBytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const uint16_t extra = rd_u16(src + 2);
        const uint8_t* qs = src + 16;
        for (int s = 0; s < 16; ++s) {
            const float dl = d * (float)k6_scale(src + 4, src + 8, s);
            const int8_t* v = kIq4k + 16 * ((extra >> s) & 1);
            for (int k = 0; k < 16; ++k) dst[16 * s + k] = dl * (float)v[p4n_get(qs, 16 * s + k)];
        }
    }
}

void dequant_iq5_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq5KBytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const uint16_t extra = rd_u16(src + 2);
        const uint8_t* qs = src + 16;
        const uint8_t* qh = src + 144;
        for (int s = 0; s < 16; ++s) {
            const float dl = d * (float)k6_scale(src + 4, src + 8, s);
            const int8_t* v = kIq5nl + 32 * ((extra >> s) & 1);
            for (int k = 0; k < 16; ++k) {
                const int w = 16 * s + k;
                dst[w] = dl * (float)v[p4k_get(qs, w) | hb_get(qh, w) << 4];
            }
        }
    }
}

void dequant_iq6_k(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float* P = iq6k_levels();
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq6KBytes, dst += 256) {
        const float d = f16_to_f32(rd_u16(src));
        const uint16_t extra = rd_u16(src + 2);
        const int8_t* sc = (const int8_t*)(src + 4);
        const uint8_t* qs = src + 20;
        const uint8_t* qh = src + 148;
        for (int w = 0; w < 256; ++w) {
            const int c = w >> 6, r = w & 63;
            const int low4 = (qs[32 * c + (r & 31)] >> (4 * (r >> 5))) & 15;
            const int high2 = (qh[32 * (c >> 1) + (r & 31)] >> (4 * (c & 1) + 2 * (r >> 5))) & 3;
            const int s = w >> 4;
            const float dl = d * (float)sc[s];
            const float v = P[low4 | high2 << 4] + (((extra >> s) & 1) ? 1.0f : 0.0f);
            dst[w] = dl * v;
        }
    }
}

void dequant_iq2_ks(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float d = f16_to_f32(rd_u16(src));
    src += 2;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq2KsBytes, dst += 256) {
        const uint16_t extra = rd_u16(src);
        const uint8_t* sc = src + 2;
        const uint8_t* qs = src + 6;
        for (int j = 0; j < 8; ++j) {
            const int ls = (nib_get(sc, j) | ((extra >> (8 + j)) & 1) << 4) - 16;
            const float dl = d * (float)ls;
            const int8_t* v = kIq2nl + 4 * ((extra >> j) & 1);
            for (int k = 0; k < 32; ++k) dst[32 * j + k] = dl * (float)v[p2_get(qs, 32 * j + k)];
        }
    }
}

void dequant_iq3_ks(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float d = f16_to_f32(rd_u16(src));
    src += 2;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq3KsBytes, dst += 256) {
        const uint16_t extra = rd_u16(src);
        const uint8_t* sc = src + 2;
        const uint8_t* qs = src + 6;
        const uint8_t* qh = src + 70;
        for (int j = 0; j < 8; ++j) {
            const int ls = (((sc[j & 3] >> (4 * (j >> 2))) & 15) | ((extra >> j) & 1) << 4) - 16;
            const float dl = d * (float)ls;
            const int8_t* v = kIq3nl + 8 * ((extra >> (8 + j)) & 1);
            for (int k = 0; k < 32; ++k) {
                const int w = 32 * j + k;
                dst[w] = dl * (float)v[p2_get(qs, w) | hb_get(qh, w) << 2];
            }
        }
    }
}

void dequant_iq4_ks(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float d = rd_f32(src);
    src += 4;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq4KsBytes, dst += 256) {
        const uint8_t* qs = src + 8;
        for (int j = 0; j < 8; ++j) {
            const int s = src[j];
            const float dl = d * (float)((s & 254) - 127);
            const int8_t* v = kIq4k + 16 * (s & 1);
            for (int k = 0; k < 32; ++k) dst[32 * j + k] = dl * (float)v[p4n_get(qs, 32 * j + k)];
        }
    }
}

void dequant_iq4_kss(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float d = rd_f32(src);
    src += 4;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq4KssBytes, dst += 256) {
        for (int j = 0; j < 8; ++j) {
            uint8_t c[16];
            int ls = 0;
            for (int k = 0; k < 8; ++k) {
                const uint16_t u = rd_u16(src + 16 * j + 2 * k);
                ls |= (u & 1) << k;
                const uint16_t e = (uint16_t)(u & 0xFFFE);
                const uint16_t v = (uint16_t)(e ^ (e >> 1));
                c[2 * k] = (uint8_t)(v & 255);
                c[2 * k + 1] = (uint8_t)(v >> 8);
            }
            const float dl = d * (float)((ls & 254) - 127);
            const int8_t* v = kIq4k + 16 * (ls & 1);
            for (int k = 0; k < 16; ++k) {
                dst[32 * j + k] = dl * (float)v[c[k] & 15];
                dst[32 * j + 16 + k] = dl * (float)v[c[k] >> 4];
            }
        }
    }
}

void dequant_iq5_ks(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float d = rd_f32(src);
    src += 4;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq5KsBytes, dst += 256) {
        const uint8_t* qs = src + 8;
        const uint8_t* qh = src + 136;
        for (int j = 0; j < 8; ++j) {
            const int s = src[j];
            const float dl = d * (float)((s & 254) - 127);
            const int8_t* v = kIq5nl + 32 * (s & 1);
            for (int k = 0; k < 32; ++k) {
                const int w = 32 * j + k;
                dst[w] = dl * (float)v[p4k_get(qs, w) | hb_get(qh, w) << 4];
            }
        }
    }
}

void dequant_iq2_kl(const uint8_t* src, float* dst, int64_t ne0) {
    require_whole_blocks(ne0);
    const float d = f16_to_f32(rd_u16(src));
    src += 2;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += kIq2KlBytes, dst += 256) {
        const uint16_t sh = rd_u16(src);
        const uint8_t* sl = src + 2;
        const uint8_t* qs = src + 6;
        const uint8_t* qh = src + 70;
        for (int w = 0; w < 256; w += 2) {
            const int ib32 = w >> 5;
            const int ls = (((sl[ib32 & 3] >> (4 * (ib32 >> 2))) & 15) | ((sh >> (2 * ib32)) & 3) << 4) - 32;
            const float dl = d * (float)ls;
            const int c = w >> 6, r = w & 63, half = r >> 5, p = (r & 31) >> 1;
            const int code = ((qs[16 * c + p] >> (4 * half)) & 15) | ((qh[p] >> (2 * c + half)) & 1) << 4;
            const uint16_t pair = kIq2kl[code];
            dst[w] = dl * (float)(int8_t)(pair & 255);
            dst[w + 1] = dl * (float)(int8_t)(pair >> 8);
        }
    }
}

FamilyTable iqk_family() {
    static const FamilyEntry entries[] = {
        {T_IQ4_XS, dequant_iq4_xs, quantize_iq4_xs}, {T_IQ2_K, dequant_iq2_k, quantize_iq2_k},
        {T_IQ3_K, dequant_iq3_k, quantize_iq3_k},    {T_IQ4_K, dequant_iq4_k, quantize_iq4_k},
        {T_IQ5_K, dequant_iq5_k, quantize_iq5_k},    {T_IQ6_K, dequant_iq6_k, quantize_iq6_k},
        {T_IQ2_KS, dequant_iq2_ks, quantize_iq2_ks}, {T_IQ3_KS, dequant_iq3_ks, quantize_iq3_ks},
        {T_IQ4_KS, dequant_iq4_ks, quantize_iq4_ks}, {T_IQ4_KSS, dequant_iq4_kss, quantize_iq4_kss},
        {T_IQ5_KS, dequant_iq5_ks, quantize_iq5_ks}, {T_IQ2_KL, dequant_iq2_kl, quantize_iq2_kl},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::quant
