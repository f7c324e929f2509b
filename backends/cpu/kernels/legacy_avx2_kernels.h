// AVX2 kernels for the 32-weight block types against Q8_2_X4 activations, included by
// legacy_avx2.cpp and by legacy_avxvnni.cpp (where the batch form multiplies with AVX-VNNI,
// sym_lanes_avx2.h). Per group of 4 blocks the weights are unpacked once and reused for up to 4
// tokens. Signed values use the sign trick (maddubs(|v|, sign(a, v)) is exact: |v| <= 128,
// |a| <= 127); affine types multiply their unsigned codes directly. The four block sums are
// reduced with hadd so each block's integer dot is exact before it is scaled, as in the scalar
// kernel. Symmetric types then round like the reference (legacy_sym_accum.h): their
// unsigned-code sums are the exact signed sums plus offset * (sum of the activation codes), quad
// by quad. 1..31 tokens take the step form (row_tile_steps), which needs no horizontal adds.
#pragma once
#include "kernels/matmul.h"
#include "quant/type_traits.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <algorithm>
#include <vector>

#include "kernels/act_q8_2_x4_simd.h"
#include "kernels/legacy_simd.h"
#include "kernels/legacy_sym_accum.h"
#include "kernels/prefetch.h"
#include "kernels/sym_lanes_avx2.h"
#include "kernels/token_tiles.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

// Exact int32 dot of 32 weight values with 32 activation codes, as 8 partial lanes.
template <class P>
inline __m256i dot32(__m256i v, __m256i av, __m256i a) {
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (P::kAffine) return _mm256_madd_epi16(_mm256_maddubs_epi16(v, a), ones);
    else return _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(a, v)), ones);
}

// The four blocks of a Q8_2_X4 group: values and their magnitudes (for the sign trick).
template <class P>
inline void group_values(const uint8_t* wb, __m256i v[4], __m256i av[4]) {
    for (int k = 0; k < 4; ++k) {
        v[k] = P::values(wb + k * P::kBytes);
        av[k] = _mm256_sign_epi8(v[k], v[k]);
    }
}

// One weight row against T tokens.
template <class P, int T>
void row_tile(const uint8_t* wr, int64_t ne0, const uint8_t* act, size_t arb, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    __m128 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
    for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* wb = wr + 4 * g * P::kBytes;
        if constexpr (T <= 2) prefetch_weights<4 * P::kBytes>(wb);
        __m256i v[4], av[4];
        group_values<P>(wb, v, av);
        const __m128 dw = P::scales4(wb);
        __m128 mw = _mm_setzero_ps();
        if constexpr (P::kAffine) mw = P::mins4(wb);
        for (int t = 0; t < T; ++t) {
            const uint8_t* ag = act + t * arb + 144 * g;
            __m256i s[4];
            for (int k = 0; k < 4; ++k)
                s[k] = dot32<P>(v[k], av[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ag + 16 + 32 * k)));
            const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
            const __m128i isum = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ag));
            const __m128 da = act_scales4(head);
            acc[t] = _mm_fmadd_ps(_mm_mul_ps(dw, da), _mm_cvtepi32_ps(isum), acc[t]);
            if constexpr (P::kAffine) acc[t] = _mm_fmadd_ps(_mm_mul_ps(mw, da), act_sums4(head), acc[t]);
        }
    }
    float tail[T] = {};
    for (int64_t ib = 4 * ng; ib < nb; ++ib) {  // leftover blocks: 36-byte activation blocks
        const uint8_t* wb = wr + ib * P::kBytes;
        const __m256i v = P::values(wb), av = _mm256_sign_epi8(v, v);
        const float dw = P::scale(wb);
        for (int t = 0; t < T; ++t) {
            const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act + t * arb, ne0, ib);
            const int isum = hsum_epi32(dot32<P>(v, av, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs))));
            const float da = bf16_to_f32(ab.d_bf16);
            tail[t] += (dw * da) * (float)isum;
            if constexpr (P::kAffine) tail[t] += (P::min(wb) * da) * (float)ab.sum;
        }
    }
    for (int t = 0; t < T; ++t) y[t * ys] = hsum128(acc[t]) + tail[t];
}

