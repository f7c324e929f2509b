// Row encoders/decoders of the K-quant family (kquant*.cpp) and the ik K / KS family
// (iqk*.cpp). Internal to the quant layer: the families publish them via families.h; kernels
// and tests may call them directly. One call handles one row of ne0 values (ne0 % 256 == 0).
#pragma once
#include <cstdint>
#include <cstring>
#include "core/error.h"
#include "quant/le_bytes.h"

namespace ikllm::quant {

// ---- decoders (bit-exact per quant-formats.md §6-§8) ----
void dequant_q2_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_q3_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_q4_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_q5_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_q6_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_q8_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq4_xs(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq2_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq3_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq4_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq5_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq6_k(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq2_ks(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq3_ks(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq4_ks(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq4_kss(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq5_ks(const uint8_t* src, float* dst, int64_t ne0);
void dequant_iq2_kl(const uint8_t* src, float* dst, int64_t ne0);

// ---- encoders (imatrix: ne0 importance weights or null) ----
void quantize_q2_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_q3_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_q8_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq4_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq5_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq6_k(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq4_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq4_kss(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq5_ks(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_kl(const float* src, uint8_t* dst, int64_t ne0, const float* imatrix);

// Rows must hold whole 256-weight blocks (callers validate tensor shapes; this guards misuse).
inline void require_whole_blocks(int64_t ne0) {
    if (ne0 <= 0 || ne0 % 256 != 0) fail(Status::invalid_argument, "row length must be a positive multiple of 256");
}

// Block sizes (bytes per 256 weights) of the types above.
enum : int {
    kQ2KBytes = 84, kQ3KBytes = 110, kQ4KBytes = 144, kQ5KBytes = 176, kQ6KBytes = 210, kQ8KBytes = 296,
    kIq4XsBytes = 136, kIq2KBytes = 76, kIq3KBytes = 110, kIq4KBytes = 144, kIq5KBytes = 176,
    kIq6KBytes = 212, kIq2KsBytes = 70, kIq3KsBytes = 102, kIq4KsBytes = 136, kIq4KssBytes = 128,
    kIq5KsBytes = 168, kIq2KlBytes = 86,
};

}  // namespace ikllm::quant
