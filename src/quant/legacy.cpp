// 32-weight block types (quant-formats.md §5): Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q6_0 IQ4_NL MXFP4 and the
// 128-weight Q1_0_G128. Decoding follows the spec's formulas literally (operation order and
// signed zeros included). Encoding without an importance matrix reproduces the reference's plain
// rounding for Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 (byte-identical to its files); with one, and always for
// Q6_0 / IQ4_NL / MXFP4 (whose reference quantizers search too), a weighted scale search is used.
// Also decodes the 32-block activation formats (Q8_1, Q8_0_X4, Q8_1_X4, Q8_2_X4).
#include <cfloat>
#include <cstdint>
#include <cmath>

#include "quant/act_q8_0.h"
#include "quant/families.h"
#include "quant/iq4nl_nearest.h"
#include "quant/round_int.h"
#include "quant/legacy_blocks.h"

namespace ikllm::quant {
namespace {

using namespace legacy;

inline void wr16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void wr32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// ---- decoding --------------------------------------------------------------------------------

void q4_0_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kQ4_0Bytes, y += 32) {
        const float d = rdf16(src);
        q4_codes(src + 2, q);
        for (int w = 0; w < 32; ++w) y[w] = (float)(q[w] - 8) * d;
    }
}

void q4_1_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kQ4_1Bytes, y += 32) {
        const float d = rdf16(src), m = rdf16(src + 2);
        q4_codes(src + 4, q);
        for (int w = 0; w < 32; ++w) y[w] = (float)q[w] * d + m;  // product exact: one rounding
    }
}

void q5_0_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kQ5_0Bytes, y += 32) {
        const float d = rdf16(src);
        q5_codes(src + 2, src + 6, q);
        for (int w = 0; w < 32; ++w) y[w] = (float)(q[w] - 16) * d;
    }
}

void q5_1_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kQ5_1Bytes, y += 32) {
        const float d = rdf16(src), m = rdf16(src + 2);
        q5_codes(src + 4, src + 8, q);
        for (int w = 0; w < 32; ++w) y[w] = (float)q[w] * d + m;
    }
}

void q8_0_dequant(const uint8_t* src, float* y, int64_t n) {
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kQ8_0Bytes, y += 32) {
        const float d = rdf16(src);
        const int8_t* qs = reinterpret_cast<const int8_t*>(src + 2);
        for (int w = 0; w < 32; ++w) y[w] = (float)qs[w] * d;
    }
}

void q6_0_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kQ6_0Bytes, y += 32) {
        const float d = rdf16(src);
        q6_codes(src + 2, src + 10, q);
        for (int w = 0; w < 32; ++w) y[w] = (float)(q[w] - 32) * d;
    }
}

void iq4_nl_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kIq4NlBytes, y += 32) {
        const float d = rdf16(src);
        q4_codes(src + 2, q);
        for (int w = 0; w < 32; ++w) y[w] = d * (float)kIq4nlValues[q[w]];
    }
}

void mxfp4_dequant(const uint8_t* src, float* y, int64_t n) {
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, src += kMxfp4Bytes, y += 32) {
        const float d = e8m0_half(src[0]);
        q4_codes(src + 1, q);
        for (int w = 0; w < 32; ++w) y[w] = d * (float)kMxfp4Values[q[w]];
    }
}

void q1_0_g128_dequant(const uint8_t* src, float* y, int64_t n) {
    for (int64_t ib = 0; ib < n / 128; ++ib, src += kQ1_0G128Bytes, y += 128) {
        const float d = rdf16(src);
        for (int w = 0; w < 128; ++w) y[w] = ((src[2 + w / 8] >> (w % 8)) & 1) ? d : -d;
    }
}

// ---- encoding helpers ----------------------------------------------------------------------

// Importance of each weight in a block: imatrix[j] * sqrt(sigma2 + x^2) (sigma2 = 2 * mean x^2 of
// the row), the usual weighting of the reference family; without imatrix, sigma2 + x^2 (a mix of
// absolute and relative error).
struct BlockWeights {
    float w[128];
    BlockWeights(const float* x, int n, const float* imatrix, float sigma2) {
        for (int j = 0; j < n; ++j)
            w[j] = imatrix ? imatrix[j] * std::sqrt(sigma2 + x[j] * x[j]) : sigma2 + x[j] * x[j];
    }
};

float row_sigma2(const float* x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += (double)x[i] * x[i];
    return n ? (float)(2.0 * s / (double)n) : 0.0f;
}

