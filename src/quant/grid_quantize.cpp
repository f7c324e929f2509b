// Encoders of the grid i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M
// (docs: quant-formats.md §9). The format fixes only decoding; this encoder:
//   * takes each weight's sign from x (types with a 7-bit sign index need an even number of
//     negatives: the sign whose flip costs least is flipped);
//   * finds each group's nearest grid entry to |x| / scale (code book search, grid_codebook.h);
//   * fits each scale group's scale by alternating search and least squares, from a few
//     starting points, then derives the fp16 block scale and rounds the small scales to their
//     grids before the final search.
// Errors are weighted by the importance matrix when given.
#include "quant/grid_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/grid_codebook.h"
#include "quant/grid_tables.h"
#include "quant/grid_util.h"

namespace ikllm::quant {
namespace {

constexpr int QK = 256;

template <class T>
Codebook grid_book(const T* grid, int n, int G, int clusters, bool is_signed) {
    std::vector<int8_t> pts((size_t)n * G);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < G; ++j)
            pts[(size_t)i * G + j] = is_signed ? grid_sbyte((uint64_t)grid[i], j) : (int8_t)grid_byte((uint64_t)grid[i], j);
    return Codebook(G, std::move(pts), clusters, 4);
}
const Codebook& book_iq2xxs() { static const Codebook b = grid_book(kIq2xxsGrid, 256, 8, 16, false); return b; }
const Codebook& book_iq2xs() { static const Codebook b = grid_book(kIq2xsGrid, 512, 8, 32, false); return b; }
const Codebook& book_iq2s() { static const Codebook b = grid_book(kIq2sGrid, 1024, 8, 32, false); return b; }
const Codebook& book_iq3xxs() { static const Codebook b = grid_book(kIq3xxsGrid, 256, 4, 1, false); return b; }
const Codebook& book_iq3s() { static const Codebook b = grid_book(kIq3sGrid, 512, 4, 1, false); return b; }
const Codebook& book_iq1s() { static const Codebook b = grid_book(kIq1sGrid, 2048, 8, 64, true); return b; }

// Per-weight importance: imatrix (or 1) times sqrt(sigma^2 + x^2) over the 256-block.
void block_weights(const float* x, const float* imatrix, float* w) {
    float s2 = 0;
    for (int j = 0; j < QK; ++j) s2 += x[j] * x[j];
    const float sigma2 = 2 * s2 / QK;
    for (int j = 0; j < QK; ++j) w[j] = (imatrix ? imatrix[j] : 1.0f) * std::sqrt(sigma2 + x[j] * x[j]);
}

float amax_n(const float* x, int n) {
    float m = 0;
    for (int j = 0; j < n; ++j) m = std::max(m, std::fabs(x[j]));
    return m;
}

// ---- magnitude grids with signs ------------------------------------------------------------------

// One 8-weight group: grid indices (one per G weights), sign mask, values (signed grid values).
struct MagGroup {
    uint16_t idx[2];
    uint8_t signs;
    float v[8];
};

struct MagSpec {
    const Codebook* book;
    int G;        // grid entry width (8 or 4)
    bool parity;  // 7-bit sign index: even number of negatives
};

// Fits one 8-weight group at scale e; returns the weighted squared error.
float fit_group(const MagSpec& sp, const float* x, const float* w, float e, MagGroup& out) {
    uint8_t s = 0;
    for (int j = 0; j < 8; ++j)
        if (x[j] < 0) s |= (uint8_t)(1u << j);
    if (sp.parity && (__builtin_popcount(s) & 1)) {  // flip the cheapest sign
        int jmin = 0;
        for (int j = 1; j < 8; ++j)
            if (w[j] * x[j] * x[j] < w[jmin] * x[jmin] * x[jmin]) jmin = j;
        s ^= (uint8_t)(1u << jmin);
    }
    out.signs = s;
    float t[8];
    for (int j = 0; j < 8; ++j) t[j] = (((s >> j) & 1) ? -x[j] : x[j]) / e;
    float err = 0;
    for (int h = 0; h < 8 / sp.G; ++h) {
        float e1;
        out.idx[h] = (uint16_t)sp.book->nearest(t + sp.G * h, w + sp.G * h, &e1);
        const int8_t* p = sp.book->point(out.idx[h]);
        for (int j = 0; j < sp.G; ++j) out.v[sp.G * h + j] = ((s >> (sp.G * h + j)) & 1) ? -(float)p[j] : (float)p[j];
        err += e1;
    }
    return err * e * e;
}

// n groups sharing scale e: total error.
float fit_groups(const MagSpec& sp, const float* x, const float* w, int n, float e, MagGroup* g) {
    float err = 0;
    for (int i = 0; i < n; ++i) err += fit_group(sp, x + 8 * i, w + 8 * i, e, g[i]);
    return err;
}

// Best scale for n groups (alternating fit from several starts); 0 for an all-zero range.
float best_scale(const MagSpec& sp, const float* x, const float* w, int n, float max_mag) {
    const float m = amax_n(x, 8 * n);
    if (m == 0) return 0;
    float best_e = m / max_mag, best_err = INFINITY;
    MagGroup g[4];
    for (float f : {0.8f, 1.0f, 1.25f}) {
        float e = f * m / max_mag;
        for (int it = 0; it < 3; ++it) {
            const float err = fit_groups(sp, x, w, n, e, g);
            if (err < best_err) {
                best_err = err;
                best_e = e;
            }
            double num = 0, den = 0;
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < 8; ++j) {
                    num += (double)w[8 * i + j] * x[8 * i + j] * g[i].v[j];
                    den += (double)w[8 * i + j] * g[i].v[j] * g[i].v[j];
                }
            if (den <= 0 || num <= 0) break;
            e = (float)(num / den);
        }
    }
    return best_e;
}

