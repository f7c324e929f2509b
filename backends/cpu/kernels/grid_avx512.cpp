// AVX-512 kernels of the grid i-quants (quant-formats.md §9) against Q8_K activations (§15, the
// SIMD encoder):
// grid_int.h's decoded integer codes, and for prompt batches its VNNI panel GEMM, which takes
// every token of a call at once (whole_batch: each panel is re-encoded once per call).
#include "kernels/matmul.h"

// (Compiled with this ISA's flags on x86; elsewhere an empty table.)
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include "kernels/act_q8_k_simd.h"
#include "kernels/grid_int.h"

namespace ikllm::cpu {

KernelTable grid_kernels_avx512() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define K(T) {T, Isa::avx512, simd_act_q8_k_rows(), grid_int_run<T>, true}
        K(T_IQ2_XXS), K(T_IQ2_XS), K(T_IQ2_S), K(T_IQ3_XXS), K(T_IQ3_S), K(T_IQ1_S), K(T_IQ1_M),
#undef K
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable grid_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
