// Quantizers of IQ4_XS, IQ2_K..IQ6_K and the row-scaled IQ2_KS..IQ5_KS, IQ4_KSS, IQ2_KL
// (layouts: quant-formats.md §7-§8). Every type is a search over integer sub-block scales,
// value sets and one group scale (per 256-block or per row); see kquant_search.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#include "core/fp16.h"
#include "quant/kquant_iqk.h"
#include "quant/kquant_layout.h"
#include "quant/kquant_search.h"
#include "quant/quant_tables.h"

namespace ikllm::quant {
using namespace layout;
using namespace search;
using namespace tables;

namespace {

// Value-set pair of a two-set type: set 0 = table[0, n), set 1 = table[n, 2n).
struct SetPair {
    Levels s[2];
    SetPair(const int8_t* table, int n) {
        s[0].set_i8(table, n);
        s[1].set_i8(table + n, n);
    }
};

NlFormat nl_format(const Levels* sets, int nsets, int sub, int lmin, int lmax, bool odd, bool fp16, float range) {
    NlFormat f{};
    f.sub = sub;
    f.nsets = nsets;
    f.pick = pick_nearest;
    f.ctx = sets;
    for (int k = 0; k < nsets; ++k) {
        f.lo[k] = sets[k].v[0];
        f.hi[k] = sets[k].v[sets[k].n - 1];
    }
    f.lmin = lmin;
    f.lmax = lmax;
    f.odd = odd;
    f.d_fp16 = fp16;
    f.ntry = 2;
    f.rel_range = range;
    f.ndtry = 4;
    return f;
}

// Runs the search over 256-weight blocks (group = block) and hands each result to `pack`.
template <class Pack>
void per_block(const NlFormat& f, const float* src, uint8_t* dst, int64_t ne0, const float* imatrix, int bytes,
               Pack pack) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += 256, dst += bytes) {
        float w[256];
        make_weights(src, imatrix ? imatrix + 256 * ib : nullptr, 256, w);
        NlResult r;
        quantize_nl_group(f, src, w, 256, r);
        std::memset(dst, 0, bytes);
        pack(r, dst);
    }
}

// Runs the search over a whole row (group = row, one row scale) and returns the result.
NlResult per_row(const NlFormat& f, const float* src, int64_t ne0, const float* imatrix) {
    std::vector<float> w(ne0);
    for (int64_t ib = 0; ib < ne0 / 256; ++ib)
        make_weights(src + 256 * ib, imatrix ? imatrix + 256 * ib : nullptr, 256, w.data() + 256 * ib);
    NlResult r;
    quantize_nl_group(f, src, w.data(), (int)ne0, r);
    return r;
}

// ---- IQ2_KL pair codebook picker: each pair of weights takes one of 32 level pairs ----
struct PairBook {
    float a[32], b[32];
    PairBook() {
        for (int k = 0; k < 32; ++k) {
            a[k] = (float)(int8_t)(kIq2kl[k] & 255);
            b[k] = (float)(int8_t)(kIq2kl[k] >> 8);
        }
    }
};
float pick_pairs(const void* ctx, const float* x, const float* w, int n, int, float scale, uint8_t* q, float* lv) {
    const PairBook& P = *(const PairBook*)ctx;
    float err = 0;
    for (int j = 0; j < n; j += 2) {
        // All 32 errors first (independent lanes: the compiler vectorizes them), then the first
        // strictly smallest by selects, not branches.
        float e[32];
        for (int k = 0; k < 32; ++k) {
            const float e0 = x[j] - scale * P.a[k], e1 = x[j + 1] - scale * P.b[k];
            e[k] = w[j] * e0 * e0 + w[j + 1] * e1 * e1;
        }
        float best = INFINITY;
        int bk = 0;
        for (int k = 0; k < 32; ++k) {
            const bool lt = e[k] < best;
            best = lt ? e[k] : best;
            bk = lt ? k : bk;
        }
        q[j] = q[j + 1] = (uint8_t)bk;
        lv[j] = P.a[bk];
        lv[j + 1] = P.b[bk];
        err += best;
    }
    return err;
}

// ---- IQ4_KSS picker: nearest levels under the storage constraint that every group of four
// codes {2k, 2k+1, 16+2k, 17+2k} of a 32-weight sub-block has an even number of set bits ----
// next[0][k] / next[1][k]: the closest code below / above k of the other parity (popcount of
// the 4-bit code), -1 / 16 where there is none.
struct OppositeParity {
    int8_t next[2][16];
    constexpr OppositeParity() : next() {
        for (int k = 0; k < 16; ++k)
            for (int side = 0; side < 2; ++side) {
                const int step = side ? 1 : -1;
                int m = k + step;
                while (m >= 0 && m < 16 && (__builtin_popcount(m) & 1) == (__builtin_popcount(k) & 1)) m += step;
                next[side][k] = (int8_t)m;
            }
    }
};
constexpr OppositeParity kOppositeParity;

