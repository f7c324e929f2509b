// Encoders of IQ1_KT / IQ2_KT / IQ3_KT / IQ4_KT (docs: quant-formats.md §10). The format fixes only the
// decoder: value j of a group is generated from its code. The encoder here:
//   1. the code book (all codes' generated groups) is indexed once by k-means clustering, so a
//      nearest-code search visits the closest clusters only instead of all 65536 codes;
//   2. per 32-weight sub-block the scale is fitted by alternating code search and least squares;
//   3. the row scale is chosen from the largest sub-block scale, sub-block scales are rounded to
//      the type's scale grid, and the final codes are searched with the rounded scales.
// Errors are weighted by the importance matrix when one is given.
#include "quant/trellis_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/grid_codebook.h"
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"

namespace ikllm::quant {
namespace {


// Generated groups of the n codes 0..n-1 (state c + offset), G values each, optionally |v|.
Codebook kt_codebook(int G, uint32_t n, uint32_t offset, bool absolute) {
    std::vector<int8_t> pts((size_t)n * G);
    std::vector<int> v(G);
    for (uint32_t c = 0; c < n; ++c) {
        kt_generate(c, offset, G, v.data());
        for (int j = 0; j < G; ++j) pts[(size_t)c * G + j] = (int8_t)(absolute ? std::abs(v[j]) : v[j]);
    }
    return Codebook(G, std::move(pts), 256, 4);
}

// Built on first use, immutable afterwards.
const Codebook& book_iq2() {
    static const Codebook b = kt_codebook(8, 65536, kKtOffset, false);
    return b;
}
const Codebook& book_iq3() {
    static const Codebook b = kt_codebook(8, 65536, kKtOffset, true);
    return b;
}
const Codebook& book_iq4(int half) {  // half 1: codes of sub-blocks whose scale word is odd
    static const Codebook b0 = kt_codebook(4, 32768, kKtOffset, false);
    static const Codebook b1 = kt_codebook(4, 32768, kKtOffsetIq4Odd, false);
    return half ? b1 : b0;
}

// Importance of each weight of a 32-weight sub-block.
void sub_weights(const float* x, const float* imatrix, float* w) {
    float s2 = 0;
    for (int j = 0; j < 32; ++j) s2 += x[j] * x[j];
    const float sigma2 = s2 / 32;
    for (int j = 0; j < 32; ++j) w[j] = (imatrix ? imatrix[j] : 1.0f) * std::sqrt(sigma2 + x[j] * x[j]);
}

// Codes for the G-groups of a 32-weight sub-block at scale s (targets x/s, errors weighted by
// w * s^2). Returns the total weighted error in x units; v receives the chosen values.
float search_sub(const Codebook& book, int G, const float* x, const float* w, float s, uint32_t* codes, float* v) {
    float total = 0;
    for (int g = 0; g < 32 / G; ++g) {
        float t[8];
        for (int j = 0; j < G; ++j) t[j] = s != 0 ? x[G * g + j] / s : 0.0f;
        float e;
        codes[g] = book.nearest(t, w + G * g, &e);
        const int8_t* p = book.point(codes[g]);
        for (int j = 0; j < G; ++j) v[G * g + j] = p[j];
        total += e * s * s;
    }
    return total;
}

// Least-squares scale for fixed values: argmin_s sum w (x - s v)^2.
float fit_scale(const float* x, const float* w, const float* v) {
    double num = 0, den = 0;
    for (int j = 0; j < 32; ++j) {
        num += (double)w[j] * x[j] * v[j];
        den += (double)w[j] * v[j] * v[j];
    }
    return den > 0 ? (float)(num / den) : 0.0f;
}

// Alternating search/fit from an initial scale; returns the fitted scale.
float fit_sub(const Codebook& book, int G, const float* x, const float* w, float s0) {
    uint32_t codes[8];
    float v[32];
    float s = s0;
    for (int it = 0; it < 2 && s != 0; ++it) {
        search_sub(book, G, x, w, s, codes, v);
        const float ns = fit_scale(x, w, v);
        if (ns == 0) break;
        s = ns;
    }
    return s;
}

float amax32(const float* x) {
    float m = 0;
    for (int j = 0; j < 32; ++j) m = std::max(m, std::fabs(x[j]));
    return m;
}

// Index of the value of `table` (n entries) times d closest to s.
int nearest_level(const int8_t* table, int n, float d, float s) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (std::fabs(d * table[i] - s) < std::fabs(d * table[best] - s)) best = i;
    return best;
}

// Typical largest |generated value| of a group of 32: initial scale guess x_max / this.
constexpr float kTypicalMax = 80.0f;

}  // namespace

