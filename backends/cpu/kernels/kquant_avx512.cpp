// AVX-512 (VNNI, VBMI) matmul kernels for Q2_K..Q6_K against Q8_K activations (kquant_simd.h).
#include "kernels/kquant_simd512.h"

namespace ikllm::cpu {

KernelTable kquant_kernels_avx512() {
#define K_ENTRY(U) {U::id, Isa::avx512, simd_act_q8_k(), simd_matmul<U, Avx512Tile, 8>}
    static const MatmulKernel entries[] = {
        K_ENTRY(SQ2K), K_ENTRY(SQ3K), K_ENTRY(ZQ45K<false>), K_ENTRY(ZQ45K<true>), K_ENTRY(ZQ6K),
    };
#undef K_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