// Quad sums (8 lanes, bytes 4k..4k+3) of u*a with u = v + offset, exact.
template <class P>
inline __m256i uquads(__m256i v, __m256i av, __m256i a) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    const __m256i va = dot32<P>(v, av, a);
    const __m256i sa = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, a), ones16);
    return _mm256_add_epi32(va, _mm256_mullo_epi32(sa, _mm256_set1_epi32(P::kOffset)));
}

// The same quad sums from the codes u themselves (P::kDirectU: no saturation possible).
inline __m256i uquads_direct(__m256i u, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), _mm256_set1_epi16(1));
}

// The blocks after the last full group of 4 (one row, one token), in SymTileAccum order: each adds
// its 8 quad sums to the 8 lanes and a quarter of its offset term to each side lane; then the
// final reduction ((lo + hi) + side, summed as (x0 + x2) + (x1 + x3)).
// Always inlined: as a call taking __m256 arguments GCC returns from it without vzeroupper, and the
// generic SSE code after the kernel then pays a state transition on every instruction.
template <class P>
[[gnu::always_inline]] inline float sym_finish(const uint8_t* wr, int64_t ne0, const uint8_t* act_t, __m256 acc, __m128 side) {
    const int64_t nb = ne0 / 32;
    for (int64_t ib = nb / 4 * 4; ib < nb; ++ib) {  // 36-byte activation blocks
        const uint8_t* wb = wr + ib * P::kBytes;
        const float dw = P::scale(wb);
        const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(act_t, ne0, ib);
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
        __m256i q;
        if constexpr (P::kDirectU) {
            q = uquads_direct(P::ucodes(wb), a);
        } else {
            const __m256i v = P::values(wb);
            q = uquads<P>(v, _mm256_sign_epi8(v, v), a);
        }
        const float da = bf16_to_f32(ab.d_bf16);
        const float quarter = ((-dw * (float)P::kOffset) * (da * (float)ab.sum)) * 0.25f;
        side = _mm_add_ps(side, _mm_set1_ps(quarter));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * da), _mm256_cvtepi32_ps(q), acc);
    }
    return hsum128(_mm_add_ps(_mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)), side));
}

template <int T>
inline void zero_sym_accs(__m256 (&acc)[T], __m128 (&side)[T]) {
    for (int t = 0; t < T; ++t) {
        acc[t] = _mm256_setzero_ps();
        side[t] = _mm_setzero_ps();
    }
}

// Symmetric types, 1..31 tokens (token steps, several sequences decoding at once), in
// SymTileAccum order: each group's activation codes are transposed once per call into 4 "steps"
// (step s, lane L: bytes 4s..4s+3 of half-block L = block L%4, half L/4), and each row's weights
// the same way once per group, so four sign/maddubs/madd rounds leave every half-block's exact
// sum in its own lane: no horizontal adds, and the unsigned-code correction (offset x half-block
// sum of the codes) is precomputed per token (P::kDirectU types need none). Bit-identical to the
// scalar kernel. Also for one token: the transposed copy costs one pass over the activations and
// saves three horizontal adds and the per-block offset products of every row (AVX2 Q8_0 token
// steps 33 -> 43 GFLOP/s on one Zen 4 core, IQ4_NL 30 -> 38).
struct alignas(32) StepGroup {
    uint8_t q[4][32];  // activation codes by step
    int32_t off[8];    // kOffset * the half-block sums of the codes, by lane
    float da[4];       // the 4 blocks' activation scales
    float das[4];      // da * the blocks' code sums (for the side term)
};