float pick_even_parity(const void* ctx, const float* x, const float* w, int n, int set, float scale, uint8_t* q,
                       float* lv) {
    const Levels& L = ((const Levels*)ctx)[set];
    float err = 0;
    float alt_cost[32];
    uint8_t alt[32];
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    auto cost = [&](int j, int k) {
        const float e0 = x[j] - scale * L.v[k];
        return w[j] * e0 * e0;
    };
    for (int j = 0; j < n; ++j) {
        // nearest level, and the nearest one of opposite parity on either side (the error is
        // convex in the level, and no three consecutive codes share a parity)
        const int k0 = L.nearest(x[j] * inv);
        const float e0 = cost(j, k0);
        float ea = INFINITY;
        int ka = k0;
        for (int side = 0; side < 2; ++side) {  // below, then above; selects, not branches
            const int k = kOppositeParity.next[side][k0];
            const bool ok = k >= 0 && k < 16;
            const float e = cost(j, ok ? k : k0);
            const bool take = ok && e < ea;
            ea = take ? e : ea;
            ka = take ? k : ka;
        }
        q[j] = (uint8_t)k0;
        alt[j] = (uint8_t)ka;
        alt_cost[j] = ea - e0;
        err += e0;
    }
    for (int base = 0; base + 32 <= n; base += 32) {
        for (int k = 0; k < 8; ++k) {
            const int idx[4] = {base + 2 * k, base + 2 * k + 1, base + 16 + 2 * k, base + 17 + 2 * k};
            int par = 0;
            for (int i : idx) par ^= __builtin_popcount(q[i]) & 1;
            if (!par) continue;
            int fix = idx[0];
            for (int i : idx)
                if (alt_cost[i] < alt_cost[fix]) fix = i;
            q[fix] = alt[fix];
            err += alt_cost[fix];
        }
    }
    for (int j = 0; j < n; ++j) lv[j] = L.v[q[j]];
    return err;
}

// 6-bit signed scale in the IQ4_K / IQ5_K layout (scales_h @4, scales_l @8).
void put_k6_scale(uint8_t* blk, int s, int ls) {
    const int u = ls + 32;
    nib_put(blk + 8, s, u & 15);
    blk[4 + (s >> 2)] |= (uint8_t)((u >> 4) << (2 * (s & 3)));
}

uint16_t set_bits(const NlResult& r, int first, int count) {
    uint16_t e = 0;
    for (int s = 0; s < count; ++s) e |= (uint16_t)(r.set[first + s] << s);
    return e;
}

}  // namespace

void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq4k, 16);
    const NlFormat f = nl_format(sp.s, 1, 32, -32, 31, false, true, 0.06f);
    per_block(f, src, dst, ne0, imatrix, kIq4XsBytes, [](const NlResult& r, uint8_t* b) {
        wr_u16(b, f32_to_f16(r.d));
        uint16_t sh = 0;
        for (int j = 0; j < 8; ++j) {
            const int u = r.ls[j] + 32;
            nib_put(b + 4, j, u & 15);
            sh |= (uint16_t)((u >> 4) << (2 * j));
        }
        wr_u16(b + 2, sh);
        for (int j = 0; j < 256; ++j) p4n_put(b + 8, j, r.q[j]);
    });
}

void quantize_iq2_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq2nl, 4);
    const NlFormat f = nl_format(sp.s, 2, 16, -8, 7, false, true, 0.2f);
    per_block(f, src, dst, ne0, imatrix, kIq2KBytes, [](const NlResult& r, uint8_t* b) {
        wr_u16(b, f32_to_f16(r.d));
        wr_u16(b + 2, set_bits(r, 0, 16));
        for (int s = 0; s < 16; ++s) nib_put(b + 4, s, r.ls[s] + 8);
        for (int j = 0; j < 256; ++j) p2_put(b + 12, j, r.q[j]);
    });
}

void quantize_iq3_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq3nl, 8);
    const NlFormat f = nl_format(sp.s, 2, 16, -31, 31, true, true, 0.15f);
    per_block(f, src, dst, ne0, imatrix, kIq3KBytes, [](const NlResult& r, uint8_t* b) {
        wr_u16(b, f32_to_f16(r.d));
        wr_u16(b + 2, set_bits(r, 0, 16));
        uint16_t sh = 0;
        for (int s = 0; s < 16; ++s) {
            const int ls = r.ls[s];
            if (ls < 0) sh |= (uint16_t)(1u << s);
            nib_put(b + 6, s, (std::abs(ls) - 1) / 2);
        }
        wr_u16(b + 4, sh);
        for (int j = 0; j < 256; ++j) {
            p2_put(b + 14, j, r.q[j] & 3);
            hb_put(b + 78, j, r.q[j] >> 2);
        }
    });
}

