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
#include "quant/grid_ternary.h"
#include "quant/grid_tables.h"
#include "quant/grid_util.h"

namespace ikllm::quant {
namespace {


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
// IQ1_S / IQ1_M: ternary entries, searched exactly (grid_ternary.h).
const TernaryBook& book_iq1s() { static const TernaryBook b(kIq1sGrid, 2048); return b; }

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

// ---- IQ1_S_R4 / IQ1_M_R4 rows (§12.8): one fp16 scale per row, small scales per 32 / 16 columns ----
// The search per scale block is the IQ1_S / IQ1_M one (best_ter_scale, fit_ter_groups). Each
// block's best fit gives the quadratic err(dl) = A - 2 dl B + dl^2 C (indices held fixed), which
// rates candidate row scales d cheaply: every block takes the level nearest to its optimum B / (C d).
// The best candidate is then fitted for real (indices re-searched, each block trying the two levels
// around its optimum) and refined by least squares over the whole row.
namespace {

constexpr uint16_t kIq1ZeroIdx = 1029;  // all-zero iq1s_grid entry (§12.8)

struct Iq1R4Spec {
    int cols;     // columns per small scale (32: IQ1_S_R4, 16: IQ1_M_R4)
    bool shared;  // one delta per scale block (IQ1_S_R4) or per 8 columns (IQ1_M_R4)
    bool odd;     // level(s) = 2s + 1, s = 0..7 (IQ1_S_R4) or s, s = 0..15 (IQ1_M_R4)
};

float r4_level(const Iq1R4Spec& sp, int s) { return sp.odd ? (float)(2 * s + 1) : (float)s; }
int r4_max_s(const Iq1R4Spec& sp) { return sp.odd ? 7 : 15; }
// Level index whose value is nearest to L (the best one for a convex quadratic in the level).
int r4_nearest_s(const Iq1R4Spec& sp, double L) {
    if (!(L > 0)) return 0;
    L = std::min(L, 64.0);
    return sp.odd ? round_level((float)((L - 1) * 0.5), 0, 7) : round_level((float)L, 0, 15);
}

// Per scale block: fixed-index quadratic model of the error, whether it is all zero, its weight sum.
struct R4Block {
    bool zero;
    double A, B, C, wsum;
};

// Error of a zero block of IQ1_S_R4 (index 1029, s = 0, delta +1/8: decodes to d/8) at row scale d.
double r4_zero_err(const Iq1R4Spec& sp, const R4Block& b, double d) {
    return sp.odd ? d * d * 0.015625 * b.wsum : 0.0;
}

// Sum of w*x*v and w*v*v of a fitted scale block (v = grid value + delta).
void r4_moments(const Iq1R4Spec& sp, const float* x, const float* w, const TerGroup* g, double* B, double* C) {
    *B = 0;
    *C = 0;
    for (int i = 0; i < sp.cols / 8; ++i) {
        const int8_t* p = book_iq1s().point(g[i].idx);
        const float dl = g[i].neg_delta ? -0.125f : 0.125f;
        for (int j = 0; j < 8; ++j) {
            const double v = (double)p[j] + dl;
            *B += (double)w[8 * i + j] * x[8 * i + j] * v;
            *C += (double)w[8 * i + j] * v * v;
        }
    }
}

struct R4Fit {
    std::vector<TerGroup> g;  // per 8 columns
    std::vector<uint8_t> s;   // per scale block
    double err = INFINITY;
};

// Real fit of the row at fp16 row scale d: indices searched, each block choosing between the two
// levels around its modelled optimum.
void r4_fit_row(const Iq1R4Spec& sp, const float* x, const float* w, const std::vector<R4Block>& blk, float d,
                R4Fit& out) {
    const int n = sp.cols / 8;
    const size_t nb = blk.size();
    out.g.assign(nb * n, TerGroup{kIq1ZeroIdx, false});
    out.s.assign(nb, 0);
    out.err = 0;
    for (size_t b = 0; b < nb; ++b) {
        const float* xb = x + (size_t)sp.cols * b;
        const float* wb = w + (size_t)sp.cols * b;
        if (blk[b].zero) {
            out.err += r4_zero_err(sp, blk[b], d);
            continue;
        }
        const double Lopt = blk[b].B / (blk[b].C * d);
        const int s0 = r4_nearest_s(sp, Lopt);
        int s1 = r4_level(sp, s0) < Lopt ? s0 + 1 : s0 - 1;
        if (s1 < 0 || s1 > r4_max_s(sp)) s1 = s0;
        const int cand[2] = {s0, s1};
        double best = INFINITY;
        for (int c = 0; c < (s1 == s0 ? 1 : 2); ++c) {
            const int s = cand[c];
            TerGroup g[4];
            double e;
            if (r4_level(sp, s) == 0) {  // IQ1_M_R4 level 0: block decodes to 0
                for (int i = 0; i < n; ++i) g[i] = TerGroup{kIq1ZeroIdx, false};
                e = blk[b].A;
            } else {
                e = fit_ter_groups(xb, wb, n, d * r4_level(sp, s), sp.shared, g);
            }
            if (e < best) {
                best = e;
                out.s[b] = (uint8_t)s;
                std::copy(g, g + n, out.g.begin() + (ptrdiff_t)(b * n));
            }
        }
        out.err += best;
    }
}

void quantize_iq1_r4_row(const Iq1R4Spec& sp, const float* x, int64_t ne0, const float* imatrix,
                         Iq1R4RowCodes* out) {
    const int n = sp.cols / 8;
    const size_t nb = (size_t)(ne0 / sp.cols);
    out->d16 = 0;
    out->idx.assign((size_t)(ne0 / 8), kIq1ZeroIdx);
    out->neg_delta.assign((size_t)(ne0 / 8), 0);
    out->scale.assign(nb, 0);
    if (nb == 0) return;

    // Importance: imatrix (or 1) times sqrt(sigma^2 + x^2), sigma over the row.
    std::vector<float> w((size_t)ne0);
    double s2 = 0;
    for (int64_t j = 0; j < ne0; ++j) s2 += (double)x[j] * x[j];
    const float sigma2 = (float)(2 * s2 / (double)ne0);
    for (int64_t j = 0; j < ne0; ++j) w[j] = (imatrix ? imatrix[j] : 1.0f) * std::sqrt(sigma2 + x[j] * x[j]);

    std::vector<R4Block> blk(nb);
    float emax = 0;
    for (size_t b = 0; b < nb; ++b) {
        const float* xb = x + (size_t)sp.cols * b;
        const float* wb = w.data() + (size_t)sp.cols * b;
        R4Block& r = blk[b];
        r = R4Block{false, 0, 0, 0, 0};
        for (int j = 0; j < sp.cols; ++j) {
            r.A += (double)wb[j] * xb[j] * xb[j];
            r.wsum += wb[j];
        }
        const float e = best_ter_scale(xb, wb, n, sp.shared);
        if (!(e > 0)) {
            r.zero = true;
            continue;
        }
        TerGroup g[4];
        fit_ter_groups(xb, wb, n, e, sp.shared, g);
        r4_moments(sp, xb, wb, g, &r.B, &r.C);
        if (!(r.B > 0 && r.C > 0)) {  // cannot happen for a real fit; keep the block harmless
            r.B = 0;
            r.C = 1;
        }
        emax = std::max(emax, e);
    }
    if (!(emax > 0)) return;  // all-zero row: d = 0, every block the zero block

    // Model-rated scan of the row scale.
    const float top = 15.0f;
    float best_d = 0;
    double best_model = INFINITY;
    for (int i = 0; i <= 50; ++i) {
        const float d = f16_to_f32(f32_to_f16(emax / top * (0.3f + 0.02f * (float)i)));
        if (!(d > 0) || !std::isfinite(d)) continue;
        double tot = 0;
        for (const R4Block& r : blk) {
            if (r.zero) {
                tot += r4_zero_err(sp, r, d);
                continue;
            }
            const double L = r4_level(sp, r4_nearest_s(sp, r.B / (r.C * d)));
            tot += r.A - 2 * L * d * r.B + L * L * (double)d * d * r.C;
        }
        if (tot < best_model) {
            best_model = tot;
            best_d = d;
        }
    }
    if (!(best_d > 0)) return;

    R4Fit fit, trial;
    float d = best_d;
    r4_fit_row(sp, x, w.data(), blk, d, fit);
    for (int it = 0; it < 2; ++it) {  // least-squares row scale for the chosen codes
        double num = 0, den = 0;
        for (size_t b = 0; b < nb; ++b) {
            const float* xb = x + (size_t)sp.cols * b;
            const float* wb = w.data() + (size_t)sp.cols * b;
            const double L = r4_level(sp, fit.s[b]);
            if (L == 0) continue;
            double B, C;
            r4_moments(sp, xb, wb, fit.g.data() + b * n, &B, &C);
            num += L * B;
            den += L * L * C;
        }
        if (!(den > 0 && num > 0)) break;
        const float dn = f16_to_f32(f32_to_f16((float)(num / den)));
        if (dn == d || !std::isfinite(dn)) break;
        r4_fit_row(sp, x, w.data(), blk, dn, trial);
        if (!(trial.err < fit.err)) break;
        std::swap(fit, trial);
        d = dn;
    }

    out->d16 = f32_to_f16(d);
    for (size_t b = 0; b < nb; ++b) {
        out->scale[b] = fit.s[b];
        for (int i = 0; i < n; ++i) {
            const TerGroup& g = fit.g[b * n + i];
            out->idx[b * n + i] = g.idx;
            out->neg_delta[b * n + i] = g.neg_delta ? 1 : 0;
        }
    }
}

}  // namespace

void quantize_iq1_s_r4_row(const float* x, int64_t ne0, const float* imatrix, Iq1R4RowCodes* out) {
    quantize_iq1_r4_row(Iq1R4Spec{32, true, true}, x, ne0, imatrix, out);
}
void quantize_iq1_m_r4_row(const float* x, int64_t ne0, const float* imatrix, Iq1R4RowCodes* out) {
    quantize_iq1_r4_row(Iq1R4Spec{16, false, false}, x, ne0, imatrix, out);
}

void quantize_iq2_xs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    quantize_iq2_xs_s<false>(x, dst, ne0, imatrix);
}
void quantize_iq2_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    quantize_iq2_xs_s<true>(x, dst, ne0, imatrix);
}

}  // namespace ikllm::quant
