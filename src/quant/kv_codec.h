// Element formats of the KV cache: f32, f16, bf16 and q8_0 (blocks of 32 with an fp16 scale).
// Rows are encoded when stored and decoded when attention reads them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ikllm::quant {

// Type id for a cache type name ("f32", "f16", "bf16", "q8_0"), or 0 with ok=false.
uint32_t kv_type_from_name(const std::string& name, bool* ok);
const char* kv_type_name(uint32_t type);
// Bytes of a row of n values (n must be a multiple of 32 for q8_0: see kv_row_ok).
size_t kv_row_bytes(uint32_t type, int64_t n);
bool kv_row_ok(uint32_t type, int64_t n);
void kv_encode_row(uint32_t type, const float* x, void* dst, int64_t n);
void kv_decode_row(uint32_t type, const void* src, float* y, int64_t n);

}  // namespace ikllm::quant
