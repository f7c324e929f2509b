// Integer views (int8_codes.cuh) of IQ2_K, IQ3_K, IQ5_K, IQ6_K.
// Codes are the levels of the value set a 16-weight sub-block takes (the second set is the
// first plus a constant: +5 IQ2_K, +4 IQ3_K, +2 IQ5_K, +1 IQ6_K; the CPU folds that constant
// times the scale into its per-16 correction). The reference multiplies IQ2_K and IQ3_K as
// signed levels below 32 tokens (exact here: codes8) and IQ5_K and IQ6_K with saturating pair
// sums (kSat); all four are re-encoded per 256 weights from 32 tokens on (kConv).
#pragma once
#include "device_branch.cuh"
#include "int8_codes.cuh"

namespace ikllm::cuda {

namespace bd {

// 4-bit field s of the nibble array at p.
IKLLM_HD int nibble(const uint8_t* p, int s) { return (p[s >> 1] >> (4 * (s & 1))) & 15; }

// Four 32-entry table lookups: bytes of n (each 0..31) -> entries 0..15 from a, 16..31 from b.
IKLLM_HD uint32_t lut32(const Lut16& a, const Lut16& b, uint32_t n) {
    const uint32_t l = n & 0x0F0F0F0Fu, m = ((n >> 4) & 0x01010101u) * 0xFFu;
    return (lut4(a, l) & ~m) | (lut4(b, l) & m);
}

// IQ5_K levels in registers: [0, 32) the first set, [32, 64) the second.
inline constexpr Lut16 kIq5Lut0 = make_lut16(quant::tables::kIq5nl), kIq5Lut1 = make_lut16(quant::tables::kIq5nl + 16),
                       kIq5Lut2 = make_lut16(quant::tables::kIq5nl + 32), kIq5Lut3 = make_lut16(quant::tables::kIq5nl + 48);

// IQ6_K's integer levels (the reference's matmul table, first set; 64 entries: too many for
// registers), per translation unit like block_decode.cuh's memory tables.
constexpr I8x64 make_iq6nl() {
    I8x64 r{};
    for (int i = 0; i < 64; ++i) r.v[i] = quant::tables::kIq6nl[i];
    return r;
}
inline constexpr I8x64 kIq6nlHost = make_iq6nl();
#if defined(__CUDACC__) || defined(IKLLM_EMU_DEVICE_BRANCHES)  // (device tables)
static __device__ const I8x64 kIq6nlDev = make_iq6nl();
#endif
// Bytes of n (each 0..63) -> bytes of level + add (as uint8: add 128 gives the unsigned form).
IKLLM_HD uint32_t iq6nl4(uint32_t n, int add) {
    uint32_t r = 0;
IKLLM_UNROLL
    for (int i = 0; i < 4; ++i) {
        const uint32_t k = (n >> 8 * i) & 63u;
#if IKLLM_DEVICE_BRANCH
        const int v = kIq6nlDev.v[k];
#else
        const int v = kIq6nlHost.v[k];
#endif
        r |= (uint32_t)(uint8_t)(v + add) << 8 * i;
    }
    return r;
}

}  // namespace bd

template <>
struct Int8Codes<quant::T_IQ2_K> : i8::Scaled<Int8Codes<quant::T_IQ2_K>> {
    using D = BlockDecoder<quant::T_IQ2_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kConv = true;
    static constexpr float kConvD0 = 1.0f / 120.0f;
    // Levels of the chunk's value set, integer scale and d.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const int s = chunk >> 1;
        isc = bd::nibble(b + 4, s) - 8;
        dw = bd::ldh(b);
        const uint32_t tw = ((bd::ld16(b + 2) >> s) & 1) ? bd::kIq2nlW1 : bd::kIq2nlW0;
        const uint8_t* q = b + 12 + bd::p2_off(chunk);
        const int sh = bd::p2_shift(chunk);
        lo = i8::lut8x4(tw, tw, (bd::ld32<4>(q) >> sh) & 0x03030303u);
        hi = i8::lut8x4(tw, tw, (bd::ld32<4>(q + 4) >> sh) & 0x03030303u);
    }
};

