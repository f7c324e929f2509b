// Portable matmul kernels for IQ4_XS and the ik K / KS types against Q8_K activations (see
// kquant_unpack.h). Every type of the family has a kernel here, including IQ2_KS, IQ3_KS,
// IQ4_KSS and IQ2_KL; the AVX2/AVX-512 files cover all of them as well.
#include "kernels/kquant_unpack.h"

namespace ikllm::cpu {

KernelTable iqk_kernels_scalar() {
    static const MatmulKernel entries[] = {
        {KIq4Xs::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq4Xs>},
        {KIq2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq2K>},
        {KIq3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq3K>},
        {KIq4K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq4K>},
        {KIq5K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq5K>},
        {KIq6K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq6K>},
        {KIq2Ks::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq2Ks>},
        {KIq3Ks::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq3Ks>},
        {KIq4Ks::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq4Ks>},
        {KIq4Kss::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq4Kss>},
        {KIq5Ks::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq5Ks>},
        {KIq2Kl::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KIq2Kl>},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