namespace {

// IQ1_KT / IQ2_KT: sub-block scales are row scale * kvalues_iq4nl[4-bit index]. `store` writes
// sub-block i (0..7) of a block: store(blk, i, scale_index, codes[4]).
template <class Store>
void quantize_kt_nl(const Codebook& book, int block_bytes, const float* x, uint8_t* dst, int64_t ne0,
                    const float* imatrix, Store store) {
    const int64_t nsub = ne0 / 32;
    std::vector<float> scales((size_t)nsub), wts((size_t)ne0);
    float smax = 0, s_at_max = 0;
    for (int64_t ib = 0; ib < nsub; ++ib) {
        sub_weights(x + 32 * ib, imatrix ? imatrix + 32 * ib : nullptr, &wts[(size_t)(32 * ib)]);
        const float m = amax32(x + 32 * ib);
        scales[(size_t)ib] = m > 0 ? fit_sub(book, 8, x + 32 * ib, &wts[(size_t)(32 * ib)], m / kTypicalMax) : 0.0f;
        if (std::fabs(scales[(size_t)ib]) > smax) {
            smax = std::fabs(scales[(size_t)ib]);
            s_at_max = scales[(size_t)ib];
        }
    }
    // iq4nl levels span -127..113: the row scale's sign makes level -127 the largest scale.
    const float d = s_at_max > 0 ? -smax / 127.0f : smax / 127.0f;
    wr_f32(dst, d);
    uint8_t* blk = dst + 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, blk += block_bytes) {
        std::memset(blk, 0, (size_t)block_bytes);
        for (int i = 0; i < 8; ++i) {
            const int64_t ib = 8 * b + i;
            const int idx = nearest_level(vals::kIq4nl, 16, d, scales[(size_t)ib]);
            uint32_t codes[4];
            float v[32];
            search_sub(book, 8, x + 32 * ib, &wts[(size_t)(32 * ib)], d * (float)vals::kIq4nl[idx], codes, v);
            store(blk, i, idx, codes);
        }
    }
}

}  // namespace

void quantize_iq1_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    static const Codebook book = kt_codebook(8, 8192, kKtOffset, false);  // 13-bit codes
    quantize_kt_nl(book, 56, x, dst, ne0, imatrix, [](uint8_t* blk, int i, int idx, const uint32_t* codes) {
        blk[i] = (uint8_t)idx;
        for (int g = 0; g < 4; ++g) {
            blk[8 + 4 * i + g] = (uint8_t)codes[g];
            blk[40 + 4 * (i % 4) + g] |= (uint8_t)(((codes[g] >> 8) & 15) << (4 * (i / 4)));
            blk[i] |= (uint8_t)(((codes[g] >> 12) & 1) << (4 + g));
        }
    });
}

void quantize_iq2_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    quantize_kt_nl(book_iq2(), 68, x, dst, ne0, imatrix, [](uint8_t* blk, int i, int idx, const uint32_t* codes) {
        blk[i % 4] |= (uint8_t)(idx << (4 * (i / 4)));
        for (int g = 0; g < 4; ++g) wr_u16(blk + 4 + 2 * (4 * i + g), (uint16_t)codes[g]);
    });
}