// Signed value of largest magnitude (first one on ties), as the reference's ref routines use.
float signed_absmax(const float* x, int n) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; ++j)
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

// Levels for K inverse scales id[c] at once, clamped to [-nmax, nmax-1], and the least-squares d
// for each (0 when all levels are 0). Candidate c's sums are the same chain of additions it would
// be alone (same bits); K independent chains keep the adder busy where one waits on the latency
// of each double addition.
template <int K>
void assign_symmetric(const float* x, const float* w, int n, int nmax, const float* id, int (*L)[128], float* d) {
    double sxl[K] = {}, sll[K] = {};
    for (int j = 0; j < n; ++j)
        for (int c = 0; c < K; ++c) {
            int l = round_int(id[c] * x[j]);
            l = l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l);
            L[c][j] = l;
            sxl[c] += (double)w[j] * x[j] * l;
            sll[c] += (double)w[j] * l * l;
        }
    for (int c = 0; c < K; ++c) d[c] = sll[c] > 0 ? (float)(sxl[c] / sll[c]) : 0.0f;
}

// Weighted errors of K level sets L[c] with scales d[c] (as stored: fp16-rounded), interleaved.
template <int K>
void level_errors(const float* x, const float* w, int n, const int (*L)[128], const float* d, double* err) {
    double dh[K];
    for (int c = 0; c < K; ++c) dh[c] = f16_to_f32(f32_to_f16(d[c])), err[c] = 0;
    for (int j = 0; j < n; ++j)
        for (int c = 0; c < K; ++c) {
            const double e = x[j] - dh[c] * L[c][j];
            err[c] += w[j] * e * e;
        }
}

// Symmetric uniform levels L in [-nmax, nmax-1] with scale d: weighted search over candidate
// scales that map the extreme value near either end of the range; every candidate's d is refit
// by least squares and its levels re-assigned once. Returns d. Candidates run eight at a time
// (assign_symmetric), compared in order.
float search_symmetric(const float* x, const float* w, int n, int nmax, int* L) {
    const float max = signed_absmax(x, n);
    for (int j = 0; j < n; ++j) L[j] = 0;
    if (max == 0.0f) return 0.0f;
    constexpr int kCands = 38, K = 8;
    float target[kCands + K] = {};
    for (int side = 0, c = 0; side < 2; ++side)
        for (int t = -9; t <= 9; ++t, ++c)
            target[c] = side == 0 ? -((float)nmax + 0.1f * (float)t) : ((float)nmax - 1 + 0.1f * (float)t);
    double best_err = DBL_MAX;
    float best_d = 0;
    int tmp[K][128];
    for (int c0 = 0; c0 < kCands; c0 += K) {
        float id[K], d[K];
        bool ok[K];
        for (int c = 0; c < K; ++c) id[c] = target[c0 + c] / max;  // past the end: unused lanes
        assign_symmetric<K>(x, w, n, nmax, id, tmp, d);
        for (int c = 0; c < K; ++c) {
            ok[c] = c0 + c < kCands && d[c] != 0.0f;
            id[c] = ok[c] ? 1.0f / d[c] : 0.0f;
        }
        assign_symmetric<K>(x, w, n, nmax, id, tmp, d);
        double err[K];
        level_errors<K>(x, w, n, tmp, d, err);
        for (int c = 0; c < K; ++c)
            if (ok[c] && d[c] != 0.0f && err[c] < best_err) {
                best_err = err[c];
                best_d = d[c];
                for (int j = 0; j < n; ++j) L[j] = tmp[c][j];
            }
    }
    return best_d;
}

// Asymmetric levels 0..nmax with y = d*L + m: alternate code assignment and a weighted
// least-squares fit of (d, m). Returns d, sets *m.
float search_affine(const float* x, const float* w, int n, int nmax, int* L, float* m_out) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < n; ++j) {
        mn = std::fmin(mn, x[j]);
        mx = std::fmax(mx, x[j]);
    }
    float d = (mx - mn) / (float)nmax, m = mn;
    if (d == 0.0f) {
        for (int j = 0; j < n; ++j) L[j] = 0;
        *m_out = mn;
        return 0.0f;
    }
    for (int iter = 0; iter < 5; ++iter) {
        const float id = 1.0f / d;
        double sw = 0, sl = 0, sll = 0, sx = 0, sxl = 0;
        for (int j = 0; j < n; ++j) {
            int l = (int)std::nearbyint((x[j] - m) * id);
            l = l < 0 ? 0 : (l > nmax ? nmax : l);
            L[j] = l;
            sw += w[j];
            sl += (double)w[j] * l;
            sll += (double)w[j] * l * l;
            sx += (double)w[j] * x[j];
            sxl += (double)w[j] * x[j] * l;
        }
        const double det = sw * sll - sl * sl;
        if (det <= 0) break;
        const double nd = (sw * sxl - sx * sl) / det, nm = (sll * sx - sl * sxl) / det;
        if (!(nd > 0)) break;
        d = (float)nd;
        m = (float)nm;
    }
    *m_out = m;
    return d;
}