// 4x4 dword transpose inside each 128-bit half: out[s] = (in[0..3] dword s | in[0..3] dword 4+s).
inline void to_steps(const __m256i in[4], __m256i out[4]) {
    const __m256i t0 = _mm256_unpacklo_epi32(in[0], in[1]), t1 = _mm256_unpackhi_epi32(in[0], in[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(in[2], in[3]), t3 = _mm256_unpackhi_epi32(in[2], in[3]);
    out[0] = _mm256_unpacklo_epi64(t0, t2);
    out[1] = _mm256_unpackhi_epi64(t0, t2);
    out[2] = _mm256_unpacklo_epi64(t1, t3);
    out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// Rearranges the activation rows of tokens [0, nt) into nt x ng step groups.
template <class P>
void build_steps(const uint8_t* act, size_t arb, int64_t nt, int64_t ng, StepGroup* out) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t g = 0; g < ng; ++g) {
            const uint8_t* ag = act + (size_t)t * arb + 144 * g;
            StepGroup& sg = out[t * ng + g];
            __m256i a[4], st[4];
            for (int k = 0; k < 4; ++k) a[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ag + 16 + 32 * k));
            to_steps(a, st);
            __m256i half = _mm256_setzero_si256();
            for (int k = 0; k < 4; ++k) {
#ifdef __AVXVNNI__
                // codes + 128, dpbusd's unsigned side (row_tile_steps takes 128 * sum(w) back off)
                _mm256_store_si256(reinterpret_cast<__m256i*>(sg.q[k]), _mm256_xor_si256(st[k], _mm256_set1_epi8((char)0x80)));
#else
                _mm256_store_si256(reinterpret_cast<__m256i*>(sg.q[k]), st[k]);
#endif
                half = _mm256_add_epi32(half, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, st[k]), ones16));
            }
            _mm256_store_si256(reinterpret_cast<__m256i*>(sg.off), _mm256_mullo_epi32(half, _mm256_set1_epi32(P::kOffset)));
            const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ag));
            const __m128 da = act_scales4(head);
            _mm_store_ps(sg.da, da);
            _mm_store_ps(sg.das, _mm_mul_ps(da, act_sums4(head)));
        }
}

// One weight row against T tokens whose step groups start at sg (ng per token).
template <class P, int T>
void row_tile_steps(const uint8_t* wr, int64_t ne0, const StepGroup* sg, const uint8_t* act, size_t arb, float* y,
                    int64_t ys) {
    const int64_t ng = ne0 / 128;
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 acc[T];
    __m128 side[T];
    zero_sym_accs<T>(acc, side);
    for (int64_t g = 0; g < ng; ++g) {
        const uint8_t* wb = wr + 4 * g * P::kBytes;
        // Token steps stream the weights once: the single-token path has always prefetched them
        // (kernels/prefetch.h; measured on Intel, where the hardware prefetchers fell short).
        if constexpr (T == 1) prefetch_weights<4 * P::kBytes>(wb);
        __m256i v[4], vs[4];
#ifndef __AVXVNNI__
        constexpr bool kDirect = P::kDirectU;  // vs then holds the codes u: no sign trick, no offset term
#else
        constexpr bool kDirect = false;
#endif
        for (int k = 0; k < 4; ++k) {
            if constexpr (kDirect) v[k] = P::ucodes(wb + k * P::kBytes);
            else v[k] = P::values(wb + k * P::kBytes);
        }
        to_steps(v, vs);
#ifdef __AVXVNNI__
        // -128 * each half-block's weight sum: dpbusd multiplies the codes + 128
        __m256i wsum = _mm256_setzero_si256();
        for (int k = 0; k < 4; ++k)
            wsum = _mm256_add_epi32(wsum, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), vs[k]), ones16));
        const __m256i wcorr = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), wsum), 7);
#else
        __m256i avs[4];
        for (int k = 0; k < 4; ++k) avs[k] = _mm256_sign_epi8(vs[k], vs[k]);
#endif
        const __m128 dw = P::scales4(wb);
        const __m128 mo = _mm_mul_ps(dw, _mm_set1_ps(-(float)P::kOffset));
        for (int t = 0; t < T; ++t) {
            const StepGroup& G = sg[t * ng + g];
            __m256i z = kDirect ? _mm256_setzero_si256() : _mm256_load_si256(reinterpret_cast<const __m256i*>(G.off));
#ifdef __AVXVNNI__
            z = _mm256_add_epi32(z, wcorr);
            for (int k = 0; k < 4; ++k)
                z = _mm256_dpbusd_avx_epi32(z, _mm256_load_si256(reinterpret_cast<const __m256i*>(G.q[k])), vs[k]);
#else
            for (int k = 0; k < 4; ++k) {
                const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(G.q[k]));
                if constexpr (kDirect) z = _mm256_add_epi32(z, _mm256_madd_epi16(_mm256_maddubs_epi16(vs[k], a), ones16));
                else z = _mm256_add_epi32(z, _mm256_madd_epi16(_mm256_maddubs_epi16(avs[k], _mm256_sign_epi8(a, vs[k])), ones16));
            }
