// Internal interface of the row-interleaved formats (docs: quant-formats.md §12). Each
// interleaved_<group>.cpp publishes, per type, the group decoder and (for true repacks of a
// plain "base" type) the function that builds one row group from N base rows.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/type_traits.h"

namespace ikllm::quant {

// rows[k] points at base row k (k = 0..N-1) of ne0 columns; dst receives one N-row group.
using RepackGroupFn = void (*)(const uint8_t* const* rows, uint8_t* dst, int64_t ne0);

struct InterleavedCodec {
    uint32_t id;
    uint32_t base;         // plain type it repacks, or T_F32 when it has no base (own format)
    int rows;              // N
    DequantGroupFn dequant;
    RepackGroupFn repack;  // null when not a lossless repack of `base`
    QuantizeGroupFn quantize;  // direct quantizer (only for types that are not base+repack)
};

struct CodecList {
    const InterleavedCodec* items;
    size_t count;
};

CodecList interleaved_legacy_codecs();  // Q4_0_R8 Q8_0_R8 MXFP4_R8 IQ4_NL_R4 Q5_0_R4 Q6_0_R4 Q4_0_NxM
CodecList interleaved_kquant_codecs();  // Q2_K_R4..Q6_K_R4, IQ4_XS_R8, Q4_K_R8 / Q6_K_R8 / IQ4_K_R8 (run-time)
CodecList interleaved_iqk_codecs();     // IQ2_K_R4..IQ5_K_R4, IQ4_KS_R4, IQ5_KS_R4
CodecList interleaved_grid_codecs();    // IQ2_XXS_R4 IQ2_XS_R4 IQ2_S_R4 IQ3_XXS_R4 IQ3_S_R4 IQ1_S_R4 IQ1_M_R4 IQ2_BN_R4
CodecList interleaved_8bit_codecs();    // BF16_R16 Q8_K_R8 Q8_K_R16 Q8_KV_R8

// Codec of an interleaved type id, nullptr if unknown.
const InterleavedCodec* find_interleaved_codec(uint32_t id);

// NIB4 map (§12.1): column of the low (h = 0) / high (h = 1) nibble of byte 16t+4k+i is i + kNib4Off[t][h].
inline constexpr int kNib4Off[4][2] = {{0, 8}, {16, 24}, {4, 12}, {20, 28}};

}  // namespace ikllm::quant
