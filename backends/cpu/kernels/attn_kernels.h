// Vector primitives of CPU flash attention, one table per instruction set (attn_<isa>.cpp),
// picked at run time like the matmul kernels. The scalar table is the reference the SIMD ones
// are tested against.
#pragma once
#include <cstdint>

#include "kernels/matmul.h"

namespace ikllm::cpu {

struct AttnKernels {
    Isa isa;
    // sum_i a[i] * b[i]
    float (*dot)(const float* a, const float* b, int64_t n);
    // One tile of scores: s[q * s_stride + j] = dot(a[q], k + j * n, n) * scale for q < nq,
    // j < nk, each dot exactly as dot() computes it (the op's results must not depend on how
    // queries and keys are grouped), blocked so that loads and reductions are shared.
    void (*scores)(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s,
                   int64_t s_stride);
    // y[i] = y[i] * s + w * x[i]
    void (*scale_axpy)(float* y, float s, float w, const float* x, int64_t n);
    // One tile of P x V for nq queries sharing the V rows: for each query q with row
    // a = acc + q * acc_stride: a[i] = a[i] * rescale[q], then a[i] += p[q * p_stride + j] * v[j * v_stride + i]
    // for j = 0..nk-1, in that order (the same operations as scale_axpy key by key, so the results are those of
    // the per-key loop; keys with p = 0 leave acc unchanged). Blocked over i and queries so each
    // V element is loaded once per group of queries and acc stays in registers across the keys.
    void (*pv_tile)(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t p_stride, int nq,
                    const float* v, int64_t v_stride, int64_t nk, int64_t n);
    // decode n cache elements of type (f32, f16, bf16, q8_0) to f32
    void (*load_row)(uint32_t type, const void* src, float* dst, int64_t n);
    // load_row for nr rows (row j from rows[j] to dst + j * n): one call per tile of cells
    void (*load_rows)(uint32_t type, const uint8_t* const* rows, int64_t nr, float* dst, int64_t n);
};

const AttnKernels* attn_kernels_scalar();
const AttnKernels* attn_kernels_avx2();    // nullptr when not compiled in
const AttnKernels* attn_kernels_avx512();  // nullptr when not compiled in
const AttnKernels* attn_kernels_neon();    // nullptr when not compiled in
// Best table for best_isa(); `isa` forces one (falls back to scalar when unavailable).
const AttnKernels& attn_kernels(Isa isa);

}  // namespace ikllm::cpu