void quantize_iq3_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const Codebook& book = book_iq3();
    const int64_t nsub = ne0 / 32;
    std::vector<float> ax((size_t)ne0), scales((size_t)nsub), wts((size_t)ne0);
    for (int64_t i = 0; i < ne0; ++i) ax[(size_t)i] = std::fabs(x[i]);
    float smax = 0;
    for (int64_t ib = 0; ib < nsub; ++ib) {
        sub_weights(x + 32 * ib, imatrix ? imatrix + 32 * ib : nullptr, &wts[(size_t)(32 * ib)]);
        const float m = amax32(x + 32 * ib);
        const float s = m > 0 ? fit_sub(book, 8, &ax[(size_t)(32 * ib)], &wts[(size_t)(32 * ib)], m / kTypicalMax) : 0.0f;
        scales[(size_t)ib] = std::max(s, 0.0f);
        smax = std::max(smax, scales[(size_t)ib]);
    }
    const float d = smax / 15.0f;  // sub-block scales are d * (0..15)
    wr_f32(dst, d);
    uint8_t* blk = dst + 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, blk += 100) {
        std::memset(blk, 0, 100);
        for (int i = 0; i < 8; ++i) {
            const int64_t ib = 8 * b + i;
            const int k = d > 0 ? std::min(15, (int)std::lround(scales[(size_t)ib] / d)) : 0;
            blk[i % 4] |= (uint8_t)(k << (4 * (i / 4)));
            uint32_t codes[4];
            float v[32];
            search_sub(book, 8, &ax[(size_t)(32 * ib)], &wts[(size_t)(32 * ib)], d * (float)k, codes, v);
            for (int g = 0; g < 4; ++g) wr_u16(blk + 4 + 2 * (4 * i + g), (uint16_t)codes[g]);
            for (int j = 0; j < 32; ++j)  // sign of weight 32i + j: bit i of qh[j]
                if (x[32 * ib + j] < 0) blk[68 + j] |= (uint8_t)(1u << i);
        }
    }
}

void quantize_iq4_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const int64_t nsub = ne0 / 32;
    std::vector<float> scales((size_t)nsub), wts((size_t)ne0);
    std::vector<int> half((size_t)nsub);
    float smax = 0;
    for (int64_t ib = 0; ib < nsub; ++ib) {
        float* w = &wts[(size_t)(32 * ib)];
        sub_weights(x + 32 * ib, imatrix ? imatrix + 32 * ib : nullptr, w);
        const float m = amax32(x + 32 * ib);
        float best_err = INFINITY;
        for (int h = 0; h < 2 && m > 0; ++h) {  // both code book halves; keep the better fit
            const float s = fit_sub(book_iq4(h), 4, x + 32 * ib, w, m / kTypicalMax);
            uint32_t codes[8];
            float v[32];
            const float e = search_sub(book_iq4(h), 4, x + 32 * ib, w, s, codes, v);
            if (e < best_err) {
                best_err = e;
                scales[(size_t)ib] = s;
                half[(size_t)ib] = h;
            }
        }
        smax = std::max(smax, std::fabs(scales[(size_t)ib]));
    }
    const float d = smax / 64.0f;  // sub-block scales are d * (-64..63)
    wr_f32(dst, d);
    uint8_t* blk = dst + 4;
    for (int64_t b = 0; b < ne0 / QK; ++b, blk += 128) {
        std::memset(blk, 0, 128);
        for (int i = 0; i < 8; ++i) {
            const int64_t ib = 8 * b + i;
            const int ls = d > 0 ? std::clamp((int)std::lround(scales[(size_t)ib] / d), -64, 63) : 0;
            const int h = half[(size_t)ib];
            uint32_t codes[8];
            float v[32];
            search_sub(book_iq4(h), 4, x + 32 * ib, &wts[(size_t)(32 * ib)], d * (float)ls, codes, v);
            uint32_t S = (uint32_t)h | (uint32_t)(ls + 64) << 1;
            for (int g = 0; g < 8; ++g) {
                const int jj = 8 * i + g;
                blk[32 + jj] = (uint8_t)codes[g];
                blk[96 + jj % 32] |= (uint8_t)(((codes[g] >> 8) & 15) << (4 * (jj / 32)));
                S |= ((codes[g] >> 12) & 7) << (8 + 3 * g);
            }
            wr_u32(blk + 4 * i, S);
        }
    }
}

}  // namespace ikllm::quant
