// Integer view of the common weight types for the int8 matrix-vector kernel (mat_vec_int8.cu):
// for chunk `chunk` (8 values) of block `ib`, Int8Codes<TYPE>::codes8 gives the 8 weights as
// signed int8 codes packed in two words (byte i of the 8 is byte i & 3 of lo/hi) and a float
// scale and bias with
//     weight[i] = scale * code[i] + bias          (bias is 0 unless kHasBias)
// Scale and bias are constant over 32 values (16 where kScale16), 32-aligned (16-aligned).
// equal to BlockDecoder<TYPE>::decode8 (same operands, same operations: host test
// cuda_int8_codes_host_test checks it for every chunk). A chunk's product with 8 activation
// codes q (scale xd) is then two dp4a plus, with a bias, two more for the sum of q:
//     xd * (scale * sum(code * q) + bias * sum(q))
// which replaces ~48 float operations per chunk of the decode-to-float kernel by ~10.
#pragma once
#include "block_decode.cuh"

namespace ikllm::cuda {

namespace bd {

// Signed 4-byte dot product plus c (device: one dp4a instruction).
IKLLM_HD int dp4a(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a((int)a, (int)b, c);
#else
    for (int i = 0; i < 4; ++i) c += (int)(int8_t)(uint8_t)(a >> 8 * i) * (int)(int8_t)(uint8_t)(b >> 8 * i);
    return c;
#endif
}

// The 4 nibbles at bit `sh` (0 or 4) of each byte of w, as bytes 0..15.
IKLLM_HD uint32_t nib4(uint32_t w, int sh) { return (w >> sh) & 0x0F0F0F0Fu; }

// Bytes v (each < 0x80) minus k (<= 0x80) per byte, as int8: no borrow crosses a byte because
// every byte is lifted by 0x80 first.
IKLLM_HD uint32_t sub_bytes(uint32_t v, uint32_t k) { return ((v | 0x80808080u) - k * 0x01010101u) ^ 0x80808080u; }

// Four 16-entry table lookups at once: bytes of n (each 0..15) -> bytes of the int8 table.
IKLLM_HD uint32_t lut4(const Lut16& t, uint32_t n) {
#ifdef __CUDA_ARCH__
    const uint32_t s = n & 0x07070707u;
    const uint32_t u = s | (s >> 4);
    const uint32_t sel = (u & 0xFFu) | ((u >> 8) & 0xFF00u);  // nibble i selects byte i
    const uint32_t a = __byte_perm(t.w0, t.w1, sel), b = __byte_perm(t.w2, t.w3, sel);
    const uint32_t m = ((n >> 3) & 0x01010101u) * 0xFFu;       // entries 8..15 come from b
    return (a & ~m) | (b & m);
#else
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= (uint32_t)(uint8_t)t((n >> 8 * i) & 15u) << 8 * i;
    return r;
#endif
}

// Q4_K / Q5_K: scale d * sc and bias -(dmin * m) of chunk `chunk`'s 32-value group.
IKLLM_HD void kq_scale_bias(const uint8_t* b, int chunk, float& scale, float& bias) {
    int sc, m;
    kscale(b + 4, chunk >> 2, sc, m);
    scale = ldh(b) * i2f(sc);
    bias = -(ldh(b + 2) * i2f(m));
}

}  // namespace bd

template <uint32_t TYPE>
struct Int8Codes;  // types without an integer view use the decode-to-float kernel

template <>
struct Int8Codes<quant::T_Q8_0> {
    using D = BlockDecoder<quant::T_Q8_0>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint8_t* q = b + 2 + 8 * chunk;
        lo = bd::ld32<2>(q);
        hi = bd::ld32<2>(q + 4);
        scale = bd::ldh(b);
        bias = 0.f;
    }
};

template <>
struct Int8Codes<quant::T_Q4_0> {
    using D = BlockDecoder<quant::T_Q4_0>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint8_t* q = b + 2 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        lo = bd::sub_bytes(bd::nib4(bd::ld32<2>(q), sh), 8);
        hi = bd::sub_bytes(bd::nib4(bd::ld32<2>(q + 4), sh), 8);
        scale = bd::ldh(b);
        bias = 0.f;
    }
};

template <>
struct Int8Codes<quant::T_IQ4_NL> {
    using D = BlockDecoder<quant::T_IQ4_NL>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint8_t* q = b + 2 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
        lo = bd::lut4(lut, bd::nib4(bd::ld32<2>(q), sh));
        hi = bd::lut4(lut, bd::nib4(bd::ld32<2>(q + 4), sh));
        scale = bd::ldh(b);
        bias = 0.f;
    }
};

