// AVX2 kernels of the grid i-quants (quant-formats.md §9): the generic dequantize-and-dot
// kernel with AVX2 dot products, against Q8_K activations (§15).
#include "kernels/grid_int.h"

namespace ikllm::cpu {

KernelTable grid_kernels_avx2() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define K(T) {T, Isa::avx2, &kGtiActQ8K, grid_int_run<T>}
        K(T_IQ2_XXS), K(T_IQ2_XS), K(T_IQ2_S), K(T_IQ3_XXS), K(T_IQ3_S), K(T_IQ1_S), K(T_IQ1_M),
#undef K
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
