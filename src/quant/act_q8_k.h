// Activation encoders of the 256/128-weight 8-bit formats (docs: quant-formats.md §15):
// Q8_K (296 bytes / 256), Q8_K32 (296 bytes / 256, per-32 float sums) and Q8_K128
// (140 bytes / 128). Bit-exact with the reference's x86 encoders. ne0 must be a multiple of the
// block size (256, or 128 for Q8_K128).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ikllm::quant {

// Byte offsets inside one Q8_K / Q8_K32 block.
inline constexpr int kQ8KOffD = 0, kQ8KOffSum = 4, kQ8KOffQs = 8, kQ8KOffBsums = 264, kQ8KBlockBytes = 296;
// Byte offsets inside one Q8_K128 block.
inline constexpr int kQ8K128OffD = 0, kQ8K128OffBsums = 4, kQ8K128OffQs = 12, kQ8K128BlockBytes = 140;

size_t q8_k_row_bytes(int64_t ne0);
size_t q8_k32_row_bytes(int64_t ne0);
size_t q8_k128_row_bytes(int64_t ne0);

// d = amax/127, codes = RNE(x * (127/amax)), sum = d * sum(codes), bsums[16] = per-16 code sums.
void encode_q8_k_row(const float* x, uint8_t* out, int64_t ne0);
// As Q8_K, but bytes 264..295 hold 8 floats d * (per-32 code sum) and sum = their float sum.
void encode_q8_k32_row(const float* x, uint8_t* out, int64_t ne0);
// 128-weight blocks: float d, int16 bsums[4] (per 32), int8 codes[128].
void encode_q8_k128_row(const float* x, uint8_t* out, int64_t ne0);

}  // namespace ikllm::quant
