// Encoders of the grid i-quants (docs: quant-formats.md §9); see grid_quantize.cpp.
#pragma once
#include <cstdint>

namespace ikllm::quant {

// One row of ne0 floats (multiple of 256) -> blocks. imatrix (ne0 weights) may be null.
void quantize_iq2_xxs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_xs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_xxs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq1_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq1_m(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);

}  // namespace ikllm::quant
