// Registry of tensor data types (docs: quant-formats.md §2-§3). One entry per GGUF type id:
// geometry (block size, bytes, per-row metadata, rows interleaved) plus the functions that
// decode and encode rows. Kernels for matrix products live in backends/cpu/kernels and look
// types up here. Tables are constant; there is no mutable global state.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ikllm::quant {

// GGUF type ids (enum values are the ids stored in files).
enum TypeId : uint32_t {
    T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_Q8_1 = 9,
    T_Q2_K = 10, T_Q3_K = 11, T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_Q8_K = 15,
    T_IQ2_XXS = 16, T_IQ2_XS = 17, T_IQ3_XXS = 18, T_IQ1_S = 19, T_IQ4_NL = 20, T_IQ3_S = 21,
    T_IQ2_S = 22, T_IQ4_XS = 23, T_I8 = 24, T_I16 = 25, T_I32 = 26, T_I64 = 27, T_F64 = 28,
    T_IQ1_M = 29, T_BF16 = 30, T_Q4_0_4X4 = 31, T_Q4_0_4X8 = 32, T_Q4_0_8X8 = 33, T_I2_S = 36,
    T_MXFP4 = 39, T_Q1_0_G128 = 41, T_Q8_0_X4 = 97, T_Q8_1_X4 = 98, T_Q8_2_X4 = 99,
    T_Q6_0 = 133, T_IQ1_BN = 134, T_IQ2_BN = 135, T_Q8_K64 = 136, T_IQ2_K = 137, T_IQ3_K = 138,
    T_IQ4_K = 139, T_IQ5_K = 140, T_IQ6_K = 141, T_IQ4_KS = 144, T_IQ2_KS = 145, T_IQ4_KSS = 146,
    T_Q8_K16 = 147, T_Q8_K32 = 148, T_Q8_KR8 = 149, T_Q8_K128 = 150, T_Q8_KV = 151, T_IQ5_KS = 152,
    T_IQ2_KT = 153, T_IQ3_KT = 154, T_IQ4_KT = 155, T_IQ3_KS = 156, T_IQ2_KL = 157, T_IQ1_KT = 158,
    T_Q4_0_R8 = 202, T_Q5_0_R4 = 206, T_Q8_0_R8 = 208, T_Q2_K_R4 = 210, T_Q3_K_R4 = 211,
    T_Q4_K_R4 = 212, T_Q5_K_R4 = 213, T_Q6_K_R4 = 214, T_IQ2_XXS_R4 = 216, T_IQ2_XS_R4 = 217,
    T_IQ3_XXS_R4 = 218, T_IQ1_S_R4 = 219, T_IQ4_NL_R4 = 220, T_IQ3_S_R4 = 221, T_IQ2_S_R4 = 222,
    T_IQ4_XS_R8 = 223, T_IQ1_M_R4 = 229, T_BF16_R16 = 230, T_Q6_0_R4 = 233, T_IQ2_BN_R4 = 335,
    T_IQ2_K_R4 = 337, T_IQ3_K_R4 = 338, T_IQ4_K_R4 = 339, T_IQ5_K_R4 = 340, T_IQ4_KS_R4 = 344,
    T_IQ5_KS_R4 = 352, T_MXFP4_R8 = 353, T_Q8_K_R16 = 397, T_Q8_KV_R8 = 398, T_Q8_K_R8 = 399,
    // ikllm's own run-time layouts (docs/quant-r8.md): ids from kRuntimeLayoutBase up, made by
    // run-time repack only, never valid in a file.
    T_Q2_K_R8 = 4096 + 10, T_Q3_K_R8 = 4096 + 11, T_Q4_K_R8 = 4096 + 12, T_Q5_K_R8 = 4096 + 13, T_Q6_K_R8 = 4096 + 14, T_IQ4_XS_X8 = 4096 + 23, T_IQ2_K_R8 = 4096 + 137, T_IQ3_K_R8 = 4096 + 138, T_IQ4_K_R8 = 4096 + 139,
    T_IQ4_KS_R8 = 4096 + 144, T_IQ2_KS_R8 = 4096 + 145, T_IQ5_KS_R8 = 4096 + 152, T_IQ3_KS_R8 = 4096 + 156, T_IQ2_KL_R8 = 4096 + 157,
};
inline constexpr uint32_t kRuntimeLayoutBase = 4096;
inline constexpr bool is_runtime_layout(uint32_t id) { return id >= kRuntimeLayoutBase; }

// Decode `interleave` consecutive rows (one row group) of `ne0` values each.
// src points at the group's first byte; dst receives interleave*ne0 floats, row-major.
using DequantGroupFn = void (*)(const uint8_t* src, float* dst, int64_t ne0);
// Encode `interleave` rows of `ne0` floats into one row group. `imatrix` (ne0 importance
// weights, may be null) steers the search of low-bit types.
using QuantizeGroupFn = void (*)(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);

struct TypeTraits {
    uint32_t id;
    const char* name;        // reference type_name, e.g. "q4_K", "iq4_k_r4"
    int32_t block_elems;     // weights per block along ne0
    int32_t block_bytes;     // bytes per block per row (for interleaved: per row share)
    int32_t row_meta_bytes;  // per-row metadata bytes at row start (0 for most)
    int32_t interleave;      // rows decoded together (1 = plain)
    bool is_activation_only; // q8_1, q8_K32, ... never valid in a model file
    DequantGroupFn dequant;  // null: this type cannot be decoded (load error names it)
    QuantizeGroupFn quantize;// null: this type cannot be produced by ikllm quantize
};

// nullptr for ids that are not GGUF types at all.
const TypeTraits* find_type(uint32_t id);
// Case-insensitive lookup by name ("Q4_K", "iq4_k_r4"); nullptr if unknown.
const TypeTraits* find_type_by_name(const char* name);
// All known types, in id order.
const TypeTraits* all_types(size_t* count);

// Bytes of one row of ne0 values (metadata + blocks). ne0 must be a multiple of block_elems.
inline size_t row_bytes(const TypeTraits& t, int64_t ne0) {
    return (size_t)t.row_meta_bytes + (size_t)t.block_bytes * (size_t)(ne0 / t.block_elems);
}

}  // namespace ikllm::quant
