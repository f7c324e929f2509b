// Float decoders of the activation formats used by the grid / trellis / ternary / interleaved
// kernels (docs: quant-formats.md §15). The reference has no decoders; these give x = d * q so
// that portable kernels can multiply dequantized weights by exactly the quantized activations.
#pragma once
#include <cstdint>

namespace ikllm::quant {

using ActDecodeFn = void (*)(const uint8_t* in, float* y, int64_t ne0);

void decode_q8_k_row(const uint8_t* in, float* y, int64_t ne0);     // Q8_K and Q8_K32 (same codes)
void decode_q8_k128_row(const uint8_t* in, float* y, int64_t ne0);  // Q8_K128
void decode_q8_k64_row(const uint8_t* in, float* y, int64_t ne0);   // Q8_K64 row format
void decode_q8_k16_row(const uint8_t* in, float* y, int64_t ne0);   // Q8_K16 row format
void decode_q8_kv_row(const uint8_t* in, float* y, int64_t ne0);    // Q8_KV
void decode_bf16_row(const uint8_t* in, float* y, int64_t ne0);     // BF16

}  // namespace ikllm::quant
