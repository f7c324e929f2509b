// Each family of formats (one source file each) publishes the functions of its types.
// type_traits.cpp joins them with the geometry table. A family file owns only its own types.
#pragma once
#include <cstddef>
#include "quant/type_traits.h"

namespace ikllm::quant {

struct FamilyEntry {
    uint32_t id;
    DequantGroupFn dequant;
    QuantizeGroupFn quantize;  // may be null
};

struct FamilyTable {
    const FamilyEntry* entries;
    size_t count;
};

FamilyTable float_family();        // float_types.cpp: F32, F16, BF16, F64
FamilyTable legacy_family();       // legacy.cpp: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q6_0 IQ4_NL MXFP4 Q1_0_G128 (+ act formats with to_float)
FamilyTable kquant_family();       // kquants.cpp: Q2_K..Q6_K, Q8_K
FamilyTable iqk_family();          // iqk.cpp: IQ4_XS, IQ2_K..IQ6_K, IQ2_KS..IQ5_KS, IQ4_KSS, IQ2_KL
FamilyTable grid_family();         // grid.cpp: IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S IQ1_M
FamilyTable trellis_family();      // trellis.cpp: IQ1_KT..IQ4_KT
FamilyTable ternary_family();      // ternary.cpp: IQ1_BN IQ2_BN I2_S Q8_KV
FamilyTable interleaved_family();  // interleaved.cpp: every *_R4/_R8/_R16 and Q4_0_4x4/4x8/8x8

}  // namespace ikllm::quant