// Block scale d (as stored in fp16) for the largest group scale emax reached at level `top`.
float block_d(float emax, float top, uint16_t* d16) {
    *d16 = f32_to_f16(emax / top);
    return f16_to_f32(*d16);
}

int round_level(float v, int lo, int hi) { return std::clamp((int)std::lround(v), lo, hi); }

}  // namespace

// ---- IQ2_XXS: 66 bytes: fp16 d; per 32 weights 4 grid bytes + u32 (4 x 7-bit sign index, scale) -
void quantize_iq2_xxs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const MagSpec sp{&book_iq2xxs(), 8, true};
    for (int64_t b = 0; b < ne0 / QK; ++b, x += QK, dst += 66) {
        float w[QK], e[8];
        block_weights(x, imatrix ? imatrix + QK * b : nullptr, w);
        for (int ib = 0; ib < 8; ++ib) e[ib] = best_scale(sp, x + 32 * ib, w + 32 * ib, 4, 43.0f);
        uint16_t d16;
        const float d = block_d(*std::max_element(e, e + 8), 15.5f * 0.25f, &d16);
        std::memset(dst, 0, 66);
        wr_u16(dst, d16);
        for (int ib = 0; ib < 8 && d > 0; ++ib) {
            const int s = round_level(e[ib] / (0.25f * d) - 0.5f, 0, 15);
            MagGroup g[4];
            fit_groups(sp, x + 32 * ib, w + 32 * ib, 4, (d * (0.5f + (float)s)) * 0.25f, g);
            uint32_t a = (uint32_t)s << 28;
            for (int l = 0; l < 4; ++l) {
                dst[2 + 8 * ib + l] = (uint8_t)g[l].idx[0];
                a |= (uint32_t)(g[l].signs & 127) << (7 * l);
            }
            wr_u32(dst + 2 + 8 * ib + 4, a);
        }
    }
}

// ---- IQ2_XS (74 bytes) and IQ2_S (82 bytes): scales per 16 weights ----------------------------------
template <bool S>
void quantize_iq2_xs_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const MagSpec sp{S ? &book_iq2s() : &book_iq2xs(), 8, !S};
    constexpr int kBytes = S ? 82 : 74;
    for (int64_t b = 0; b < ne0 / QK; ++b, x += QK, dst += kBytes) {
        float w[QK], e[16];
        block_weights(x, imatrix ? imatrix + QK * b : nullptr, w);
        for (int h = 0; h < 16; ++h) e[h] = best_scale(sp, x + 16 * h, w + 16 * h, 2, 43.0f);
        uint16_t d16;
        const float d = block_d(*std::max_element(e, e + 16), 15.5f * 0.25f, &d16);
        std::memset(dst, 0, kBytes);
        wr_u16(dst, d16);
        for (int h = 0; h < 16 && d > 0; ++h) {
            const int ib = h / 2;
            const int s = round_level(e[h] / (0.25f * d) - 0.5f, 0, 15);
            MagGroup g[2];
            fit_groups(sp, x + 16 * h, w + 16 * h, 2, (d * (0.5f + (float)s)) * 0.25f, g);
            dst[(S ? 74 : 66) + ib] |= (uint8_t)(s << (4 * (h % 2)));
            for (int q = 0; q < 2; ++q) {
                const int l = 2 * (h % 2) + q;  // group inside the 32-weight sub-block
                if (S) {
                    dst[2 + 4 * ib + l] = (uint8_t)g[q].idx[0];
                    dst[34 + 4 * ib + l] = g[q].signs;
                    dst[66 + ib] |= (uint8_t)((g[q].idx[0] >> 8) << (2 * l));
                } else {
                    wr_u16(dst + 2 + 2 * (4 * ib + l), (uint16_t)(g[q].idx[0] | (g[q].signs & 127) << 9));
                }
            }
        }
    }
}

