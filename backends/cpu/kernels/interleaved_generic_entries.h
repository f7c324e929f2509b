// The row-interleaved types without a kernel of their own on AVX2 and AVX-512: the generic
// dequantize-and-dot kernel (gti_generic_run) with each ISA's dot products, one list for both
// tables (interleaved_avx2.cpp, interleaved_avx512.cpp; the scalar table lists every type so).
// IQ1_S_R4 / IQ1_M_R4, the grid R4 forms (IQ2_XXS_R4, IQ2_XS_R4, IQ2_S_R4, IQ3_XXS_R4,
// IQ3_S_R4: grid_int.h) and Q8_K_R8 / Q8_K_R16 / Q8_KV_R8 (q8k_r8.h) are listed by each file.
#pragma once

#define IKLLM_GTI_X4(ISA, T) {T, ISA, act_format_q8_2_x4(), gti_generic_run<T, gti_decode_q8_2_x4>}
#define IKLLM_GTI_K(ISA, T) {T, ISA, &kGtiActQ8K, gti_generic_run<T, decode_q8_k_row>}
#define IKLLM_GTI_K128(ISA, T) {T, ISA, &kGtiActQ8K128, gti_generic_run<T, decode_q8_k128_row>}
#define IKLLM_GTI_Q80(ISA, T) {T, ISA, act_format_q8_0(), gti_generic_run<T, gti_decode_q8_0>}

#define IKLLM_INTERLEAVED_GENERIC_ENTRIES(ISA)                                                              \
    IKLLM_GTI_X4(ISA, T_Q5_0_R4), IKLLM_GTI_X4(ISA, T_Q6_0_R4), IKLLM_GTI_X4(ISA, T_MXFP4_R8),               \
        IKLLM_GTI_K(ISA, T_Q2_K_R4), IKLLM_GTI_K(ISA, T_Q3_K_R4),                                           \
        IKLLM_GTI_Q80(ISA, T_Q4_0_4X4),                                                                     \
        IKLLM_GTI_Q80(ISA, T_Q4_0_4X8), IKLLM_GTI_Q80(ISA, T_Q4_0_8X8),                                     \
        {T_IQ2_BN_R4, ISA, &kGtiActQ8K16, gti_generic_run<T_IQ2_BN_R4, decode_q8_k16_row>}
