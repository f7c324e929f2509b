// Portable kernels of the row-interleaved types (quant-formats.md §12): decode one row group,
// then multiply with the decoded activations of the format §15 assigns to the type; IQ1_S_R4 /
// IQ1_M_R4, Q8_K_R8 / Q8_K_R16 and Q8_KV_R8 with the SIMD kernels' exact integers (iq1_r4_common.h,
// q8k_r8.h); the grid R4 forms are in grid_scalar.cpp (grid_int.h).
#include "kernels/interleaved_common.h"
#include "kernels/iq1_r4_common.h"
#include "kernels/q8k_r8.h"

namespace ikllm::cpu {

KernelTable interleaved_kernels_scalar() {
    using namespace quant;
    static const MatmulKernel kKernels[] = {
#define KX4(T) {T, Isa::scalar, act_format_q8_2_x4(), gti_generic_run<T, gti_decode_q8_2_x4>}
#define KK(T) {T, Isa::scalar, &kGtiActQ8K, gti_generic_run<T, decode_q8_k_row>}
#define KK32(T) {T, Isa::scalar, &kGtiActQ8K32, gti_generic_run<T, decode_q8_k_row>}
#define KQ80(T) {T, Isa::scalar, act_format_q8_0(), gti_generic_run<T, gti_decode_q8_0>}
        KX4(T_Q4_0_R8), KX4(T_Q8_0_R8), KX4(T_Q5_0_R4), KX4(T_Q6_0_R4), KX4(T_IQ4_NL_R4), KX4(T_MXFP4_R8),
        KK(T_Q2_K_R4), KK(T_Q3_K_R4), KK(T_Q6_K_R4), KK(T_IQ2_K_R4), KK(T_IQ3_K_R4), KK(T_IQ4_K_R4), KK(T_IQ5_K_R4),
        {T_Q8_K_R8, Isa::scalar, &kGtiActQ8K, q8kr_run<T_Q8_K_R8>},
        {T_Q8_K_R16, Isa::scalar, &kGtiActQ8K, q8kr_run<T_Q8_K_R16>},
        {T_Q8_KV_R8, Isa::scalar, &kGtiActQ8KV, q8kv_r8_run},
        KK32(T_Q4_K_R4), KK32(T_Q5_K_R4), KK32(T_IQ4_XS_R8), KK32(T_IQ4_KS_R4), KK32(T_IQ5_KS_R4),
        {T_IQ1_S_R4, Isa::scalar, &kGtiActQ8K128, iq1r4_run<T_IQ1_S_R4, Iq1R4TileScalar>},
        {T_IQ1_M_R4, Isa::scalar, &kGtiActQ8K128, iq1r4_run<T_IQ1_M_R4, Iq1R4TileScalar>},
        KQ80(T_Q4_0_4X4), KQ80(T_Q4_0_4X8), KQ80(T_Q4_0_8X8),
        {T_IQ2_BN_R4, Isa::scalar, &kGtiActQ8K16, gti_generic_run<T_IQ2_BN_R4, decode_q8_k16_row>},
        {T_BF16_R16, Isa::scalar, act_format_bf16(), gti_generic_run<T_BF16_R16, decode_bf16_row>},
#undef KX4
#undef KK
#undef KK32
#undef KQ80
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
