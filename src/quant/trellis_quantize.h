// Encoders of the trellis types IQ1_KT, IQ2_KT, IQ3_KT, IQ4_KT (docs: quant-formats.md §10). How codes
// are chosen is not part of the format; ours searches each group's nearest generator output
// through a k-means index of the code book (see trellis_quantize.cpp).
#pragma once
#include <cstdint>

namespace ikllm::quant {

// One row of ne0 floats (multiple of 256) -> float32 row scale + blocks. imatrix may be null.
void quantize_iq1_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq4_kt(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);

}  // namespace ikllm::quant
