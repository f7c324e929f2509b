// AVX2/FMA kernels for float weights (F32, F16 with F32 activations, BF16 with bf16
// activations). Register tiles of up to 4 weight rows x 3 tokens: each loaded weight vector is
// reused for every token of the tile, each activation vector for every row.
#include "kernels/matmul.h"
#include "quant/type_traits.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/fp16.h"

namespace ikllm::cpu {
namespace {

struct LoadF32 {
    static constexpr int kBytes = 4;
    static __m256 load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
    static float one(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }
};
struct LoadF16 {
    static constexpr int kBytes = 2;
    static __m256 load(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static float one(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return f16_to_f32(h); }
};
struct LoadBF16 {
    static constexpr int kBytes = 2;
    static __m256 load(const uint8_t* p) {
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
    }
    static float one(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return bf16_to_f32(h); }
};

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Dot products over ne0 elements; `add`: accumulate into y (later chunks of a split row).
using TileFn = void (*)(const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, int64_t ne0, float* y, int64_t ys,
                       bool add);

template <class WL, class XL, int R, int T>
void tile(const uint8_t* w, size_t wrb, const uint8_t* x, size_t xrb, int64_t ne0, float* y, int64_t ys, bool add) {
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const int64_t n8 = ne0 & ~(int64_t)7;
    for (int64_t k = 0; k < n8; k += 8) {
        __m256 xv[T];
        for (int t = 0; t < T; ++t) xv[t] = XL::load(x + t * xrb + k * XL::kBytes);
        for (int r = 0; r < R; ++r) {
            const __m256 wv = WL::load(w + r * wrb + k * WL::kBytes);
            for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            float s = hsum(acc[r][t]);
            for (int64_t k = n8; k < ne0; ++k) s += WL::one(w + r * wrb + k * WL::kBytes) * XL::one(x + t * xrb + k * XL::kBytes);
            y[t * ys + r] = add ? y[t * ys + r] + s : s;
        }
}

template <class WL, class XL, int RM, int TM, size_t... I>
constexpr std::array<TileFn, RM * TM> make_tiles(std::index_sequence<I...>) {
    return {&tile<WL, XL, (int)(I / TM) + 1, (int)(I % TM) + 1>...};
}

// Cache blocking as in float_avx512.cpp: row panels, row-length chunks, token blocks, row tiles.
constexpr int64_t kPanelRows = 16, kChunk = 1024;

template <class WL, class XL>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    constexpr int RM = 4, TM = 3;
    static constexpr std::array<TileFn, RM * TM> tiles = make_tiles<WL, XL, RM, TM>(std::make_index_sequence<RM * TM>{});
    for (int64_t rp = r0; rp < r1; rp += kPanelRows) {
        const int64_t rpe = std::min(r1, rp + kPanelRows);
        for (int64_t k0 = 0; k0 < ne0; k0 += kChunk) {
            const int64_t kc = std::min(kChunk, ne0 - k0);
            for (int64_t t = 0; t < nt; t += TM) {
                const int tt = (int)std::min<int64_t>(TM, nt - t);
                for (int64_t r = rp; r < rpe; r += RM) {
                    const int rr = (int)std::min<int64_t>(RM, rpe - r);
                    tiles[(rr - 1) * TM + (tt - 1)](w + (size_t)r * wrb + k0 * WL::kBytes, wrb,
                                                    act + (size_t)t * arb + k0 * XL::kBytes, arb, kc, y + t * ys + r, ys,
                                                    k0 > 0);
                }
            }
        }
    }
}

}  // namespace

KernelTable float_kernels_avx2() {
    static const MatmulKernel kKernels[] = {
        {quant::T_F32, Isa::avx2, act_format_f32(), run<LoadF32, LoadF32>},
        {quant::T_F16, Isa::avx2, act_format_f32(), run<LoadF16, LoadF32>},
        {quant::T_BF16, Isa::avx2, act_format_bf16(), run<LoadBF16, LoadBF16>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable float_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
