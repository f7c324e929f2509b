// Portable matmul kernels for Q2_K..Q6_K (see kquant_unpack.h): Q2_K and Q3_K against Q8_K
// activations, Q4_K, Q5_K and Q6_K against Q8_2_X4 as in the reference (quant-formats.md §15).
// Every K-quant has a kernel here; the AVX2/AVX-512 files cover all of them as well.
#include "kernels/kquant_q6k_conv.h"
#include "kernels/kquant_unpack.h"

#include "kernels/r8_slab.h"
#include "quant/kquant_r8.h"

namespace ikllm::cpu {

const ActFormat* act_format_q8_k_kiqk() {
    static constexpr ActFormat f{quant::T_Q8_K, quant::q8_k_row_bytes, quant::encode_q8_k_row};
    return &f;
}

namespace {
// Q6_K: prompt batches re-encoded to 8 bits per 32 (kquant_q6k_conv.h), smaller ones direct.
void scalar_matmul_q6k(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt >= kQ6ConvMinTokens) return q6k_conv_matmul_portable(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
    scalar_matmul_q82<KQ6K>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
}  // namespace

KernelTable kquant_kernels_scalar() {
    static const MatmulKernel entries[] = {
        {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
        {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
        {KQ4K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ4K>},
        {KQ5K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ5K>},
        {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q6k, true},
        // ikllm's run-time layouts: unpacked rows through the plain kernel (r8_slab.h)
        {quant::T_Q2_K_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::q2k_r8_unpack_group, scalar_matmul<KQ2K>>},
        {quant::T_Q3_K_R8, Isa::scalar, act_format_q8_k_kiqk(), r8_unpacked_matmul<quant::q3k_r8_unpack_group, scalar_matmul<KQ3K>>},
        {quant::T_Q4_K_R8, Isa::scalar, act_format_q8_2_x4(), r8_unpacked_matmul<quant::q4k_r8_unpack_group, scalar_matmul_q82<KQ4K>>},
        {quant::T_Q5_K_R8, Isa::scalar, act_format_q8_2_x4(), r8_unpacked_matmul<quant::q5k_r8_unpack_group, scalar_matmul_q82<KQ5K>>},
        {quant::T_Q6_K_R8, Isa::scalar, act_format_q8_2_x4(), r8_unpacked_matmul<quant::q6k_r8_unpack_group, scalar_matmul_q6k>, true},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
