// The AVX2 kernels of Q4_K, Q5_K and Q6_K (kquant_q82.h, kquant_avx2_kernels.h) compiled with
// AVX-VNNI: their integer dots are one dpbusd each (udot4; Q6_K batches: sym_lanes_avx2.h).
// Registered as AVX2 kernels ahead of the plain ones where the CPU has AVX-VNNI (matmul.cpp).
#include "kernels/matmul.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
#include "kernels/kquant_avx2_kernels.h"

namespace ikllm::cpu {

KernelTable kquant_kernels_avxvnni() {
    static const MatmulKernel entries[] = {
        {quant::T_Q4_K, Isa::avx2, simd_act_q8_2_x4(), q45k_matmul_avx2<false>, true},
        {quant::T_Q5_K, Isa::avx2, simd_act_q8_2_x4(), q45k_matmul_avx2<true>, true},
        {quant::T_Q6_K, Isa::avx2, simd_act_q8_2_x4(), q6k_matmul_avx2, true},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable kquant_kernels_avxvnni() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
