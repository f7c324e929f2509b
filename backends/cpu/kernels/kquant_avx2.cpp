// AVX2 matmul kernels for Q2_K..Q6_K: Q2_K / Q3_K against Q8_K activations (kquant_simd.h),
// Q4_K / Q5_K / Q6_K against Q8_2_X4 (kquant_q82.h).
#include "kernels/matmul.h"

// (Compiled with this ISA's flags on x86; elsewhere an empty table.)
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels/kquant_avx2_kernels.h"

namespace ikllm::cpu {

KernelTable kquant_kernels_avx2() {
#define K_ENTRY(U) {U::id, Isa::avx2, simd_act_q8_k(), simd_matmul<U, Avx2Tile, 4>, U::conv}
    static const MatmulKernel entries[] = {
        K_ENTRY(SQ2K),
        K_ENTRY(SQ3K),
        {quant::T_Q4_K, Isa::avx2, simd_act_q8_2_x4(), q45k_matmul_avx2<false>, true},
        {quant::T_Q5_K, Isa::avx2, simd_act_q8_2_x4(), q45k_matmul_avx2<true>, true},
        {quant::T_Q6_K, Isa::avx2, simd_act_q8_2_x4(), q6k_matmul_avx2, true},
    };
#undef K_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable kquant_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
