// Portable matmul kernels for IQ4_XS and the ik K / KS types against Q8_K activations (see
// kquant_unpack.h). Every type of the family has a kernel here, including IQ2_KS, IQ3_KS,
// IQ4_KSS and IQ2_KL; the AVX2/AVX-512 files cover all of them as well.
#include "kernels/kquant_unpack.h"
#include "kernels/r8_slab.h"
#include "quant/kquant_r8.h"

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
        // ikllm's run-time layouts: unpacked rows through the plain kernel (r8_slab.h)
        {quant::T_IQ2_K_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq2k_r8_unpack_group, scalar_matmul<KIq2K>>},
        {quant::T_IQ3_K_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq3k_r8_unpack_group, scalar_matmul<KIq3K>>},
        {quant::T_IQ4_K_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq4k_r8_unpack_group, scalar_matmul<KIq4K>>},
        {quant::T_IQ4_XS_X8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq4xs_x8_unpack_group, scalar_matmul<KIq4Xs>>},
        {quant::T_IQ4_KS_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq4ks_r8_unpack_group, scalar_matmul<KIq4Ks>>},
        {quant::T_IQ2_KL_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq2kl_r8_unpack_group, scalar_matmul<KIq2Kl>>},
        {quant::T_IQ5_KS_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq5ks_r8_unpack_group, scalar_matmul<KIq5Ks>>},
        {quant::T_IQ2_KS_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq2ks_r8_unpack_group, scalar_matmul<KIq2Ks>>},
        {quant::T_IQ3_KS_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::iq3ks_r8_unpack_group, scalar_matmul<KIq3Ks>>},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
