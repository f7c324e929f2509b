// NEON (AArch64 + dot product) kernels for IQ4_XS and the ik K / KS types against Q8_K
// activations: kquant_q8k_neon.h, bit-identical to the scalar kernels (iqk_scalar.cpp).
#include "kernels/matmul.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include "kernels/kquant_q8k_neon.h"

namespace ikllm::cpu {

KernelTable iqk_kernels_neon() {
#define K_ENTRY(K) {K::id, Isa::neon, act_format_q8_k_kiqk(), q8k_quad_matmul<K>}
    static const MatmulKernel entries[] = {
        K_ENTRY(KIq4Xs), K_ENTRY(KIq2K),  K_ENTRY(KIq3K),  K_ENTRY(KIq4K),   K_ENTRY(KIq5K), K_ENTRY(KIq6K),
        K_ENTRY(KIq2Ks), K_ENTRY(KIq3Ks), K_ENTRY(KIq4Ks), K_ENTRY(KIq4Kss), K_ENTRY(KIq5Ks), K_ENTRY(KIq2Kl),
    };
#undef K_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable iqk_kernels_neon() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
