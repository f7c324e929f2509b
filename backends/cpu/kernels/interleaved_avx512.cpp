// AVX-512 kernels of the row-interleaved types (quant-formats.md §12): the kernels of
// interleaved_simd.h built with VNNI dot products (vpdpbusd on 256-bit vectors) for IQ4_XS_R8,
// Q4_K_R4, and their 512-bit forms for IQ4_K_R4, IQ4_KS_R4 (interleaved_iq4_r4_512.h) (Q4_0_R8, Q8_0_R8: legacy_avx512.cpp, legacy_r8_avx512.h), and of
// interleaved_simd_kquant.h (VNNI, VBMI table lookups) for Q5_K_R4, Q6_K_R4, IQ4_NL_R4,
// IQ5_KS_R4; IQ2_K_R4, IQ3_K_R4, IQ5_K_R4 on 512-bit vectors (interleaved_simd_iqk512.h, via
// interleaved_simd_iqk.h); BF16_R16 with vdpbf16ps (16 rows per zmm, one bf16 column pair per
// instruction); IQ1_S_R4 / IQ1_M_R4 with integer codes (iq1_r4_avx512.h), IQ2_XXS_R4 / IQ2_XS_R4 /
// IQ3_XXS_R4 / IQ2_S_R4 / IQ3_S_R4 with the grid i-quants' decoder and dot (grid_int.h); every other
// interleaved type uses the generic dequantize-and-dot kernel with AVX-512 dot products.
#include "kernels/matmul.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) && \
    defined(__AVX512BF16__)
#include "kernels/interleaved_generic_entries.h"
#include "kernels/grid_int.h"
#include "kernels/iq1_r4_avx512.h"
#include "kernels/q8k_r8.h"
#include "kernels/interleaved_simd.h"
#include "kernels/interleaved_iq4_r4_512.h"
#include "kernels/interleaved_simd_iqk.h"
#include "kernels/interleaved_simd_kquant.h"
namespace ikllm::cpu {
namespace {

// G groups of 16 rows x T tokens per pass; activations are bf16 pairs broadcast to every lane.
// Two groups (32 rows) share each broadcast: 16 accumulators for 8 tokens, one broadcast per two
// products (1.25x the one-group tile's rate from L2 on a Zen 4). Every output keeps its own
// accumulator chain over the columns in order, so results do not depend on G or T.
template <int G, int T>
void bf16r16_tile512(const uint8_t* grp, size_t grb, int64_t ne0, const uint8_t* act, size_t arb, float* y,
                     int64_t ys) {
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
    for (int64_t p = 0; p < ne0 / 2; ++p) {
        __m512i wv[G];
        for (int g = 0; g < G; ++g) wv[g] = _mm512_loadu_si512(grp + g * grb + 64 * p);
        for (int t = 0; t < T; ++t) {
            int32_t pair;
            std::memcpy(&pair, act + (size_t)t * arb + 4 * p, 4);
            const __m512i xb = _mm512_set1_epi32(pair);
            for (int g = 0; g < G; ++g) acc[g][t] = _mm512_dpbf16_ps(acc[g][t], (__m512bh)wv[g], (__m512bh)xb);
        }
    }
    for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * ys + 16 * g, acc[g][t]);
}

template <int G>
void bf16r16_groups(const uint8_t* grp, size_t grb, int64_t ne0, const uint8_t* act, size_t arb, int64_t nt, float* y,
                    int64_t ys) {
    int64_t t = 0;
    for (; t + 8 <= nt; t += 8) bf16r16_tile512<G, 8>(grp, grb, ne0, act + (size_t)t * arb, arb, y + t * ys, ys);
    for (; t + 4 <= nt; t += 4) bf16r16_tile512<G, 4>(grp, grb, ne0, act + (size_t)t * arb, arb, y + t * ys, ys);
    for (; t < nt; ++t) bf16r16_tile512<G, 1>(grp, grb, ne0, act + (size_t)t * arb, arb, y + t * ys, ys);
}

void run_bf16_r16(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const size_t grb = 16 * wrb;  // bytes of one 16-row group
    int64_t g = r0;
    for (; g + 32 <= r1; g += 32) bf16r16_groups<2>(w + (size_t)g * wrb, grb, ne0, act, arb, nt, y + g, ys);
    for (; g + 16 <= r1; g += 16) bf16r16_groups<1>(w + (size_t)g * wrb, grb, ne0, act, arb, nt, y + g, ys);
}

}  // namespace

KernelTable interleaved_kernels_avx512() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
        {T_IQ4_XS_R8, Isa::avx512, &kGtiActQ8K32, run_interleaved<KIQ4XSR8>},
        {T_Q4_K_R4, Isa::avx512, &kGtiActQ8K32, run_interleaved<KQ4KR4>},
        {T_IQ4_K_R4, Isa::avx512, &kGtiActQ8K, run_interleaved<KIQ4KR4Z>},
        {T_IQ4_KS_R4, Isa::avx512, &kGtiActQ8K32, run_interleaved<KIQ4KSR4Z>},
        {T_Q5_K_R4, Isa::avx512, simd_act_q8_k32_rows(), run_interleaved_fused<KQ5KR4>},
        {T_Q6_K_R4, Isa::avx512, simd_act_q8_k_rows(), run_interleaved_fused<KQ6KR4>},
        {T_IQ4_NL_R4, Isa::avx512, simd_act_q8_2_x4(), run_interleaved_fused<KIQ4NLR4>},
        {T_IQ5_KS_R4, Isa::avx512, simd_act_q8_k32_rows(), run_interleaved_fused<KIQ5KSR4>},
        {T_IQ2_K_R4, Isa::avx512, &kGtiActQ8K, run_interleaved<KIQ2KR4>},
        {T_IQ3_K_R4, Isa::avx512, &kGtiActQ8K, run_interleaved<KIQ3KR4>},
        {T_IQ5_K_R4, Isa::avx512, &kGtiActQ8K, run_interleaved<KIQ5KR4>},
        {T_BF16_R16, Isa::avx512, act_format_bf16(), run_bf16_r16},
        {T_IQ1_S_R4, Isa::avx512, &kGtiActQ8K128, iq1r4_matmul<T_IQ1_S_R4>},
        {T_IQ1_M_R4, Isa::avx512, &kGtiActQ8K128, iq1r4_matmul<T_IQ1_M_R4>},
        {T_IQ2_XXS_R4, Isa::avx512, simd_act_q8_k_rows(), grid_r4_run<T_IQ2_XXS_R4>},
        {T_IQ2_XS_R4, Isa::avx512, simd_act_q8_k_rows(), grid_r4_run<T_IQ2_XS_R4>},
        {T_IQ3_XXS_R4, Isa::avx512, simd_act_q8_k_rows(), grid_r4_run<T_IQ3_XXS_R4>},
        {T_IQ2_S_R4, Isa::avx512, simd_act_q8_k_rows(), grid_r4_run<T_IQ2_S_R4>},
        {T_IQ3_S_R4, Isa::avx512, simd_act_q8_k_rows(), grid_r4_run<T_IQ3_S_R4>},
        {T_Q8_K_R8, Isa::avx512, &kGtiActQ8K, q8kr_run<T_Q8_K_R8>},
        {T_Q8_K_R16, Isa::avx512, &kGtiActQ8K, q8kr_run<T_Q8_K_R16>},
        {T_Q8_KV_R8, Isa::avx512, &kGtiActQ8KV, q8kv_r8_run},
        IKLLM_INTERLEAVED_GENERIC_ENTRIES(Isa::avx512),
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable interleaved_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
