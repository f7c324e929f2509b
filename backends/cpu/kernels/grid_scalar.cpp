// Portable kernels of the grid i-quants (quant-formats.md §9) against Q8_K activations (§15):
// dequantize, then multiply with the decoded activations. Reference for the SIMD paths.
#include "kernels/grid_int.h"

namespace ikllm::cpu {

KernelTable grid_kernels_scalar() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define K(T) {T, Isa::scalar, &kGtiActQ8K, grid_int_run<T>}
        K(T_IQ2_XXS), K(T_IQ2_XS), K(T_IQ2_S), K(T_IQ3_XXS), K(T_IQ3_S), K(T_IQ1_S), K(T_IQ1_M),
#undef K
        // the reference's 4-row forms (exact at every batch size, as the reference multiplies them)
#define K4(T) {T, Isa::scalar, &kGtiActQ8K, grid_r4_run<T>}
        K4(T_IQ2_XXS_R4), K4(T_IQ2_XS_R4), K4(T_IQ2_S_R4), K4(T_IQ3_XXS_R4), K4(T_IQ3_S_R4),
#undef K4
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