template <>
struct Int8Codes<quant::T_IQ3_K> : i8::Scaled<Int8Codes<quant::T_IQ3_K>> {
    using D = BlockDecoder<quant::T_IQ3_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // Levels of the chunk's value set, integer scale (odd, signed) and d.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const int s = chunk >> 1;
        const int mag = 2 * bd::nibble(b + 6, s) + 1;
        isc = ((bd::ld16(b + 4) >> s) & 1) ? -mag : mag;
        dw = bd::ldh(b);
        const bool second = (bd::ld16(b + 2) >> s) & 1;
        const uint32_t t0 = second ? bd::kIq3nlW2 : bd::kIq3nlW0, t1 = second ? bd::kIq3nlW3 : bd::kIq3nlW1;
        const uint8_t* q = b + 14 + bd::p2_off(chunk);
        const uint8_t* h = b + 78 + bd::hb_off(chunk);
        const int sh = bd::p2_shift(chunk), hs = bd::hb_shift(chunk);
        lo = i8::lut8x4(t0, t1, ((bd::ld32<2>(q) >> sh) & 0x03030303u) | ((bd::ld32<2>(h) >> hs) & 0x01010101u) << 2);
        hi = i8::lut8x4(t0, t1, ((bd::ld32<2>(q + 4) >> sh) & 0x03030303u) | ((bd::ld32<2>(h + 4) >> hs) & 0x01010101u) << 2);
    }
};

template <>
struct Int8Codes<quant::T_IQ5_K> : i8::TwoSets<Int8Codes<quant::T_IQ5_K>> {
    using D = BlockDecoder<quant::T_IQ5_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // The chunk's 8 level indices (5 bits, bytes of n_lo / n_hi), integer scale, d, and whether
    // its 16 weights take the second value set (= the first + 2).
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* b = D::block(row, ib);
        const int s = chunk >> 1;
        second = (bd::ld16(b + 2) >> s) & 1;
        isc = bd::k6_scale(b, s);
        dw = bd::ldh(b);
        const uint8_t* q = b + 16 + bd::p4k_off(chunk);
        const uint8_t* h = b + 144 + bd::hb_off(chunk);
        const int sh = bd::p4k_shift(chunk), hs = bd::hb_shift(chunk);
        n_lo = bd::nib4(bd::ld32<4>(q), sh) | ((bd::ld32<4>(h) >> hs) & 0x01010101u) << 4;
        n_hi = bd::nib4(bd::ld32<4>(q + 4), sh) | ((bd::ld32<4>(h + 4) >> hs) & 0x01010101u) << 4;
    }
    static constexpr int kShift = 2;
    IKLLM_HD static void levels(uint32_t n_lo, uint32_t n_hi, bool second, uint32_t& lo, uint32_t& hi) {
        constexpr bd::Lut16 l0 = bd::kIq5Lut0, l1 = bd::kIq5Lut1, l2 = bd::kIq5Lut2, l3 = bd::kIq5Lut3;
        const bd::Lut16 a = bd::sel_lut16(second, l0, l2), c = bd::sel_lut16(second, l1, l3);
        lo = bd::lut32(a, c, n_lo);
        hi = bd::lut32(a, c, n_hi);
    }
};

// IQ6_K's codes are the reference matmul's integer levels (kIq6nl), not the polynomial levels
// of its to_float that BlockDecoder<T_IQ6_K>::decode8 reproduces: scale * code differs from
// decode8 by up to half a level step (kCodesDecode = false: cuda_int8_codes_host_test does
// not hold codes8 to decode8; the emulation test holds every form to the CPU's kernel).
template <>
struct Int8Codes<quant::T_IQ6_K> : i8::TwoSets<Int8Codes<quant::T_IQ6_K>> {
    using D = BlockDecoder<quant::T_IQ6_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    static constexpr bool kCodesDecode = false;  // see above
    // The chunk's 8 level indices (6 bits), integer scale, d, and whether its 16 weights take
    // the second value set (= the first + 1).
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* b = D::block(row, ib);
        const int s = chunk >> 1;
        second = (bd::ld16(b + 2) >> s) & 1;
        isc = (int8_t)b[4 + s];
        dw = bd::ldh(b);
        const int cc = chunk >> 3, hbit = (chunk >> 2) & 1, l = 8 * (chunk & 3);
        const uint8_t* q = b + 20 + 32 * cc + l;
        const uint8_t* h = b + 148 + 32 * (cc >> 1) + l;
        const int sh = 4 * hbit, hs = 4 * (cc & 1) + 2 * hbit;
        n_lo = bd::nib4(bd::ld32<4>(q), sh) | ((bd::ld32<4>(h) >> hs) & 0x03030303u) << 4;
        n_hi = bd::nib4(bd::ld32<4>(q + 4), sh) | ((bd::ld32<4>(h + 4) >> hs) & 0x03030303u) << 4;
    }
    static constexpr int kShift = 1;
    IKLLM_HD static void levels(uint32_t n_lo, uint32_t n_hi, bool second, uint32_t& lo, uint32_t& hi) {
        lo = bd::iq6nl4(n_lo, second ? 1 : 0);
        hi = bd::iq6nl4(n_hi, second ? 1 : 0);
    }
};

}  // namespace ikllm::cuda

#define IKLLM_I8_IQK_TYPES(X) X(T_IQ2_K) X(T_IQ3_K) X(T_IQ5_K) X(T_IQ6_K)
