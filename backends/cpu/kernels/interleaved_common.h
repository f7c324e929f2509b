// Shared pieces of the grid / trellis / ternary / interleaved kernel files: the activation
// formats these types use (docs: quant-formats.md §15) and a generic kernel that dequantizes a
// row group to float and multiplies it with the decoded (quantized) activations. The generic
// kernel is the scalar reference and the SIMD path of the rarer types; the dot product picks
// its vector width from the including file's ISA flags.
// Everything lives in an unnamed namespace: each ISA file gets its own copy, so no inline
// function compiled with AVX-512 flags can be shared with (and called from) scalar code.
#pragma once
#include <algorithm>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics seed results with _mm*_undefined_*(), which -Wmaybe-uninitialized
// reports at every lane-extracting shuffle; the warning is a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/act_q8_k.h"
#include "quant/interleaved_act.h"
#include "quant/ternary_formats.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

// ---- activation formats ------------------------------------------------------------------------
inline constexpr ActFormat kGtiActQ8K{quant::T_Q8_K, quant::q8_k_row_bytes, quant::encode_q8_k_row};
inline constexpr ActFormat kGtiActQ8K32{quant::T_Q8_K32, quant::q8_k32_row_bytes, quant::encode_q8_k32_row};
inline constexpr ActFormat kGtiActQ8K128{quant::T_Q8_K128, quant::q8_k128_row_bytes, quant::encode_q8_k128_row};
inline constexpr ActFormat kGtiActQ8K64{quant::T_Q8_K64, quant::q8_k64_row_bytes, quant::quantize_q8_k64_row};
inline constexpr ActFormat kGtiActQ8K16{quant::T_Q8_K16, quant::q8_k16_row_bytes, quant::quantize_q8_k16_row};
inline void gti_encode_q8_kv(const float* x, uint8_t* out, int64_t ne0) { quant::quantize_q8_kv_row(x, out, ne0, nullptr); }
inline constexpr ActFormat kGtiActQ8KV{quant::T_Q8_KV, quant::q8_kv_row_bytes, gti_encode_q8_kv};

#if defined(__AVX512F__)
inline float gti_hsum512(__m512 v) {
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
    return _mm512_cvtss_f32(v);
}
#endif

// ---- float dot product at the file's vector width -----------------------------------------------
inline float gti_dot(const float* a, const float* b, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    float s = gti_hsum512(_mm512_add_ps(s0, s1));
#elif defined(__AVX2__)
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    const __m256 t = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float s = _mm_cvtss_f32(h);
#else
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent partial sums: no latency chain
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
#endif
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

// Scratch floats. A local type (internal linkage) rather than std::vector: template code
// instantiated in an AVX-512 file could otherwise be shared by the linker with baseline files.
struct GtiFloats {
    float* p;
    explicit GtiFloats(size_t n) : p(new float[n]) {}
    ~GtiFloats() { delete[] p; }
    GtiFloats(const GtiFloats&) = delete;
    GtiFloats& operator=(const GtiFloats&) = delete;
    float* data() { return p; }
};

// ---- generic kernel: dequantize a row group, dot against decoded activations ---------------------
// Tokens are handled in tiles whose decoded floats stay in L2; each weight group is decoded once
// per tile.
template <uint32_t Type, quant::ActDecodeFn DecodeAct>
void gti_generic_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                     int64_t nt, float* y, int64_t ys) {
    const quant::TypeTraits* tt = quant::find_type(Type);
    if (!tt || !tt->dequant || r1 <= r0 || nt <= 0) return;
    const int64_t N = tt->interleave;
    const int64_t tile = std::clamp<int64_t>(262144 / (ne0 * 4), 1, nt);
    GtiFloats wbuf((size_t)(N * ne0)), xbuf((size_t)(tile * ne0));
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t t1 = std::min(nt, t0 + tile);
        for (int64_t t = t0; t < t1; ++t) DecodeAct(act + (size_t)t * arb, xbuf.data() + (t - t0) * ne0, ne0);
        for (int64_t g = r0; g < r1; g += N) {
            tt->dequant(w + (size_t)g * wrb, wbuf.data(), ne0);
            for (int64_t t = t0; t < t1; ++t)
                for (int64_t k = 0; k < N && g + k < r1; ++k)
                    y[t * ys + g + k] = gti_dot(wbuf.data() + k * ne0, xbuf.data() + (t - t0) * ne0, ne0);
        }
    }
}

inline void gti_decode_q8_2_x4(const uint8_t* in, float* y, int64_t ne0) { quant::act_q8_2_x4_decode_row(in, y, ne0); }
inline void gti_decode_q8_0(const uint8_t* in, float* y, int64_t ne0) { quant::act_q8_0_decode_row(in, y, ne0); }

}  // namespace
}  // namespace ikllm::cpu