#endif
            const __m128 dd = _mm_mul_ps(dw, _mm_load_ps(G.da));
            acc[t] = _mm256_fmadd_ps(_mm256_set_m128(dd, dd), _mm256_cvtepi32_ps(z), acc[t]);
            side[t] = _mm_add_ps(side[t], _mm_mul_ps(mo, _mm_load_ps(G.das)));
        }
    }
    for (int t = 0; t < T; ++t) y[t * ys] = sym_finish<P>(wr, ne0, act + t * arb, acc[t], side[t]);
}

template <class P>
void run_sym_steps(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                   int64_t nt, float* y, int64_t ys) {
    // 4 tokens per tile: 8 accumulators beside 8 weight registers fill the 16 ymm
    const int64_t ng = ne0 / 128;
    std::vector<StepGroup> steps((size_t)std::max<int64_t>(1, nt * ng));
    build_steps<P>(act, arb, nt, ng, steps.data());
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + (size_t)r * wrb;
        for_token_tiles4(nt, [&](int64_t t, auto tile) {
            row_tile_steps<P, decltype(tile)::value>(wr, ne0, steps.data() + t * ng, act + (size_t)t * arb, arb,
                                                     y + t * ys + r, ys);
        });
    }
}

// The direct-code batch form's parameters (sym_lanes_avx2.h lane_direct_steps): 0 for types
// without small unsigned codes.
template <class P>
constexpr int direct_steps() {
    if constexpr (requires { P::kDirectSteps; }) return P::kDirectSteps;
    else return 0;
}
template <class P>
constexpr int code_offset() {
    if constexpr (requires { P::kDirectSteps; }) return P::kOffset;
    else return 0;
}

// Batches: 8 tokens per register in the SymBatchAccum order (sym_lanes_avx2.h).
template <class P>
struct LegacyLaneRows {
    const uint8_t* w;
    size_t wrb;
    struct Row {
        const uint8_t* wr;
        __m256i values(int64_t ib) const { return P::values(wr + ib * P::kBytes); }
        static constexpr int kDirectSteps = direct_steps<P>(), kCodeOffset = code_offset<P>();
        __m256i ucodes(int64_t ib) const {
            if constexpr (kDirectSteps > 0) return P::ucodes(wr + ib * P::kBytes);
            else return values(ib);
        }
        float scale(int64_t ib) const { return sym_batch_scale(P::scale(wr + ib * P::kBytes), P::kE8M0); }
    };
    void prepare(int64_t, int64_t) {}
    Row row(int64_t r) const { return {w + (size_t)r * wrb}; }
};

template <class P>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    if constexpr (!P::kAffine) {
        if (nt >= kSymBatchTokens) {
            LegacyLaneRows<P> rows{w, wrb};
            return lanes_matmul(rows, ne0, r0, r1, act, arb, nt, y, ys);
        }
        return run_sym_steps<P>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    } else {
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* wr = w + (size_t)r * wrb;
            for_token_tiles4(nt, [&](int64_t t, auto tile) {
                row_tile<P, decltype(tile)::value>(wr, ne0, act + (size_t)t * arb, arb, y + t * ys + r, ys);
            });
        }
    }
}

// The kernels of the including file (legacy_avx2.cpp and legacy_avxvnni.cpp publish it under
// their own names; each has its own copy, compiled with its flags).
inline KernelTable legacy_avx2_table() {
    static const MatmulKernel kKernels[] = {
        {quant::T_Q4_0, Isa::avx2, simd_act_q8_2_x4(), run<Q4_0P>},
        {quant::T_Q4_1, Isa::avx2, simd_act_q8_2_x4(), run<Q4_1P>},
        {quant::T_Q5_0, Isa::avx2, simd_act_q8_2_x4(), run<Q5_0P>},
        {quant::T_Q5_1, Isa::avx2, simd_act_q8_2_x4(), run<Q5_1P>},
        {quant::T_Q8_0, Isa::avx2, simd_act_q8_2_x4(), run<Q8_0P>},
        {quant::T_Q6_0, Isa::avx2, simd_act_q8_2_x4(), run<Q6_0P>},
        {quant::T_IQ4_NL, Isa::avx2, simd_act_q8_2_x4(), run<IQ4_NLP>},
        {quant::T_MXFP4, Isa::avx2, simd_act_q8_2_x4(), run<MXFP4P>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace
}  // namespace ikllm::cpu
#endif
