// Portable kernels of the trellis types IQ1_KT..IQ4_KT against Q8_2_X4 activations
// (quant-formats.md §10, §15): dequantize, then multiply with the decoded activations.
#include "kernels/interleaved_common.h"

namespace ikllm::cpu {

KernelTable trellis_kernels_scalar() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define K(T) {T, Isa::scalar, act_format_q8_2_x4(), gti_generic_run<T, gti_decode_q8_2_x4>}
        K(T_IQ1_KT), K(T_IQ2_KT), K(T_IQ3_KT), K(T_IQ4_KT),
#undef K
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
