// The AVX2 kernels of the 32-weight block types (legacy_avx2_kernels.h) compiled with AVX-VNNI
// (Intel Alder Lake and later, AMD Zen 5): prompt batches multiply with dpbusd (sym_lanes_avx2.h).
// Registered as AVX2 kernels ahead of the plain ones where the CPU has AVX-VNNI (matmul.cpp).
#include "kernels/legacy_avx2_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
namespace ikllm::cpu {

KernelTable legacy_kernels_avxvnni() {
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

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable legacy_kernels_avxvnni() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
