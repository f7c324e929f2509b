// Scalar attention primitives (the reference for the SIMD tables) and the dispatcher.
#include <cmath>

#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"

namespace ikllm::cpu {

namespace {
// The AVX2 table's operations lane by lane (attn_avx2.cpp), so the two give the same bits: four
// accumulators of 8 lanes over 32-column steps (element i into lane i % 8 of accumulator
// (i / 8) % 4), then 8-column steps into the first; lanes added (0 + 1) + (2 + 3), folded 8 -> 1
// as (l + l+4), then (0 + 2) + (1 + 3); the tail after that. Multiply-adds fused, as in the lanes.
float dot(const float* a, const float* b, int64_t n) {
    float acc[4][8] = {};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int r = 0; r < 4; ++r)
            for (int l = 0; l < 8; ++l) acc[r][l] = std::fma(a[i + 8 * r + l], b[i + 8 * r + l], acc[r][l]);
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[0][l] = std::fma(a[i + l], b[i + l], acc[0][l]);
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
    const float h0 = v[0] + v[4], h1 = v[1] + v[5], h2 = v[2] + v[6], h3 = v[3] + v[7];
    float s = (h0 + h2) + (h1 + h3);
    for (; i < n; ++i) s = std::fma(a[i], b[i], s);
    return s;
}
void scores(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    for (int q = 0; q < nq; ++q)
        for (int64_t j = 0; j < nk; ++j) s[q * ss + j] = dot(a[q], k + j * n, n) * scale;
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(w, x[i], y[i] * s);
}
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t p_stride, int nq, const float* v, int64_t vs,
             int64_t nk, int64_t n) {
    for (int q = 0; q < nq; ++q)
        for (int64_t i = 0; i < n; ++i) {
            float y = acc[q * acc_stride + i] * rescale[q];
            for (int64_t j = 0; j < nk; ++j) y = std::fma(p[q * p_stride + j], v[j * vs + i], y);
            acc[q * acc_stride + i] = y;
        }
}
void load_row(uint32_t type, const void* src, float* dst, int64_t n) { quant::kv_decode_row(type, src, dst, n); }
void load_rows(uint32_t type, const uint8_t* const* rows, int64_t nr, float* dst, int64_t n) {
    for (int64_t j = 0; j < nr; ++j) quant::kv_decode_row(type, rows[j], dst + j * n, n);
}
constexpr AttnKernels kAttnScalar{Isa::scalar, dot, scores, scale_axpy, pv_tile, load_row, load_rows};
}  // namespace

const AttnKernels* attn_kernels_scalar() { return &kAttnScalar; }

const AttnKernels& attn_kernels(Isa isa) {
    if (isa == Isa::neon && detected_isa() == Isa::neon)
        if (const AttnKernels* k = attn_kernels_neon()) return *k;
    const Isa cap = isa == Isa::avx512 && detected_isa() == Isa::avx512 ? Isa::avx512
                    : (isa == Isa::avx512 || isa == Isa::avx2) && detected_isa() != Isa::scalar ? Isa::avx2
                                                                                                   : Isa::scalar;
    if (cap == Isa::avx512)
        if (const AttnKernels* k = attn_kernels_avx512()) return *k;
    if (cap != Isa::scalar)
        if (const AttnKernels* k = attn_kernels_avx2()) return *k;
    return kAttnScalar;
}

}  // namespace ikllm::cpu