template <>
struct Int8Codes<quant::T_Q4_K> {
    using D = BlockDecoder<quant::T_Q4_K>;
    static constexpr bool kHasBias = true;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        bd::kq_scale_bias(b, chunk, scale, bias);
        const uint8_t* q = b + 16 + bd::p4k_off(chunk);
        const int sh = bd::p4k_shift(chunk);
        lo = bd::nib4(bd::ld32<4>(q), sh);
        hi = bd::nib4(bd::ld32<4>(q + 4), sh);
    }
};

template <>
struct Int8Codes<quant::T_Q5_K> {
    using D = BlockDecoder<quant::T_Q5_K>;
    static constexpr bool kHasBias = true;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        bd::kq_scale_bias(b, chunk, scale, bias);
        const uint8_t* q = b + 48 + bd::p4k_off(chunk);
        const uint8_t* h = b + 16 + bd::hb_off(chunk);
        const int sh = bd::p4k_shift(chunk), hs = bd::hb_shift(chunk);
        lo = bd::nib4(bd::ld32<4>(q), sh) | ((bd::ld32<4>(h) >> hs) & 0x01010101u) << 4;
        hi = bd::nib4(bd::ld32<4>(q + 4), sh) | ((bd::ld32<4>(h + 4) >> hs) & 0x01010101u) << 4;
    }
};

template <>
struct Int8Codes<quant::T_Q6_K> {
    using D = BlockDecoder<quant::T_Q6_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const int cc = chunk >> 4, t = (chunk >> 2) & 3, l = 8 * (chunk & 3);
        const uint8_t* ql = b + 64 * cc + 32 * (t & 1) + l;
        const uint8_t* qh = b + 128 + 32 * cc + l;
        const int sh = 4 * (t >> 1), hs = 2 * t;
        lo = bd::sub_bytes(bd::nib4(bd::ld32<2>(ql), sh) | ((bd::ld32<2>(qh) >> hs) & 0x03030303u) << 4, 32);
        hi = bd::sub_bytes(bd::nib4(bd::ld32<2>(ql + 4), sh) | ((bd::ld32<2>(qh + 4) >> hs) & 0x03030303u) << 4, 32);
        scale = bd::ldh(b + 208) * bd::i2f((int8_t)b[192 + (chunk >> 1)]);
        bias = 0.f;
    }
};

template <>
struct Int8Codes<quant::T_IQ4_XS> {
    using D = BlockDecoder<quant::T_IQ4_XS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const int j = chunk >> 2;
        const uint32_t sh16 = bd::ld16(b + 2);
        const int ls = (int)(((b[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | ((sh16 >> (2 * j)) & 3) << 4);
        scale = bd::ldh(b) * bd::i2f((ls - 32));
        bias = 0.f;
        const uint8_t* q = b + 8 + bd::p4n_off(chunk);
        const int sh = bd::p4n_shift(chunk);
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
        lo = bd::lut4(lut, bd::nib4(bd::ld32<4>(q), sh));
        hi = bd::lut4(lut, bd::nib4(bd::ld32<4>(q + 4), sh));
    }
};

template <>
struct Int8Codes<quant::T_IQ4_K> {
    using D = BlockDecoder<quant::T_IQ4_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const int s = chunk >> 1;
        const uint32_t extra = bd::ld16(b + 2);
        scale = bd::ldh(b) * bd::i2f(bd::k6_scale(b, s));
        bias = 0.f;
        constexpr bd::Lut16 l0 = bd::kIq4kLut0, l1 = bd::kIq4kLut1;
        const bd::Lut16 lut = bd::sel_lut16((extra >> s) & 1, l0, l1);
        const uint8_t* q = b + 16 + bd::p4n_off(chunk);
        const int sh = bd::p4n_shift(chunk);
        lo = bd::lut4(lut, bd::nib4(bd::ld32<4>(q), sh));
        hi = bd::lut4(lut, bd::nib4(bd::ld32<4>(q + 4), sh));
    }
};

// Calls f(Int8Codes<T>{}) for the types above; false for every other type.
template <class F>
bool dispatch_int8_type(uint32_t type, F&& f) {
    switch (type) {
#define IKLLM_I8_CASE(T)              \
    case quant::T:                    \
        f(Int8Codes<quant::T>{});     \
        return true;
        IKLLM_I8_CASE(T_Q8_0)
        IKLLM_I8_CASE(T_Q4_0)
        IKLLM_I8_CASE(T_IQ4_NL)
        IKLLM_I8_CASE(T_Q4_K)
        IKLLM_I8_CASE(T_Q5_K)
        IKLLM_I8_CASE(T_Q6_K)
        IKLLM_I8_CASE(T_IQ4_XS)
        IKLLM_I8_CASE(T_IQ4_K)
#undef IKLLM_I8_CASE
        default:
            return false;
    }
}

}  // namespace ikllm::cuda