void quantize_iq4_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq4k, 16);
    const NlFormat f = nl_format(sp.s, 2, 16, -32, 31, false, true, 0.06f);
    per_block(f, src, dst, ne0, imatrix, kIq4KBytes, [](const NlResult& r, uint8_t* b) {
        wr_u16(b, f32_to_f16(r.d));
        wr_u16(b + 2, set_bits(r, 0, 16));
        for (int s = 0; s < 16; ++s) put_k6_scale(b, s, r.ls[s]);
        for (int j = 0; j < 256; ++j) p4n_put(b + 16, j, r.q[j]);
    });
}

void quantize_iq5_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq5nl, 32);
    const NlFormat f = nl_format(sp.s, 2, 16, -32, 31, false, true, 0.04f);
    per_block(f, src, dst, ne0, imatrix, kIq5KBytes, [](const NlResult& r, uint8_t* b) {
        wr_u16(b, f32_to_f16(r.d));
        wr_u16(b + 2, set_bits(r, 0, 16));
        for (int s = 0; s < 16; ++s) put_k6_scale(b, s, r.ls[s]);
        for (int j = 0; j < 256; ++j) {
            p4k_put(b + 16, j, r.q[j] & 15);
            hb_put(b + 144, j, r.q[j] >> 4);
        }
    });
}

void quantize_iq6_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq6nl, 64);
    const NlFormat f = nl_format(sp.s, 2, 16, -128, 127, false, true, 0.03f);
    per_block(f, src, dst, ne0, imatrix, kIq6KBytes, [](const NlResult& r, uint8_t* b) {
        wr_u16(b, f32_to_f16(r.d));
        wr_u16(b + 2, set_bits(r, 0, 16));
        for (int s = 0; s < 16; ++s) b[4 + s] = (uint8_t)(int8_t)r.ls[s];
        uint8_t* qs = b + 20;
        uint8_t* qh = b + 148;
        for (int w = 0; w < 256; ++w) {
            const int u = r.q[w];
            const int c = w >> 6, rr = w & 63;
            qs[32 * c + (rr & 31)] |= (uint8_t)((u & 15) << (4 * (rr >> 5)));
            qh[32 * (c >> 1) + (rr & 31)] |= (uint8_t)((u >> 4) << (4 * (c & 1) + 2 * (rr >> 5)));
        }
    });
}

void quantize_iq2_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq2nl, 4);
    const NlFormat f = nl_format(sp.s, 2, 32, -16, 15, false, true, 0.2f);
    const NlResult r = per_row(f, src, ne0, imatrix);
    std::memset(dst, 0, 2 + (ne0 / 256) * kIq2KsBytes);
    wr_u16(dst, f32_to_f16(r.d));
    uint8_t* b = dst + 2;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, b += kIq2KsBytes) {
        uint16_t extra = 0;
        for (int j = 0; j < 8; ++j) {
            const int u = r.ls[8 * ib + j] + 16;
            extra |= (uint16_t)(r.set[8 * ib + j] << j);
            extra |= (uint16_t)((u >> 4) << (8 + j));
            nib_put(b + 2, j, u & 15);
        }
        wr_u16(b, extra);
        for (int j = 0; j < 256; ++j) p2_put(b + 6, j, r.q[256 * ib + j]);
    }
}

void quantize_iq3_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq3nl, 8);
    const NlFormat f = nl_format(sp.s, 2, 32, -16, 15, false, true, 0.15f);
    const NlResult r = per_row(f, src, ne0, imatrix);
    std::memset(dst, 0, 2 + (ne0 / 256) * kIq3KsBytes);
    wr_u16(dst, f32_to_f16(r.d));
    uint8_t* b = dst + 2;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, b += kIq3KsBytes) {
        uint16_t extra = 0;
        for (int j = 0; j < 8; ++j) {
            const int u = r.ls[8 * ib + j] + 16;
            extra |= (uint16_t)((u >> 4) << j);
            extra |= (uint16_t)(r.set[8 * ib + j] << (8 + j));
            b[2 + (j & 3)] |= (uint8_t)((u & 15) << (4 * (j >> 2)));
        }
        wr_u16(b, extra);
        for (int j = 0; j < 256; ++j) {
            p2_put(b + 6, j, r.q[256 * ib + j] & 3);
            hb_put(b + 70, j, r.q[256 * ib + j] >> 2);
        }
    }
}

