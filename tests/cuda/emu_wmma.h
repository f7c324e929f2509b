// Host emulation of the warp matrix functions (nvcuda::wmma) that the fp16 tensor-core kernel
// uses, for the emulated CUDA backend (emu_prelude.h). The warp's lane 0 does the whole warp's
// work: its fragment holds the whole 16 x 16 tile (the device spreads it over the warp's registers
// in an unspecified layout), the other lanes' fragments stay unused. That is exact as long as the
// kernel reads what store_matrix_sync wrote only after a barrier, which the device requires too
// (lane 0 stores before it arrives at that barrier, so before anyone passes it). Products accumulate
// in float in k order (the device's order inside an mma is unspecified; the results agree to
// float rounding).
#pragma once
#include <cuda_fp16.h>

#include <type_traits>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// a: M x K, b: K x N, accumulator: M x N; element (r, c) at x[r * cols + c].
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static constexpr int kRows = std::is_same_v<Use, matrix_b> ? K : M;
    static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
    static constexpr int num_elements = kRows * kCols;
    // Zeroed: the other lanes' unused fragments hold row 0 wherever a kernel reads elements
    // (an accumulator loaded with row numbers, attention_mma.cu), never garbage.
    float x[kRows * kCols] = {};
};

template <class Use, int M, int N, int K, class T, class L>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, float value) {
    if (emu::lane() != 0) return;
    for (float& e : f.x) e = value;
}

// Element (r, c) of a row-major tile at p[r * ldm + c], of a column-major one at p[c * ldm + r].
template <class Use, int M, int N, int K, class L>
inline void load_matrix_sync(fragment<Use, M, N, K, __half, L>& f, const __half* p, unsigned ldm) {
    if (emu::lane() != 0) return;
    using F = fragment<Use, M, N, K, __half, L>;
    constexpr bool row = std::is_same_v<L, row_major>;
    for (int r = 0; r < F::kRows; ++r)
        for (int c = 0; c < F::kCols; ++c) f.x[r * F::kCols + c] = __half2float(row ? p[r * ldm + c] : p[c * ldm + r]);
}

// An accumulator tile from float memory (the attention kernel's row numbers).
template <int M, int N, int K>
inline void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t layout) {
    if (emu::lane() != 0) return;
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) f.x[m * N + n] = layout == mem_row_major ? p[m * ldm + n] : p[n * ldm + m];
}

template <int M, int N, int K, class LA, class LB>
inline void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, __half, LA>& a,
                     const fragment<matrix_b, M, N, K, __half, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
    if (emu::lane() != 0) return;
    float out[M * N];
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            float acc = c.x[m * N + n];
            for (int k = 0; k < K; ++k) acc += a.x[m * K + k] * b.x[k * N + n];
            out[m * N + n] = acc;
        }
    for (int i = 0; i < M * N; ++i) d.x[i] = out[i];
}

template <int M, int N, int K>
inline void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
    if (emu::lane() != 0) return;
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) (layout == mem_row_major ? p[m * ldm + n] : p[n * ldm + m]) = f.x[m * N + n];
}

}  // namespace nvcuda::wmma
