// AVX-512 (VNNI, VBMI) matmul kernels for IQ4_XS and the ik K / KS types against Q8_K
// activations (kquant_simd.h), and ikllm's run-time IQ4_K_R8 / IQ4_XS_X8 / Q2_K_R8 / Q3_K_R8 / IQ2_K_R8 /
// IQ3_K_R8 / IQ2_KS_R8 / IQ3_KS_R8 / IQ4_KS_R8 / IQ5_KS_R8 / IQ2_KL_R8
// (iqk_r8_avx512.h).
#include "kernels/matmul.h"

// (Compiled with this ISA's flags on x86; elsewhere an empty table.)
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include "kernels/kquant_simd512.h"
#include "kernels/iqk_r8_avx512.h"

namespace ikllm::cpu {

KernelTable iqk_kernels_avx512() {
#define K_ENTRY(U) {U::id, Isa::avx512, simd_act_q8_k(), simd_matmul<U, Avx512Tile, 8>, U::conv}
#define K_NIB(U) {U::id, Isa::avx512, simd_act_q8_k(), simd_matmul_nib<U, U##Nib, Avx512Tile, 8>, U::conv}
    static const MatmulKernel entries[] = {
        K_NIB(ZIq4Xs), K_ENTRY(ZIq2K), K_ENTRY(ZIq3K), K_NIB(ZIq4K), K_ENTRY(ZIq5K), K_ENTRY(ZIq6K),
        K_NIB(ZIq4Ks), K_ENTRY(ZIq5Ks), K_ENTRY(ZIq2Ks), K_ENTRY(ZIq3Ks),
        K_ENTRY(SIq4Kss), K_ENTRY(ZIq2Kl),
        {quant::T_IQ4_K_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Iq4KR8Tiles, iq4kr8_unpack_group_fast, simd_matmul_nib<ZIq4K, ZIq4KNib, Avx512Tile, 8>>, true},
        {quant::T_IQ2_K_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<IqkR8Tiles<Iq2KR8Codes>, iq2kr8_unpack_group_fast, simd_matmul<ZIq2K, Avx512Tile, 8>>, true},
        {quant::T_IQ3_K_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<IqkR8Tiles<Iq3KR8Codes>, iq3kr8_unpack_group_fast, simd_matmul<ZIq3K, Avx512Tile, 8>>, true},
        {quant::T_IQ2_KS_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<IqkR8Tiles<Iq2KsR8Codes>, ksr8_unpack_group_fast<false>, simd_matmul<ZIq2Ks, Avx512Tile, 8>>, true},
        {quant::T_IQ3_KS_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<IqkR8Tiles<Iq3KsR8Codes>, ksr8_unpack_group_fast<true>, simd_matmul<ZIq3Ks, Avx512Tile, 8>>, true},
        {quant::T_Q2_K_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Q2KR8Tiles, q2kr8_unpack_group_fast, simd_matmul<SQ2K, Avx512Tile, 8>>, true},
        {quant::T_Q3_K_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Q3KR8Tiles, q3kr8_unpack_group_fast, simd_matmul<SQ3K, Avx512Tile, 8>>, true},
        {quant::T_IQ4_XS_X8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Iq4X8Tiles<Iq4XsX8Scales>, iq4xsx8_unpack_group_fast, simd_matmul_nib<ZIq4Xs, ZIq4XsNib, Avx512Tile, 8>>, true},
        {quant::T_IQ2_KL_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Iq2KlR8Tiles, iq2klr8_unpack_group_fast, simd_matmul<ZIq2Kl, Avx512Tile, 8>>, true},
        {quant::T_IQ5_KS_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Iq5KsR8Tiles, iq5ksr8_unpack_group_fast, simd_matmul<ZIq5Ks, Avx512Tile, 8>>, true},
        {quant::T_IQ4_KS_R8, Isa::avx512, simd_act_q8_k(), iq4r8_matmul<Iq4X8Tiles<Iq4KsR8Scales>, iq4ksr8_unpack_group_fast, simd_matmul_nib<ZIq4Ks, ZIq4KsNib, Avx512Tile, 8>>, true},
    };
#undef K_ENTRY
#undef K_NIB
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
KernelTable iqk_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
