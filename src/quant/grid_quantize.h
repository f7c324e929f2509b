// Encoders of the grid i-quants (docs: quant-formats.md §9); see grid_quantize.cpp.
#pragma once
#include <cstdint>
#include <vector>

namespace ikllm::quant {

// One row of ne0 floats (multiple of 256) -> blocks. imatrix (ne0 weights) may be null.
void quantize_iq2_xxs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_xs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq2_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_xxs(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq3_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq1_s(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);
void quantize_iq1_m(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix);

// IQ1_S_R4 / IQ1_M_R4 (§12.8): one row of ne0 floats (multiple of 32) quantized with its own fp16
// scale, before the 4-row interleaving (done by interleaved_grid.cpp). imatrix may be null.
struct Iq1R4RowCodes {
    uint16_t d16 = 0;                // fp16 row scale d_k
    std::vector<uint16_t> idx;       // per 8 columns: 11-bit iq1s_grid index
    std::vector<uint8_t> neg_delta;  // per 8 columns: 1 = delta -0.125 (IQ1_S_R4: same in a 32-block)
    std::vector<uint8_t> scale;      // IQ1_S_R4: per 32 columns s (0..7, dl = d(2s+1));
                                     // IQ1_M_R4: per 16 columns s (0..15, dl = d s)
};
void quantize_iq1_s_r4_row(const float* x, int64_t ne0, const float* imatrix, Iq1R4RowCodes* out);
void quantize_iq1_m_r4_row(const float* x, int64_t ne0, const float* imatrix, Iq1R4RowCodes* out);

}  // namespace ikllm::quant
