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
#include "kernels/float_tile_drive.h"

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
constexpr std::array<FloatTileFn, RM * TM> make_tiles(std::index_sequence<I...>) {
    return {&tile<WL, XL, (int)(I / TM) + 1, (int)(I % TM) + 1>...};
}

template <class WL, class XL>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    constexpr int RM = 4, TM = 3;
    static constexpr std::array<FloatTileFn, RM * TM> tiles = make_tiles<WL, XL, RM, TM>(std::make_index_sequence<RM * TM>{});
    float_tiles_drive<RM, TM>(tiles.data(), WL::kBytes, XL::kBytes, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
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
