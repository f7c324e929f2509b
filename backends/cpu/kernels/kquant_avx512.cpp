// AVX-512 (VNNI, VBMI) matmul kernels for Q2_K..Q6_K: Q2_K / Q3_K against Q8_K activations
// (kquant_simd.h), Q4_K / Q5_K / Q6_K against Q8_2_X4 (kquant_q82.h; Q4_K / Q5_K prompt batches
// of 64+ tokens through the panel GEMM of kquant_panel_avx512.h, Q6_K ones re-encoded to 8 bits
// first, kquant_q6k_conv.h), and ikllm's run-time Q4_K_R8 / Q5_K_R8 / Q6_K_R8 (kquant_r8_avx512.h).
#include "kernels/matmul.h"

// (Compiled with this ISA's flags on x86; elsewhere an empty table.)
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include "kernels/kquant_q82.h"
#include "kernels/kquant_panel_avx512.h"
#include "kernels/kquant_r8_avx512.h"

namespace ikllm::cpu {

KernelTable kquant_kernels_avx512() {
#define K_ENTRY(U) {U::id, Isa::avx512, simd_act_q8_k(), simd_matmul<U, Avx512Tile, 8>, U::conv}
    static const MatmulKernel entries[] = {
        K_ENTRY(SQ2K),
        K_ENTRY(SQ3K),
        {quant::T_Q4_K, Isa::avx512, simd_act_q8_2_x4(), q45k_panel_matmul<false>, true},
        {quant::T_Q5_K, Isa::avx512, simd_act_q8_2_x4(), q45k_panel_matmul<true>, true},
        {quant::T_Q6_K, Isa::avx512, simd_act_q8_2_x4(), q6k_panel_matmul, true},
        {quant::T_Q4_K_R8, Isa::avx512, simd_act_q8_2_x4(), q4kr8_matmul, true},
        {quant::T_Q5_K_R8, Isa::avx512, simd_act_q8_2_x4(), q5kr8_matmul, true},
        {quant::T_Q6_K_R8, Isa::avx512, simd_act_q8_2_x4(), q6kr8_matmul, true},
    };
#undef K_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable kquant_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
