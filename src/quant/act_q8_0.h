// Activation encoders for 32-weight block kernels (quant-formats.md §15): float32 rows are
// turned into 8-bit codes once per matmul, then multiplied as integers against weight blocks.
//   Q8_0     34 bytes / 32: fp16 d, int8 q[32]
//   Q8_1     36 bytes / 32: fp16 d, fp16 s = d*sum(q), int8 q[32]
//   Q8_0_X4  groups of 4 blocks: 4 fp16 d, 128 codes (136 bytes); leftover blocks as Q8_0
//   Q8_1_X4  groups of 4 blocks: 4 fp16 d, 4 fp16 s, 128 codes (144 bytes); leftovers as Q8_1
//   Q8_2_X4  groups of 4 blocks: 4 bf16 d, 4 int16 sum(q), 128 codes (144 bytes); leftovers as
//            36-byte blocks (bf16 d, int16 sum, 32 codes). The main format on x86.
// Codes are round-to-nearest-even of x * id with the scale rules of §15. ne0 must be a
// multiple of 32. The encoders here are the reference; SIMD copies must produce identical bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ikllm::quant {

inline constexpr int kActBlock = 32;

inline size_t act_q8_0_row_bytes(int64_t ne0) { return (size_t)(ne0 / 32) * 34; }
inline size_t act_q8_1_row_bytes(int64_t ne0) { return (size_t)(ne0 / 32) * 36; }
inline size_t act_q8_0_x4_row_bytes(int64_t ne0) { return (size_t)(ne0 / 32) * 34; }
inline size_t act_q8_1_x4_row_bytes(int64_t ne0) { return (size_t)(ne0 / 32) * 36; }
inline size_t act_q8_2_x4_row_bytes(int64_t ne0) { return (size_t)(ne0 / 32) * 36; }

void act_q8_0_encode_row(const float* x, uint8_t* out, int64_t ne0);
void act_q8_1_encode_row(const float* x, uint8_t* out, int64_t ne0);
void act_q8_0_x4_encode_row(const float* x, uint8_t* out, int64_t ne0);
void act_q8_1_x4_encode_row(const float* x, uint8_t* out, int64_t ne0);
void act_q8_2_x4_encode_row(const float* x, uint8_t* out, int64_t ne0);

// Decoders (d * q), for tests and to_float; the reference itself has none (§13.6).
void act_q8_0_decode_row(const uint8_t* in, float* y, int64_t ne0);
void act_q8_1_decode_row(const uint8_t* in, float* y, int64_t ne0);
void act_q8_0_x4_decode_row(const uint8_t* in, float* y, int64_t ne0);
void act_q8_1_x4_decode_row(const uint8_t* in, float* y, int64_t ne0);
void act_q8_2_x4_decode_row(const uint8_t* in, float* y, int64_t ne0);

// ---- Q8_2_X4 layout helpers shared by kernels -------------------------------------------------
// Every 32-value block of a Q8_2_X4 row in the format's layout: block(x, d, sum, codes) encodes
// the 32 floats at x, writing the bf16 scale to d, the int16 code sum to sum and the codes.
// (Encoders pass lambdas, so each instantiation stays within its own file and instruction set.)
template <class Block>
inline void act_q8_2_x4_for_blocks(const float* x, uint8_t* out, int64_t ne0, Block&& block) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    for (int64_t g = 0; g < ng; ++g) {
        uint8_t* grp = out + 144 * g;
        for (int k = 0; k < 4; ++k)
            block(x + 32 * (4 * g + k), grp + 2 * k, grp + 8 + 2 * k, reinterpret_cast<int8_t*>(grp + 16 + 32 * k));
    }
    for (int64_t ib = 4 * ng; ib < nb; ++ib) {
        uint8_t* blk = out + 144 * ng + 36 * (ib - 4 * ng);
        block(x + 32 * ib, blk, blk + 2, reinterpret_cast<int8_t*>(blk + 4));
    }
}

// One 32-weight block of an encoded Q8_2_X4 row, wherever it lives (in a group or a leftover).
struct Q8x4BlockRef {
    const int8_t* qs;  // 32 codes
    uint16_t d_bf16;   // scale, bf16 bits
    int16_t sum;       // sum of the 32 codes
};
inline int64_t q8_2_x4_full_groups(int64_t ne0) { return (ne0 / 32) / 4; }
inline const uint8_t* q8_2_x4_group(const uint8_t* row, int64_t g) { return row + 144 * g; }
inline Q8x4BlockRef q8_2_x4_block(const uint8_t* row, int64_t ne0, int64_t ib) {
    const int64_t ng = q8_2_x4_full_groups(ne0);
    Q8x4BlockRef b;
    const uint8_t* p;
    if (ib < 4 * ng) {
        const uint8_t* g = row + 144 * (ib / 4);
        const int k = (int)(ib % 4);
        std::memcpy(&b.d_bf16, g + 2 * k, 2);
        std::memcpy(&b.sum, g + 8 + 2 * k, 2);
        p = g + 16 + 32 * k;
    } else {
        const uint8_t* blk = row + 144 * ng + 36 * (ib - 4 * ng);
        std::memcpy(&b.d_bf16, blk, 2);
        std::memcpy(&b.sum, blk + 2, 2);
        p = blk + 4;
    }
    b.qs = reinterpret_cast<const int8_t*>(p);
    return b;
}

}  // namespace ikllm::quant
