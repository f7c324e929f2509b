// NEON kernels of the grid i-quants (quant-formats.md §9): grid_int.h's decoded integer codes
// against Q8_K activations, the portable kernel's float operations with sdot for the integer
// sums (bit-identical to it).
#include "kernels/matmul.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include "kernels/grid_int.h"

namespace ikllm::cpu {

KernelTable grid_kernels_neon() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define K(T) {T, Isa::neon, &kGtiActQ8K, grid_int_run<T>}
        K(T_IQ2_XXS), K(T_IQ2_XS), K(T_IQ2_S), K(T_IQ3_XXS), K(T_IQ3_S), K(T_IQ1_S), K(T_IQ1_M),
#undef K
        // the reference's 4-row forms (exact at every batch size, as the reference multiplies them)
#define K4(T) {T, Isa::neon, &kGtiActQ8K, grid_r4_run<T>}
        K4(T_IQ2_XXS_R4), K4(T_IQ2_XS_R4), K4(T_IQ2_S_R4), K4(T_IQ3_XXS_R4), K4(T_IQ3_S_R4),
#undef K4
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable grid_kernels_neon() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
