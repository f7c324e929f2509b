// Portable matmul kernels for Q2_K..Q6_K (see kquant_unpack.h): Q2_K and Q3_K against Q8_K
// activations, Q4_K, Q5_K and Q6_K against Q8_2_X4 as in the reference (quant-formats.md §15).
// Every K-quant has a kernel here; the AVX2/AVX-512 files cover all of them as well.
#include "kernels/kquant_unpack.h"

namespace ikllm::cpu {

const ActFormat* act_format_q8_k_kiqk() {
    static constexpr ActFormat f{quant::T_Q8_K, quant::q8_k_row_bytes, quant::encode_q8_k_row};
    return &f;
}

KernelTable kquant_kernels_scalar() {
    static const MatmulKernel entries[] = {
        {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
        {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
        {KQ4K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ4K>},
        {KQ5K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ5K>},
        {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