// The reference's C conversion (int8_t)(float) on x86: truncate to int32 (NaN and out-of-range
// give INT_MIN), keep the low byte. Only reachable when 1/d overflows for subnormal blocks.
inline int c_to_i8(float v) {
    const int32_t i = std::fabs(v) < 2147483648.0f ? (int32_t)v : INT32_MIN;
    return (int8_t)(uint8_t)(uint32_t)i;
}

// ---- Q4_0 / Q5_0 / Q6_0: symmetric, codes q = L + 2^(b-1) ----------------------------------

// Reference "ref" codes: d = max / -nmax, q = min(2nmax-1, (int)(x*id + nmax + 0.5)).
void ref_symmetric(const float* x, int nmax, float* d_out, uint8_t* q) {
    const float max = signed_absmax(x, 32);
    const float d = max / (float)-nmax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; ++j) {
        const int v = c_to_i8(x[j] * id + ((float)nmax + 0.5f));
        q[j] = (uint8_t)(v < 2 * nmax - 1 ? v : 2 * nmax - 1);
    }
    *d_out = d;
}

// `search`: also without imatrix (the reference's Q6_0 refits its scale; Q4_0/Q5_0 do not).
void symmetric_block(const float* x, const float* imatrix, float sigma2, int nmax, bool search, float* d, uint8_t* q) {
    if (!imatrix && !search) {
        ref_symmetric(x, nmax, d, q);
        return;
    }
    const BlockWeights bw(x, 32, imatrix, sigma2);
    int L[32];
    *d = search_symmetric(x, bw.w, 32, nmax, L);
    for (int j = 0; j < 32; ++j) q[j] = (uint8_t)(L[j] + nmax);
}

void pack_nl4(const uint8_t* q, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}

void q4_0_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = imatrix ? row_sigma2(x, n) : 0;
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kQ4_0Bytes) {
        float d;
        symmetric_block(x, imatrix ? imatrix + 32 * ib : nullptr, sigma2, 8, false, &d, q);
        wr16(dst, f32_to_f16(d));
        pack_nl4(q, dst + 2);
    }
}

void q5_0_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = imatrix ? row_sigma2(x, n) : 0;
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kQ5_0Bytes) {
        float d;
        symmetric_block(x, imatrix ? imatrix + 32 * ib : nullptr, sigma2, 16, false, &d, q);
        uint32_t qh = 0;
        for (int j = 0; j < 32; ++j) qh |= (uint32_t)((q[j] >> 4) & 1) << j;
        wr16(dst, f32_to_f16(d));
        wr32(dst + 2, qh);
        pack_nl4(q, dst + 6);
    }
}

void q6_0_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = imatrix ? row_sigma2(x, n) : 0;
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kQ6_0Bytes) {
        float d;
        symmetric_block(x, imatrix ? imatrix + 32 * ib : nullptr, sigma2, 32, true, &d, q);
        wr16(dst, f32_to_f16(d));
        uint8_t* qh = dst + 2;
        std::memset(qh, 0, 8);
        for (int w = 0; w < 32; ++w) {
            const int j = w & 15, h = w >> 4;
            qh[j & 7] |= (uint8_t)(((q[w] >> 4) & 3) << (4 * (j >> 3) + 2 * h));
        }
        pack_nl4(q, dst + 10);
    }
}

// ---- Q4_1 / Q5_1: affine ---------------------------------------------------------------------

// Reference "ref" codes: d = (max-min)/nmax, q = (int)((x-min)*id + 0.5), m = min.
void ref_affine(const float* x, int nmax, float* d_out, float* m_out, uint8_t* q) {
    float mn = FLT_MAX, mx = -FLT_MAX;
    for (int j = 0; j < 32; ++j) {
        mn = x[j] < mn ? x[j] : mn;
        mx = x[j] > mx ? x[j] : mx;
    }
    const float d = (mx - mn) / (float)nmax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; ++j) {
        const int v = (uint8_t)c_to_i8((x[j] - mn) * id + 0.5f);
        q[j] = (uint8_t)(v < nmax ? v : nmax);
    }
    *d_out = d;
    *m_out = mn;
}