// ---- IQ3_XXS: 98 bytes: fp16 d, 64 grid bytes (4 weights each), per 32 weights a u32 -------------
void quantize_iq3_xxs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const MagSpec sp{&book_iq3xxs(), 4, true};
    for (int64_t b = 0; b < ne0 / QK; ++b, x += QK, dst += 98) {
        float w[QK], e[8];
        block_weights(x, imatrix ? imatrix + QK * b : nullptr, w);
        for (int ib = 0; ib < 8; ++ib) e[ib] = best_scale(sp, x + 32 * ib, w + 32 * ib, 4, 62.0f);
        uint16_t d16;
        const float d = block_d(*std::max_element(e, e + 8), 15.5f * 0.5f, &d16);
        std::memset(dst, 0, 98);
        wr_u16(dst, d16);
        for (int ib = 0; ib < 8 && d > 0; ++ib) {
            const int s = round_level(e[ib] / (0.5f * d) - 0.5f, 0, 15);
            MagGroup g[4];
            fit_groups(sp, x + 32 * ib, w + 32 * ib, 4, (d * (0.5f + (float)s)) * 0.5f, g);
            uint32_t a = (uint32_t)s << 28;
            for (int l = 0; l < 4; ++l) {
                dst[2 + 8 * ib + 2 * l] = (uint8_t)g[l].idx[0];
                dst[2 + 8 * ib + 2 * l + 1] = (uint8_t)g[l].idx[1];
                a |= (uint32_t)(g[l].signs & 127) << (7 * l);
            }
            wr_u32(dst + 66 + 4 * ib, a);
        }
    }
}

// ---- IQ3_S: 110 bytes: fp16 d, 64 low index bytes, qh[8], signs[32], scales[4] ---------------------
void quantize_iq3_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const MagSpec sp{&book_iq3s(), 4, false};
    for (int64_t b = 0; b < ne0 / QK; ++b, x += QK, dst += 110) {
        float w[QK], e[8];
        block_weights(x, imatrix ? imatrix + QK * b : nullptr, w);
        for (int ib = 0; ib < 8; ++ib) e[ib] = best_scale(sp, x + 32 * ib, w + 32 * ib, 4, 15.0f);
        uint16_t d16;
        const float d = block_d(*std::max_element(e, e + 8), 31.0f, &d16);
        std::memset(dst, 0, 110);
        wr_u16(dst, d16);
        for (int ib = 0; ib < 8 && d > 0; ++ib) {
            const int s = round_level((e[ib] / d - 1.0f) * 0.5f, 0, 15);
            MagGroup g[4];
            fit_groups(sp, x + 32 * ib, w + 32 * ib, 4, d * (float)(1 + 2 * s), g);
            dst[106 + ib / 2] |= (uint8_t)(s << (4 * (ib % 2)));
            for (int l = 0; l < 4; ++l) {
                for (int h = 0; h < 2; ++h) {
                    const int m = 2 * l + h;  // 4-weight group
                    dst[2 + 8 * ib + m] = (uint8_t)g[l].idx[h];
                    dst[66 + ib] |= (uint8_t)((g[l].idx[h] >> 8) << m);
                }
                dst[74 + 4 * ib + l] = g[l].signs;
            }
        }
    }
}

// ---- IQ1_S / IQ1_M: ternary grid plus a +-1/8 shift -----------------------------------------------
namespace {

struct TerGroup {
    uint16_t idx;
    bool neg_delta;
};

// One 8-weight group at scale e with shift delta: error, index.
float fit_ter(const float* x, const float* w, float e, float delta, uint16_t* idx) {
    float t[8];
    for (int j = 0; j < 8; ++j) t[j] = x[j] / e - delta;
    float err;
    *idx = (uint16_t)book_iq1s().nearest(t, w, &err);
    return err * e * e;
}

// Groups [0, n) share scale e; `shared_delta`: one shift for all (IQ1_S) or one per group (IQ1_M).
float fit_ter_groups(const float* x, const float* w, int n, float e, bool shared_delta, TerGroup* g) {
    if (shared_delta) {
        float best = INFINITY;
        for (int neg = 0; neg < 2; ++neg) {
            TerGroup tmp[4];
            float err = 0;
            for (int i = 0; i < n; ++i) {
                err += fit_ter(x + 8 * i, w + 8 * i, e, neg ? -0.125f : 0.125f, &tmp[i].idx);
                tmp[i].neg_delta = neg;
            }
            if (err < best) {
                best = err;
                std::copy(tmp, tmp + n, g);
            }
        }
        return best;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
        uint16_t a, b;
        const float ea = fit_ter(x + 8 * i, w + 8 * i, e, 0.125f, &a), eb = fit_ter(x + 8 * i, w + 8 * i, e, -0.125f, &b);
        g[i] = ea <= eb ? TerGroup{a, false} : TerGroup{b, true};
        err += std::min(ea, eb);
    }
    return err;
}

float best_ter_scale(const float* x, const float* w, int n, bool shared_delta) {
    const float m = amax_n(x, 8 * n);
    if (m == 0) return 0;
    float best_e = m, best_err = INFINITY;
    TerGroup g[4];
    for (float f : {0.6f, 0.85f, 1.1f}) {
        float e = f * m;
        for (int it = 0; it < 3; ++it) {
            const float err = fit_ter_groups(x, w, n, e, shared_delta, g);
            if (err < best_err) {
                best_err = err;
                best_e = e;
            }
            double num = 0, den = 0;
            for (int i = 0; i < n; ++i) {
                const int8_t* p = book_iq1s().point(g[i].idx);
                const float dl = g[i].neg_delta ? -0.125f : 0.125f;
                for (int j = 0; j < 8; ++j) {
                    const float v = (float)p[j] + dl;
                    num += (double)w[8 * i + j] * x[8 * i + j] * v;
                    den += (double)w[8 * i + j] * v * v;
                }
            }
            if (den <= 0 || num <= 0) break;
            e = (float)(num / den);
        }
    }
    return best_e;
}

}  // namespace

