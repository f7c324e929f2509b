// AVX2 kernels of the row-interleaved types (quant-formats.md §12): fast paths for Q4_0_R8,
// Q8_0_R8, IQ4_XS_R8, Q4_K_R4, IQ4_K_R4, IQ4_KS_R4 and BF16_R16 (interleaved_simd.h), Q5_K_R4,
// Q6_K_R4, IQ4_NL_R4 and IQ5_KS_R4 (interleaved_simd_kquant.h), IQ2_K_R4, IQ3_K_R4 and IQ5_K_R4
// (interleaved_simd_iqk.h), IQ1_S_R4 / IQ1_M_R4 with integer codes (iq1_r4_avx2.h), IQ2_XXS_R4 / IQ2_XS_R4 / IQ3_XXS_R4 / IQ2_S_R4 / IQ3_S_R4 with the grid i-quants' decoder
// and dot (grid_int.h); every other interleaved type uses the generic dequantize-and-dot kernel
// with AVX2 dot products.
#include "kernels/interleaved_generic_entries.h"
#include "kernels/interleaved_simd.h"
#include "kernels/interleaved_simd_iqk.h"
#include "kernels/interleaved_simd_kquant.h"

#if defined(__AVX2__)
#include "kernels/grid_int.h"
#include "kernels/iq1_r4_avx2.h"
#include "kernels/q8k_r8.h"
namespace ikllm::cpu {

KernelTable interleaved_kernels_avx2() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
        {T_Q4_0_R8, Isa::avx2, act_format_q8_2_x4(), run_interleaved<KQ4_0R8>},
        {T_Q8_0_R8, Isa::avx2, act_format_q8_2_x4(), run_interleaved<KQ8_0R8>},
        {T_IQ4_XS_R8, Isa::avx2, &kGtiActQ8K32, run_interleaved<KIQ4XSR8>},
        {T_Q4_K_R4, Isa::avx2, &kGtiActQ8K32, run_interleaved<KQ4KR4>},
        {T_IQ4_K_R4, Isa::avx2, &kGtiActQ8K, run_interleaved<KIQ4KR4>},
        {T_IQ4_KS_R4, Isa::avx2, &kGtiActQ8K32, run_interleaved<KIQ4KSR4>},
        {T_Q5_K_R4, Isa::avx2, simd_act_q8_k32_rows(), run_interleaved_fused<KQ5KR4>},
        {T_Q6_K_R4, Isa::avx2, simd_act_q8_k_rows(), run_interleaved_fused<KQ6KR4>},
        {T_IQ4_NL_R4, Isa::avx2, simd_act_q8_2_x4(), run_interleaved_fused<KIQ4NLR4>},
        {T_IQ5_KS_R4, Isa::avx2, simd_act_q8_k32_rows(), run_interleaved_fused<KIQ5KSR4>},
        {T_IQ2_K_R4, Isa::avx2, &kGtiActQ8K, run_interleaved<KIQ2KR4>},
        {T_IQ3_K_R4, Isa::avx2, &kGtiActQ8K, run_interleaved<KIQ3KR4>},
        {T_IQ5_K_R4, Isa::avx2, &kGtiActQ8K, run_interleaved<KIQ5KR4>},
        {T_BF16_R16, Isa::avx2, act_format_bf16(), run_bf16_r16_avx2},
        {T_IQ1_S_R4, Isa::avx2, &kGtiActQ8K128, iq1r4_matmul_avx2<T_IQ1_S_R4>},
        {T_IQ1_M_R4, Isa::avx2, &kGtiActQ8K128, iq1r4_matmul_avx2<T_IQ1_M_R4>},
        {T_IQ2_XXS_R4, Isa::avx2, simd_act_q8_k_rows(), grid_r4_run<T_IQ2_XXS_R4>},
        {T_IQ2_XS_R4, Isa::avx2, simd_act_q8_k_rows(), grid_r4_run<T_IQ2_XS_R4>},
        {T_IQ3_XXS_R4, Isa::avx2, simd_act_q8_k_rows(), grid_r4_run<T_IQ3_XXS_R4>},
        {T_IQ2_S_R4, Isa::avx2, simd_act_q8_k_rows(), grid_r4_run<T_IQ2_S_R4>},
        {T_IQ3_S_R4, Isa::avx2, simd_act_q8_k_rows(), grid_r4_run<T_IQ3_S_R4>},
        {T_Q8_K_R8, Isa::avx2, &kGtiActQ8K, q8kr_run<T_Q8_K_R8>},
        {T_Q8_K_R16, Isa::avx2, &kGtiActQ8K, q8kr_run<T_Q8_K_R16>},
        {T_Q8_KV_R8, Isa::avx2, &kGtiActQ8KV, q8kv_r8_run},
        IKLLM_INTERLEAVED_GENERIC_ENTRIES(Isa::avx2),
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable interleaved_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
