// AVX2 kernels of IQ1_BN / IQ2_BN (Q8_K64 activations) and Q8_KV (Q8_KV activations),
// quant-formats.md §11, §15: IQ1_BN / IQ2_BN by the generic dequantize-and-dot kernel with
// AVX2 dot products, Q8_KV in exact integers (q8k_r8.h).
#include "kernels/interleaved_common.h"
#include "kernels/q8k_r8.h"

namespace ikllm::cpu {

KernelTable ternary_kernels_avx2() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
        {T_IQ1_BN, Isa::avx2, &kGtiActQ8K64, gti_generic_run<T_IQ1_BN, decode_q8_k64_row>},
        {T_IQ2_BN, Isa::avx2, &kGtiActQ8K64, gti_generic_run<T_IQ2_BN, decode_q8_k64_row>},
        {T_Q8_KV, Isa::avx2, &kGtiActQ8KV, q8kv_run},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
