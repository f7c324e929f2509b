// Constant value tables of the non-linear quant types (docs: quant-formats.md §14, tables/*.txt).
// Numbers are copied from the spec's table files; nothing here is mutable.
#pragma once
#include <cstdint>

namespace ikllm::quant::tables {

// kvalues_iq4nl (IQ4_NL, IQ4_XS): 16 non-linear 4-bit levels.
inline constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// iq4k_values: [0,16) = kIq4nl, [16,32) = the same + 4 (IQ4_K, IQ4_KS, IQ4_KSS).
inline constexpr int8_t kIq4k[32] = {-127, -104, -83, -65, -49, -35, -22, -10, 1,  13, 25, 38, 53, 69, 89, 113,
                                     -123, -100, -79, -61, -45, -31, -18, -6,  5,  17, 29, 42, 57, 73, 93, 117};
// iq2nl_values: [0,4) and [4,8) = the same + 5 (IQ2_K, IQ2_KS).
inline constexpr int8_t kIq2nl[8] = {-31, -13, 1, 17, -26, -8, 6, 22};
// iq3nl_values: [0,8) and [8,16) = the same + 4 (IQ3_K, IQ3_KS).
inline constexpr int8_t kIq3nl[16] = {-63, -40, -23, -10, 1, 13, 28, 47, -59, -36, -19, -6, 5, 17, 32, 51};
// iq5nl_values: [0,32) and [32,64) = the same + 2 (IQ5_K, IQ5_KS).
inline constexpr int8_t kIq5nl[64] = {
    -126, -114, -103, -92, -83, -74, -65, -57, -50, -43, -36, -30, -24, -18, -12, -6,
    -1,   5,    11,   17,  23,  29,  36,  43,  51,  59,  68,  77,  87,  97,  109, 121,
    -124, -112, -101, -90, -81, -72, -63, -55, -48, -41, -34, -28, -22, -16, -10, -4,
    1,    7,    13,   19,  25,  31,  38,  45,  53,  61,  70,  79,  89,  99,  111, 123};
// iq6nl_values: integer IQ6_K levels used by quantizer and matmul kernels; [64,128) = [0,64) + 1.
inline constexpr int8_t kIq6nl[128] = {
    -127, -121, -115, -109, -104, -98, -93, -88, -84, -79, -74, -70, -66, -62, -58, -54,
    -51,  -47,  -44,  -40,  -37,  -34, -31, -28, -25, -22, -19, -16, -13, -11, -8,  -5,
    -2,   0,    3,    6,    9,    12,  14,  17,  20,  23,  27,  30,  33,  36,  40,  44,
    47,   51,   55,   59,   63,   68,  72,  77,  82,  87,  92,  98,  103, 109, 115, 121,
    -126, -120, -114, -108, -103, -97, -92, -87, -83, -78, -73, -69, -65, -61, -57, -53,
    -50,  -46,  -43,  -39,  -36,  -33, -30, -27, -24, -21, -18, -15, -12, -10, -7,  -4,
    -1,   1,    4,    7,    10,   13,  15,  18,  21,  24,  28,  31,  34,  37,  41,  45,
    48,   52,   56,   60,   64,   69,  73,  78,  83,  88,  93,  99,  104, 110, 116, 122};
// iq6k_values_f32: float32 bit patterns of the exact IQ6_K dequantization levels P[q] (§7.6).
inline constexpr uint32_t kIq6kF32Bits[64] = {
    0xc2fe0000, 0xc2f1b557, 0xc2e5d9e1, 0xc2da69ee, 0xc2cf61d2, 0xc2c4bde0, 0xc2ba7a69, 0xc2b093c1,
    0xc2a70639, 0xc29dce24, 0xc294e7d5, 0xc28c4f9f, 0xc28401d2, 0xc277f587, 0xc2686d87, 0xc259644d,
    0xc24ad27c, 0xc23cb0b6, 0xc22ef7a6, 0xc2219fee, 0xc214a232, 0xc207f718, 0xc1f72e90, 0xc1def6c0,
    0xc1c73814, 0xc1afe3d6, 0xc198eb4a, 0xc1823fc0, 0xc157a4f8, 0xc12b299c, 0xc0fde002, 0xc0a5b558,
    0xc01b3100, 0x3eab16d8, 0x4046c6b4, 0x40bcb7eb, 0x410b7516, 0x41391a72, 0x41676976, 0x418b3fc3,
    0x41a33d0a, 0x41bbbb48, 0x41d4c931, 0x41ee757d, 0x4204676e, 0x4211f208, 0x421fe1e1, 0x422e3e57,
    0x423d0ec6, 0x424c5a88, 0x425c28f9, 0x426c8170, 0x427d6b4f, 0x428776f5, 0x42908850, 0x4299ed66,
    0x42a3a9e2, 0x42adc174, 0x42b837cc, 0x42c31092, 0x42ce4f77, 0x42d9f828, 0x42e60e52, 0x42f295a4};
// iq2kl_values: IQ2_KL pair codebook; low byte = first weight, high byte = second (both int8).
inline constexpr uint16_t kIq2kl[32] = {
    0xe9c1, 0x0dc1, 0xc1d8, 0xf6d8, 0x0dd8, 0x2fd8, 0xd8e9, 0xe9e9, 0x01e9, 0x0de9, 0x1ce9,
    0xc1f6, 0x01f6, 0x0df6, 0x2ff6, 0xe901, 0xf601, 0x0101, 0x0d01, 0x1c01, 0xd80d, 0xe90d,
    0xf60d, 0x010d, 0x0d0d, 0xc11c, 0xe91c, 0x011c, 0x1c1c, 0x2f1c, 0xe92f, 0x0d2f};

// IQ6_K exact dequantization level P[q] as float (decoded from kIq6kF32Bits).
float iq6k_level(int q);
// Pointer to all 64 IQ6_K levels P[0..63] as floats.
const float* iq6k_levels();

}  // namespace ikllm::quant::tables
