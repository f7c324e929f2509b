// Functions of the ternary family shared with the matmul kernels (docs: quant-formats.md §11, §15).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ikllm::quant {

// Trit j (0..4) of an IQ1_BN byte: floor(3 * ((b * 3^(4-j)) mod 256) / 256).
int iq1bn_trit(uint8_t b, int j);
void dequant_iq1_bn(const uint8_t* src, float* y, int64_t ne0);
void dequant_iq2_bn(const uint8_t* src, float* y, int64_t ne0);

// Q8_KV row: float32 d, int32 Σq, int8 q[ne0]. Also the activation format of Q8_KV weights.
void quantize_q8_kv_row(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
size_t q8_kv_row_bytes(int64_t ne0);

// Activation rows for IQ1_BN / IQ2_BN (Q8_K64) and IQ2_BN_R4 (Q8_K16), §15.
// Q8_K64: float d[4], float d[i]*Σq[i] [4], then int8 codes; element p is in group (p%16)/4.
size_t q8_k64_row_bytes(int64_t ne0);
void quantize_q8_k64_row(const float* x, uint8_t* out, int64_t ne0);
// Q8_K16: float d[4], float Σ d[i]*Σq[i], then int8 codes; element p is in group (p%64)/16.
size_t q8_k16_row_bytes(int64_t ne0);
void quantize_q8_k16_row(const float* x, uint8_t* out, int64_t ne0);

}  // namespace ikllm::quant