// IQ1_S: 50 bytes: fp16 d, qs[32], per 32 weights a u16 (3 x 3 index bits... scale, shift sign).
void quantize_iq1_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    for (int64_t b = 0; b < ne0 / QK; ++b, x += QK, dst += 50) {
        float w[QK], e[8];
        block_weights(x, imatrix ? imatrix + QK * b : nullptr, w);
        for (int ib = 0; ib < 8; ++ib) e[ib] = best_ter_scale(x + 32 * ib, w + 32 * ib, 4, true);
        uint16_t d16;
        const float d = block_d(*std::max_element(e, e + 8), 15.0f, &d16);
        std::memset(dst, 0, 50);
        wr_u16(dst, d16);
        for (int ib = 0; ib < 8 && d > 0; ++ib) {
            const int s = round_level((e[ib] / d - 1.0f) * 0.5f, 0, 7);
            TerGroup g[4];
            fit_ter_groups(x + 32 * ib, w + 32 * ib, 4, d * (float)(2 * s + 1), true, g);
            uint16_t h = (uint16_t)(s << 12 | (g[0].neg_delta ? 0x8000 : 0));
            for (int l = 0; l < 4; ++l) {
                dst[2 + 4 * ib + l] = (uint8_t)g[l].idx;
                h |= (uint16_t)((g[l].idx >> 8) << (3 * l));
            }
            wr_u16(dst + 34 + 2 * ib, h);
        }
    }
}

// IQ1_M: 56 bytes: qs[32], qh[16], 4 x u16 scales carrying the fp16 d in their top nibbles.
void quantize_iq1_m(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    for (int64_t b = 0; b < ne0 / QK; ++b, x += QK, dst += 56) {
        float w[QK], e[16];
        block_weights(x, imatrix ? imatrix + QK * b : nullptr, w);
        for (int h = 0; h < 16; ++h) e[h] = best_ter_scale(x + 16 * h, w + 16 * h, 2, false);
        uint16_t d16;
        const float d = block_d(*std::max_element(e, e + 16), 15.0f, &d16);
        std::memset(dst, 0, 56);
        uint16_t sc[4] = {0, 0, 0, 0};
        for (int h = 0; h < 16 && d > 0; ++h) {
            const int ib = h / 2;
            const int s = round_level((e[h] / d - 1.0f) * 0.5f, 0, 7);
            sc[ib / 2] |= (uint16_t)(s << (6 * (ib % 2) + 3 * (h % 2)));
            TerGroup g[2];
            fit_ter_groups(x + 16 * h, w + 16 * h, 2, d * (float)(2 * s + 1), false, g);
            uint8_t hq = 0;
            for (int q = 0; q < 2; ++q) {
                dst[4 * ib + 2 * (h % 2) + q] = (uint8_t)g[q].idx;
                hq |= (uint8_t)(((g[q].idx >> 8) | (g[q].neg_delta ? 8 : 0)) << (4 * q));
            }
            dst[32 + 2 * ib + (h % 2)] = hq;
        }
        for (int k = 0; k < 4; ++k) wr_u16(dst + 48 + 2 * k, (uint16_t)(sc[k] | ((d16 >> (4 * k)) & 15) << 12));
    }
}

void quantize_iq2_xs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    quantize_iq2_xs_s<false>(x, dst, ne0, imatrix);
}
void quantize_iq2_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    quantize_iq2_xs_s<true>(x, dst, ne0, imatrix);
}

}  // namespace ikllm::quant
