// Shared pieces of the grid / trellis / ternary / interleaved kernel files: the activation
// formats these types use (docs: quant-formats.md §15) and a generic kernel that dequantizes a
// row group to float and multiplies it with the decoded (quantized) activations. The generic
// kernel is the scalar reference and the SIMD path of the rarer types; the dot product picks
// its vector width from the including file's ISA flags. Grid i-quants are re-encoded the
// reference's way for large batches (grid_conv_row).
// Everything lives in an unnamed namespace: each ISA file gets its own copy, so no inline
// function compiled with AVX-512 flags can be shared with (and called from) scalar code.
#pragma once
#include <algorithm>
#include <cmath>
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

// ---- large-batch re-encoding of the grid i-quants ----------------------------------------------------
// For batches of kGridConvMinTokens tokens or more the reference first repacks grid i-quant rows
// to 8-bit codes with one fp16 scale per 256 weights (Q8_K_R8), then multiplies exactly; its
// results differ from the dequantized product (measured against the reference logits of
// refdata/quant). Every weight is an exact multiple of a block unit u = d * unit (d the block's
// fp16 scale): P = w / u (integers, e.g. (2s+1) * grid value for IQ2_*); dnew = max|P| * d0;
// P is kept when dnew < 1 (then dnew = 1), else q = RNE(P * (1/dnew)); scale fp16(u * dnew).
inline constexpr int64_t kGridConvMinTokens = 32;

struct GridConv {
    bool on;
    float d0, unit;
    int block_bytes;
};
constexpr GridConv grid_conv(uint32_t type) {
    switch (type) {
        case quant::T_IQ2_XXS: return {true, 1.0f / 124.0f, 0.125f, 66};
        case quant::T_IQ2_XS: return {true, 1.0f / 124.0f, 0.125f, 74};
        case quant::T_IQ2_S: return {true, 1.0f / 124.0f, 0.125f, 82};
        case quant::T_IQ3_XXS: return {true, 1.0f / 124.0f, 0.25f, 98};
        case quant::T_IQ3_S: return {true, 1.0f / 127.0f, 1.0f, 110};
        case quant::T_IQ1_S: return {true, 1.0f / 126.0f, 0.125f, 50};
        case quant::T_IQ1_M: return {true, 1.0f / 126.0f, 0.125f, 56};
        default: return {false, 0.0f, 0.0f, 0};
    }
}

inline float gti_half(uint16_t h) {  // exact fp16 -> float
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    float f;
    if (e == 0) f = (float)m * 5.9604644775390625e-08f;
    else if (e == 31) {
        const uint32_t u = 0x7f800000u | (m << 13);
        std::memcpy(&f, &u, 4);
    } else {
        const uint32_t u = ((e + 112u) << 23) | (m << 13);
        std::memcpy(&f, &u, 4);
    }
    return sign ? -f : f;
}
// Nearest fp16 value (round half to even) of a finite non-negative-or-negative float, as float.
inline float gti_round_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = x & 0x80000000u, ax = x & 0x7fffffffu;
    float r;
    if (ax >= 0x477ff000u) {  // overflows to infinity (or inf / NaN)
        const uint32_t o = ax > 0x7f800000u ? x : (sign | 0x7f800000u);
        std::memcpy(&r, &o, 4);
        return r;
    }
    if (ax < 0x38800000u) {  // subnormal fp16: multiples of 2^-24
        const float q = std::fabs(f) * 16777216.0f;
        r = ((q + 12582912.0f) - 12582912.0f) * 5.9604644775390625e-08f;
        return sign ? -r : r;
    }
    const uint32_t o = sign | ((ax + 0xfffu + ((ax >> 13) & 1u)) & ~0x1fffu);
    std::memcpy(&r, &o, 4);
    return r;
}
// The fp16 block scale d of a grid block.
inline float grid_block_d(uint32_t type, const uint8_t* b) {
    uint16_t h;
    if (type == quant::T_IQ1_M) {
        uint16_t sc[4];
        std::memcpy(sc, b + 48, 8);
        h = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
    } else {
        std::memcpy(&h, b, 2);
    }
    return gti_half(h);
}
// Re-encodes one dequantized block yb (block unit u): q[j] integer codes, returns the scale.
template <uint32_t Type>
float grid_conv_block(float u, const float* yb, int q[256]) {
    constexpr GridConv gc = grid_conv(Type);
    int mx = 0;
    for (int j = 0; j < 256; ++j) {
        q[j] = u == 0.0f ? 0 : (int)std::lround(yb[j] / u);  // exact: w is an exact multiple of u
        mx = std::max(mx, q[j] < 0 ? -q[j] : q[j]);
    }
    float dnew = (float)mx * gc.d0;
    const bool keep = dnew < 1.0f;
    if (keep) dnew = 1.0f;
    const float inv = 1.0f / dnew, scale = gti_round_half(u * dnew);
    if (!keep)
        for (int j = 0; j < 256; ++j) q[j] = (int)(((float)q[j] * inv + 12582912.0f) - 12582912.0f);  // RNE
    return scale;
}
// Re-encodes a dequantized grid row y (in place: y = scale * q) from its blocks at `row`.
template <uint32_t Type>
void grid_conv_row(const uint8_t* row, float* y, int64_t ne0) {
    constexpr GridConv gc = grid_conv(Type);
    for (int64_t b = 0; b < ne0 / 256; ++b) {
        float* yb = y + 256 * b;
        int q[256];
        const float scale = grid_conv_block<Type>(grid_block_d(Type, row + (size_t)b * gc.block_bytes) * gc.unit, yb, q);
        for (int j = 0; j < 256; ++j) yb[j] = scale * (float)q[j];
    }
}

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
    const bool conv = grid_conv(Type).on && nt >= kGridConvMinTokens;
    GtiFloats wbuf((size_t)(N * ne0)), xbuf((size_t)(tile * ne0));
    for (int64_t t0 = 0; t0 < nt; t0 += tile) {
        const int64_t t1 = std::min(nt, t0 + tile);
        for (int64_t t = t0; t < t1; ++t) DecodeAct(act + (size_t)t * arb, xbuf.data() + (t - t0) * ne0, ne0);
        for (int64_t g = r0; g < r1; g += N) {
            tt->dequant(w + (size_t)g * wrb, wbuf.data(), ne0);
            if constexpr (grid_conv(Type).on)
                if (conv) grid_conv_row<Type>(w + (size_t)g * wrb, wbuf.data(), ne0);
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
