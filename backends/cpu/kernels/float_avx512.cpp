// AVX-512 kernels for float weights: F32 and F16 (F32 activations) with 16-wide FMAs, BF16 with
// the AVX512-BF16 pair dot product against bf16 activations. Register tiles of up to 4 rows x 4
// tokens; row tails use masked loads.
#include "kernels/matmul.h"
#include "quant/type_traits.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512BF16__)
// GCC 12 reports its own AVX-512 intrinsic headers (_mm512_undefined_*) as uninitialized.
#if defined(__GNUC__) && !defined(__clang__)  // GCC's own intrinsics (_mm512_undefined_*)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/float_tile_drive.h"

namespace ikllm::cpu {
namespace {

// 16 lanes per step. `n` valid elements (1..16) for the masked tail.
struct LoadF32 {
    static constexpr int kBytes = 4;
    static __m512 load(const uint8_t* p) { return _mm512_loadu_ps(p); }
    static __m512 load_tail(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct LoadF16 {
    static constexpr int kBytes = 2;
    static __m512 load(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load_tail(const uint8_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};

template <class WL, int R, int T>
void tile(const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, int64_t ne0, float* y, int64_t ys, bool add) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t n16 = ne0 & ~(int64_t)15;
    for (int64_t k = 0; k < n16; k += 16) {
        __m512 xv[T];
        for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + t * xrb + 4 * k);
        for (int r = 0; r < R; ++r) {
            const __m512 wv = WL::load(w + r * wrb + k * WL::kBytes);
            for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    if (n16 < ne0) {
        const __mmask16 m = (__mmask16)((1u << (ne0 - n16)) - 1);
        __m512 xv[T];
        for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + t * xrb + 4 * n16);
        for (int r = 0; r < R; ++r) {
            const __m512 wv = WL::load_tail(w + r * wrb + n16 * WL::kBytes, m);
            for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ys + r] = (add ? y[t * ys + r] : 0.0f) + _mm512_reduce_add_ps(acc[r][t]);
}

// BF16 x BF16: 32 pairs per vdpbf16ps (products exact, summed in float32); full steps, then the
// masked tail (with the mask made inside one loop, GCC stored every accumulator to the stack after
// each product: a third of this rate).
template <int R, int T>
void tile_bf16(const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, int64_t ne0, float* y, int64_t ys, bool add) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t n32 = ne0 & ~(int64_t)31;
    for (int64_t k = 0; k < n32; k += 32) {
        __m512i xv[T];
        for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_si512(x + t * xrb + 2 * k);
        for (int r = 0; r < R; ++r) {
            const __m512i wv = _mm512_loadu_si512(w + r * wrb + 2 * k);
            for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)wv, (__m512bh)xv[t]);
        }
    }
    if (n32 < ne0) {
        const __mmask32 m = (__mmask32)((1ull << (ne0 - n32)) - 1);
        __m512i xv[T];
        for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_epi16(m, x + t * xrb + 2 * n32);
        for (int r = 0; r < R; ++r) {
            const __m512i wv = _mm512_maskz_loadu_epi16(m, w + r * wrb + 2 * n32);
            for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)wv, (__m512bh)xv[t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ys + r] = (add ? y[t * ys + r] : 0.0f) + _mm512_reduce_add_ps(acc[r][t]);
}

constexpr int RM = 4, TM = 4;

template <class WL, size_t... I>
constexpr std::array<FloatTileFn, RM * TM> make_tiles(std::index_sequence<I...>) {
    return {&tile<WL, (int)(I / TM) + 1, (int)(I % TM) + 1>...};
}
template <size_t... I>
constexpr std::array<FloatTileFn, RM * TM> make_tiles_bf16(std::index_sequence<I...>) {
    return {&tile_bf16<(int)(I / TM) + 1, (int)(I % TM) + 1>...};
}

template <class WL>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    static constexpr std::array<FloatTileFn, RM * TM> tiles = make_tiles<WL>(std::make_index_sequence<RM * TM>{});
    float_tiles_drive<RM, TM>(tiles.data(), WL::kBytes, 4, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

void run_bf16(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
              int64_t nt, float* y, int64_t ys) {
    static constexpr std::array<FloatTileFn, RM * TM> tiles = make_tiles_bf16(std::make_index_sequence<RM * TM>{});
    float_tiles_drive<RM, TM>(tiles.data(), 2, 2, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

}  // namespace

KernelTable float_kernels_avx512() {
    static const MatmulKernel kKernels[] = {
        {quant::T_F32, Isa::avx512, act_format_f32(), run<LoadF32>},
        {quant::T_F16, Isa::avx512, act_format_f32(), run<LoadF16>},
        {quant::T_BF16, Isa::avx512, act_format_bf16(), run_bf16},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable float_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