void affine_block(const float* x, const float* imatrix, float sigma2, int nmax, float* d, float* m, uint8_t* q) {
    if (!imatrix) {
        ref_affine(x, nmax, d, m, q);
        return;
    }
    const BlockWeights bw(x, 32, imatrix, sigma2);
    int L[32];
    *d = search_affine(x, bw.w, 32, nmax, L, m);
    for (int j = 0; j < 32; ++j) q[j] = (uint8_t)L[j];
}

void q4_1_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = imatrix ? row_sigma2(x, n) : 0;
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kQ4_1Bytes) {
        float d, m;
        affine_block(x, imatrix ? imatrix + 32 * ib : nullptr, sigma2, 15, &d, &m, q);
        wr16(dst, f32_to_f16(d));
        wr16(dst + 2, f32_to_f16(m));
        pack_nl4(q, dst + 4);
    }
}

void q5_1_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = imatrix ? row_sigma2(x, n) : 0;
    uint8_t q[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kQ5_1Bytes) {
        float d, m;
        affine_block(x, imatrix ? imatrix + 32 * ib : nullptr, sigma2, 31, &d, &m, q);
        uint32_t qh = 0;
        for (int j = 0; j < 32; ++j) qh |= (uint32_t)((q[j] >> 4) & 1) << j;
        wr16(dst, f32_to_f16(d));
        wr16(dst + 2, f32_to_f16(m));
        wr32(dst + 4, qh);
        pack_nl4(q, dst + 8);
    }
}

// ---- Q8_0: half away from zero with id = 1/d; like the reference, no use for an imatrix -----

void q8_0_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kQ8_0Bytes) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr16(dst, f32_to_f16(d));
        int8_t* qs = reinterpret_cast<int8_t*>(dst + 2);
        for (int j = 0; j < 32; ++j) qs[j] = (int8_t)c_to_i8(std::round(x[j] * id));
    }
}

// ---- IQ4_NL / MXFP4: non-uniform levels ------------------------------------------------------

// IQ4_NL: try scales mapping the extreme value to the table's ends, refit d by least squares
// for each candidate, keep the smallest weighted error.
void iq4_nl_block(const float* x, const float* w, uint8_t* dst) {
    static constexpr float kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const float max = signed_absmax(x, 32);
    uint8_t best_q[32] = {};
    float best_d = 0;
    if (max != 0.0f) {
        double best_err = DBL_MAX;
        uint8_t q[32];
        for (int t = -7; t <= 7; ++t) {
            for (int side = 0; side < 2; ++side) {  // extreme value -> most negative or most positive level
                const float target = side == 0 ? -127.0f + (float)t : 113.0f + (float)t;
                const float id = target / max;
                double sxl = 0, sll = 0;
                for (int j = 0; j < 32; ++j) {
                    q[j] = (uint8_t)iq4nl_nearest(x[j] * id);
                    sxl += (double)w[j] * x[j] * kLevels[q[j]];
                    sll += (double)w[j] * kLevels[q[j]] * kLevels[q[j]];
                }
                if (sll <= 0) continue;
                float d = (float)(sxl / sll);
                // one re-assignment with the refit scale
                if (d != 0.0f) {
                    const float id2 = 1.0f / d;
                    sxl = sll = 0;
                    for (int j = 0; j < 32; ++j) {
                        q[j] = (uint8_t)iq4nl_nearest(x[j] * id2);
                        sxl += (double)w[j] * x[j] * kLevels[q[j]];
                        sll += (double)w[j] * kLevels[q[j]] * kLevels[q[j]];
                    }
                    if (sll > 0) d = (float)(sxl / sll);
                }
                const float dh = f16_to_f32(f32_to_f16(d));  // judge with the stored scale
                double err = 0;
                for (int j = 0; j < 32; ++j) {
                    const double e = x[j] - (double)dh * kLevels[q[j]];
                    err += w[j] * e * e;
                }
                if (err < best_err) {
                    best_err = err;
                    best_d = d;
                    std::memcpy(best_q, q, 32);
                }
            }
        }
    } else {
        for (int j = 0; j < 32; ++j) best_q[j] = 8;  // level +1 with d = 0 decodes to 0
    }
    wr16(dst, f32_to_f16(best_d));
    pack_nl4(best_q, dst + 2);
}

