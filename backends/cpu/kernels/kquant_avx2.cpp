// AVX2 matmul kernels for Q2_K..Q6_K against Q8_K activations (kquant_simd.h).
#include "kernels/kquant_simd.h"

namespace ikllm::cpu {

KernelTable kquant_kernels_avx2() {
#define K_ENTRY(U) {U::id, Isa::avx2, simd_act_q8_k(), simd_matmul<U, Avx2Tile, 4>}
    static const MatmulKernel entries[] = {
        K_ENTRY(SQ2K), K_ENTRY(SQ3K), K_ENTRY(SQ4K), K_ENTRY(SQ5K), K_ENTRY(SQ6K),
    };
#undef K_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