void quantize_iq4_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq4k, 16);
    const NlFormat f = nl_format(sp.s, 2, 32, -127, 127, true, false, 0.06f);
    const NlResult r = per_row(f, src, ne0, imatrix);
    std::memset(dst, 0, 4 + (ne0 / 256) * kIq4KsBytes);
    wr_f32(dst, r.d);
    uint8_t* b = dst + 4;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, b += kIq4KsBytes) {
        for (int j = 0; j < 8; ++j) b[j] = (uint8_t)((r.ls[8 * ib + j] + 127) | r.set[8 * ib + j]);
        for (int j = 0; j < 256; ++j) p4n_put(b + 8, j, r.q[256 * ib + j]);
    }
}

void quantize_iq4_kss(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq4k, 16);
    NlFormat f = nl_format(sp.s, 2, 32, -127, 127, true, false, 0.06f);
    f.pick = pick_even_parity;
    const NlResult r = per_row(f, src, ne0, imatrix);
    std::memset(dst, 0, 4 + (ne0 / 256) * kIq4KssBytes);
    wr_f32(dst, r.d);
    uint8_t* b = dst + 4;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, b += kIq4KssBytes) {
        for (int j = 0; j < 8; ++j) {
            const int sbyte = (r.ls[8 * ib + j] + 127) | r.set[8 * ib + j];
            const uint8_t* q = r.q.data() + 256 * ib + 32 * j;
            for (int k = 0; k < 8; ++k) {
                const uint16_t v = (uint16_t)(q[2 * k] | q[16 + 2 * k] << 4 | q[2 * k + 1] << 8 | q[17 + 2 * k] << 12);
                // invert v = u ^ (u >> 1) (Gray code); even parity of v leaves bit 0 of u clear
                uint16_t u = v;
                for (int sh = 1; sh < 16; sh <<= 1) u ^= (uint16_t)(u >> sh);
                u = (uint16_t)((u & 0xFFFE) | ((sbyte >> k) & 1));
                wr_u16(b + 16 * j + 2 * k, u);
            }
        }
    }
}

void quantize_iq5_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const SetPair sp(kIq5nl, 32);
    const NlFormat f = nl_format(sp.s, 2, 32, -127, 127, true, false, 0.04f);
    const NlResult r = per_row(f, src, ne0, imatrix);
    std::memset(dst, 0, 4 + (ne0 / 256) * kIq5KsBytes);
    wr_f32(dst, r.d);
    uint8_t* b = dst + 4;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, b += kIq5KsBytes) {
        for (int j = 0; j < 8; ++j) b[j] = (uint8_t)((r.ls[8 * ib + j] + 127) | r.set[8 * ib + j]);
        for (int j = 0; j < 256; ++j) {
            p4k_put(b + 8, j, r.q[256 * ib + j] & 15);
            hb_put(b + 136, j, r.q[256 * ib + j] >> 4);
        }
    }
}

void quantize_iq2_kl(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix) {
    require_whole_blocks(ne0);
    static const PairBook book;
    NlFormat f{};
    f.sub = 32;
    f.nsets = 1;
    f.pick = pick_pairs;
    f.ctx = &book;
    f.lo[0] = -63;
    f.hi[0] = 47;
    f.lmin = -32;
    f.lmax = 31;
    f.odd = false;
    f.d_fp16 = true;
    f.ntry = 2;
    f.rel_range = 0.15f;
    f.ndtry = 4;
    const NlResult r = per_row(f, src, ne0, imatrix);
    std::memset(dst, 0, 2 + (ne0 / 256) * kIq2KlBytes);
    wr_u16(dst, f32_to_f16(r.d));
    uint8_t* b = dst + 2;
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, b += kIq2KlBytes) {
        uint16_t sh = 0;
        for (int j = 0; j < 8; ++j) {
            const int u = r.ls[8 * ib + j] + 32;
            sh |= (uint16_t)((u >> 4) << (2 * j));
            b[2 + (j & 3)] |= (uint8_t)((u & 15) << (4 * (j >> 2)));
        }
        wr_u16(b, sh);
        for (int w = 0; w < 256; w += 2) {
            const int code = r.q[256 * ib + w];
            const int c = w >> 6, rr = w & 63, half = rr >> 5, p = (rr & 31) >> 1;
            b[6 + 16 * c + p] |= (uint8_t)((code & 15) << (4 * half));
            b[70 + p] |= (uint8_t)((code >> 4) << (2 * c + half));
        }
    }
}

}  // namespace ikllm::quant
