// AVX2 kernels of the grid i-quants (quant-formats.md §9): grid_int.h's decoded integer codes
// against Q8_K activations (§15, the SIMD encoder: byte-identical to the reference's).
#include "kernels/matmul.h"

// (Compiled with this ISA's flags on x86; elsewhere an empty table.)
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels/act_q8_k_simd.h"
#include "kernels/grid_int.h"

namespace ikllm::cpu {

KernelTable grid_kernels_avx2() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define K(T) {T, Isa::avx2, simd_act_q8_k_rows(), grid_int_run<T>}
        K(T_IQ2_XXS), K(T_IQ2_XS), K(T_IQ2_S), K(T_IQ3_XXS), K(T_IQ3_S), K(T_IQ1_S), K(T_IQ1_M),
#undef K
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable grid_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
