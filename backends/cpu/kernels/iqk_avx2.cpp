// AVX2 matmul kernels for IQ4_XS and the ik K / KS types against Q8_K activations
// (kquant_simd.h).
#include "kernels/matmul.h"

// (Compiled with this ISA's flags on x86; elsewhere an empty table.)
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels/kquant_simd.h"

namespace ikllm::cpu {

KernelTable iqk_kernels_avx2() {
#define K_ENTRY(U) {U::id, Isa::avx2, simd_act_q8_k(), simd_matmul<U, Avx2Tile, 4>, U::conv}
    static const MatmulKernel entries[] = {
        K_ENTRY(SIq4Xs), K_ENTRY(SIq2K), K_ENTRY(SIq3K), K_ENTRY(SIq4K), K_ENTRY(SIq5K), K_ENTRY(SIq6K),
        K_ENTRY(SIq4Ks), K_ENTRY(SIq5Ks), K_ENTRY(SIq2Ks), K_ENTRY(SIq3Ks),
        K_ENTRY(SIq4Kss), K_ENTRY(SIq2Kl),
    };
#undef K_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable iqk_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
