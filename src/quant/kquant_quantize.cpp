// Quantizers of Q2_K..Q6_K (layouts: quant-formats.md §6). Q2_K/Q4_K/Q5_K fit scale and min
// per sub-block (search.h: quantize_asym_block); Q3_K/Q6_K are symmetric integer levels with
// signed sub-block scales (search.h: quantize_nl_group).
#include <cstring>
#include "core/fp16.h"
#include "quant/kquant_iqk.h"
#include "quant/kquant_layout.h"
#include "quant/kquant_search.h"

namespace ikllm::quant {
using namespace layout;
using namespace search;

namespace {

// Integer levels lo..hi as a value set.
Levels int_levels(int lo, int hi) {
    Levels L;
    float v[64];
    for (int i = lo; i <= hi; ++i) v[i - lo] = (float)i;
    L.set(v, hi - lo + 1);
    return L;
}

NlFormat symmetric_format(const Levels* lv, int lmin, int lmax) {
    NlFormat f{};
    f.sub = 16;
    f.nsets = 1;
    f.pick = pick_nearest;
    f.ctx = lv;
    f.lo[0] = lv->v[0];
    f.hi[0] = lv->v[lv->n - 1];
    f.lmin = lmin;
    f.lmax = lmax;
    f.odd = false;
    f.d_fp16 = true;
    f.ntry = 2;
    f.rel_range = 0.12f;
    f.ndtry = 4;
    return f;
}

void quantize_asym_row(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix, int kind) {
    const int bytes = kind == 2 ? kQ2KBytes : kind == 4 ? kQ4KBytes : kQ5KBytes;
    const int nsub = kind == 2 ? 16 : 8;
    const int nmax = kind == 2 ? 3 : kind == 4 ? 15 : 31;
    const int scmax = kind == 2 ? 15 : 63;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += 256, dst += bytes) {
        float w[256];
        make_weights(src, imatrix ? imatrix + 256 * ib : nullptr, 256, w);
        AsymResult r;
        quantize_asym_block(src, w, nsub, nmax, scmax, r);
        std::memset(dst, 0, bytes);
        if (kind == 2) {
            for (int s = 0; s < 16; ++s) dst[s] = (uint8_t)(r.sc[s] | r.mc[s] << 4);
            for (int j = 0; j < 256; ++j) p2_put(dst + 16, j, r.q[j]);
            wr_u16(dst + 80, f32_to_f16(r.d));
            wr_u16(dst + 82, f32_to_f16(r.dmin));
        } else {
            wr_u16(dst, f32_to_f16(r.d));
            wr_u16(dst + 2, f32_to_f16(r.dmin));
            kscale_put(dst + 4, r.sc, r.mc);
            uint8_t* qs = kind == 5 ? dst + 48 : dst + 16;
            for (int j = 0; j < 256; ++j) {
                p4k_put(qs, j, r.q[j] & 15);
                if (kind == 5) hb_put(dst + 16, j, r.q[j] >> 4);
            }
        }
    }
}

}  // namespace

void quantize_q2_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    quantize_asym_row(src, dst, ne0, imatrix, 2);
}
void quantize_q4_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    quantize_asym_row(src, dst, ne0, imatrix, 4);
}
void quantize_q5_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    quantize_asym_row(src, dst, ne0, imatrix, 5);
}

void quantize_q3_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const Levels lv = int_levels(-4, 3);
    const NlFormat f = symmetric_format(&lv, -32, 31);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += 256, dst += kQ3KBytes) {
        float w[256];
        make_weights(src, imatrix ? imatrix + 256 * ib : nullptr, 256, w);
        NlResult r;
        quantize_nl_group(f, src, w, 256, r);
        std::memset(dst, 0, kQ3KBytes);
        for (int j = 0; j < 256; ++j) {
            p2_put(dst + 32, j, r.q[j] & 3);
            hb_put(dst, j, r.q[j] >> 2);
        }
        q3scale_put(dst + 96, r.ls.data());
        wr_u16(dst + 108, f32_to_f16(r.d));
    }
}

void quantize_q6_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const Levels lv = int_levels(-32, 31);
    const NlFormat f = symmetric_format(&lv, -128, 127);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += 256, dst += kQ6KBytes) {
        float w[256];
        make_weights(src, imatrix ? imatrix + 256 * ib : nullptr, 256, w);
        NlResult r;
        quantize_nl_group(f, src, w, 256, r);
        std::memset(dst, 0, kQ6KBytes);
        uint8_t* ql = dst;
        uint8_t* qh = dst + 128;
        for (int j = 0; j < 256; ++j) {
            const int u = r.q[j];  // level index = q + 32
            const int c = j >> 7, rr = j & 127, t = rr >> 5, l = rr & 31;
            ql[64 * c + 32 * (t & 1) + l] |= (uint8_t)((u & 15) << (4 * (t >> 1)));
            qh[32 * c + l] |= (uint8_t)((u >> 4) << (2 * t));
        }
        for (int s = 0; s < 16; ++s) dst[192 + s] = (uint8_t)(int8_t)r.ls[s];
        wr_u16(dst + 208, f32_to_f16(r.d));
    }
}

}  // namespace ikllm::quant