void iq4_nl_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = row_sigma2(x, n);
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kIq4NlBytes) {
        const BlockWeights bw(x, 32, imatrix ? imatrix + 32 * ib : nullptr, sigma2);
        float w[32];
        for (int j = 0; j < 32; ++j) w[j] = imatrix ? bw.w[j] : 1.0f + bw.w[j] / (sigma2 > 0 ? sigma2 : 1.0f);
        iq4_nl_block(x, w, dst);
    }
}

// MXFP4: the scale is a power of two; try the exponents around amax/12 and keep the best.
void mxfp4_block(const float* x, const float* w, uint8_t* dst) {
    // doubled E2M1 values, ascending, with their codes
    static constexpr float kLevels[15] = {-12, -8, -6, -4, -3, -2, -1, 0, 1, 2, 3, 4, 6, 8, 12};
    static constexpr uint8_t kCodes[15] = {15, 14, 13, 12, 11, 10, 9, 0, 1, 2, 3, 4, 5, 6, 7};
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    int e_best = 0;
    uint8_t q_best[32] = {};
    if (amax > 0 && std::isfinite(amax)) {
        const int e0 = 128 + (int)std::floor(std::log2(amax / 12.0f));
        double best_err = DBL_MAX;
        for (int e = e0 - 1; e <= e0 + 2; ++e) {
            if (e < 0 || e > 255) continue;
            const float d = e8m0_half((uint8_t)e);
            uint8_t q[32];
            double err = 0;
            for (int j = 0; j < 32; ++j) {
                const float v = x[j] / d;
                int k = 0;
                float be = std::fabs(v - kLevels[0]);
                for (int i = 1; i < 15; ++i) {
                    const float ei = std::fabs(v - kLevels[i]);
                    if (ei < be) { be = ei; k = i; }
                }
                q[j] = kCodes[k];
                const double r = x[j] - (double)d * kLevels[k];
                err += w[j] * r * r;
            }
            if (err < best_err) {
                best_err = err;
                e_best = e;
                std::memcpy(q_best, q, 32);
            }
        }
    }
    dst[0] = (uint8_t)e_best;
    pack_nl4(q_best, dst + 1);
}

void mxfp4_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    const float sigma2 = row_sigma2(x, n);
    for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, dst += kMxfp4Bytes) {
        float w[32];
        for (int j = 0; j < 32; ++j)
            w[j] = imatrix ? imatrix[32 * ib + j] * std::sqrt(sigma2 + x[j] * x[j]) : 1.0f;
        mxfp4_block(x, w, dst);
    }
}

// Q1_0_G128: sign bits, d = weighted mean magnitude (least-squares optimum for fixed signs).
void q1_0_g128_quantize(const float* x, uint8_t* dst, int64_t n, const float* imatrix) {
    for (int64_t ib = 0; ib < n / 128; ++ib, x += 128, dst += kQ1_0G128Bytes) {
        double sw = 0, swx = 0;
        std::memset(dst + 2, 0, 16);
        for (int j = 0; j < 128; ++j) {
            const double wj = imatrix ? imatrix[128 * ib + j] : 1.0;
            sw += wj;
            swx += wj * std::fabs(x[j]);
            if (x[j] >= 0) dst[2 + j / 8] |= (uint8_t)(1u << (j % 8));
        }
        wr16(dst, f32_to_f16(sw > 0 ? (float)(swx / sw) : 0.0f));
    }
}

// ---- table -----------------------------------------------------------------------------------

constexpr FamilyEntry kLegacyEntries[] = {
    {T_Q4_0, q4_0_dequant, q4_0_quantize},
    {T_Q4_1, q4_1_dequant, q4_1_quantize},
    {T_Q5_0, q5_0_dequant, q5_0_quantize},
    {T_Q5_1, q5_1_dequant, q5_1_quantize},
    {T_Q8_0, q8_0_dequant, q8_0_quantize},
    {T_Q8_1, act_q8_1_decode_row, nullptr},
    {T_IQ4_NL, iq4_nl_dequant, iq4_nl_quantize},
    {T_MXFP4, mxfp4_dequant, mxfp4_quantize},
    {T_Q1_0_G128, q1_0_g128_dequant, q1_0_g128_quantize},
    {T_Q8_0_X4, act_q8_0_x4_decode_row, nullptr},
    {T_Q8_1_X4, act_q8_1_x4_decode_row, nullptr},
    {T_Q8_2_X4, act_q8_2_x4_decode_row, nullptr},
    {T_Q6_0, q6_0_dequant, q6_0_quantize},
};

}  // namespace

FamilyTable legacy_family() { return {kLegacyEntries, sizeof(kLegacyEntries) / sizeof(kLegacyEntries[0])}; }

}  // namespace ikllm::quant
