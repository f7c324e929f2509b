// AVX2 kernels for the 32-weight block types against Q8_2_X4 activations (legacy_avx2_kernels.h).
#include "kernels/legacy_avx2_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
namespace ikllm::cpu {

KernelTable legacy_kernels_avx2() {
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
KernelTable legacy_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
