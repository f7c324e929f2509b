// Integer view of the common weight types for the int8 matrix-vector kernel (mat_vec_int8.cu):
// for chunk `chunk` (8 values) of block `ib`, Int8Codes<TYPE>::codes8 gives the 8 weights as
// signed int8 codes packed in two words (byte i of the 8 is byte i & 3 of lo/hi) and a float
// scale and bias with
//     weight[i] = scale * code[i] + bias          (bias is 0 unless kHasBias)
// Scale and bias are constant over 32 values (16 where kScale16; the bias too where not
// kDirectMma), 32-aligned (16-aligned).
// equal to BlockDecoder<TYPE>::decode8 (same operands, same operations: host test
// cuda_int8_codes_host_test checks it for every chunk). A chunk's product with 8 activation
// codes q (scale xd) is then two dp4a plus, with a bias, two more for the sum of q:
//     xd * (scale * sum(code * q) + bias * sum(q))
// which replaces ~48 float operations per chunk of the decode-to-float kernel by ~10.
//
// The reference's CPU numerics (backends/cpu/kernels/kquant_unpack.h), which the CPU backend
// reproduces and the GPU follows where a type has this view:
//  * kSat types (IQ4_XS, IQ4_K, IQ5_K, IQ6_K, IQ4_KS, IQ5_KS, IQ4_KSS), calls of fewer than
//    32 tokens: levels are multiplied as unsigned bytes v = first-set level + 128 and each
//    pair sum saturates to int16 (x86 maddubs): sat8 gives v, the scale, and
//    icorr = shift - 128 with
//        weight . q = scale * (satdot(v, q) + icorr * sum(q)).
//  * kConv types (those, Q3_K, IQ2_K, IQ3_K, IQ2_KS, IQ3_KS, IQ2_KL), calls of 32 tokens or
//    more: every 256-weight block is re-encoded to int8 with one fp16 scale (conv8 gives the
//    exact integers P = isc * level; conv_encode_kernel in mat_mma_int8_kernel.cuh does the
//    rest), multiplied exactly. Q2_K the same from its float values (kConvFloat).
//  * kConvF16Scales types (Q4_K, Q5_K), calls of 32 tokens or more: the per-32 scale and bias
//    rounded to fp16 (F16ScaleCodes).
//  * kSymBatch types (Q8_0, Q4_0, IQ4_NL, Q5_0, Q6_0, MXFP4, the KT types), calls of 32 tokens or more: the exact per-32 sums
//    accumulated in the reference's float order with its offset of 127 (SymBatchCodes; CPU:
//    legacy_sym_accum.h, SymBatchAccum): per block a = fma(dw * da, sum((v + 127) q), a),
//    b = fma(dw, da * sum(q), b); the product is fma(-127, b, a).
//  * KT types: the scale of a 32-weight sub-block times 1.05 (IQ2_KT) or 1.01 (IQ3_KT)
//    (matmul_scale; CPU: trellis_kt.h), fp16-rounded from 32 tokens on (kBatchF16Scale) and then
//    accumulated like kSymBatch, as the reference's Q8_0_R8 repack (CPU: trellis_*.cpp).
//  * kConv32 types (Q6_K), calls of kConv32MinTokens (64) tokens or more: every 32 weights
//    re-encoded to int8 with one fp16 scale (conv32_encode_kernel; CPU: kquant_q6k_conv.h),
//    then accumulated like kSymBatch.
#pragma once
#include "device_branch.cuh"
#include "block_decode.cuh"

namespace ikllm::cuda {

namespace bd {

// Signed 4-byte dot product plus c (device: one dp4a instruction).
IKLLM_HD int dp4a(uint32_t a, uint32_t b, int c) {
#if IKLLM_DEVICE_BRANCH
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

// Bits 0..3 of b as bit 0 of bytes 0..3.
IKLLM_HD uint32_t bits_to_bytes4(uint32_t b) { return (b & 1u) | (b & 2u) << 7 | (b & 4u) << 14 | (b & 8u) << 21; }

// 4 bytes at p, any alignment.
IKLLM_HD uint32_t ld32_bytes(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// Four 16-entry table lookups at once: bytes of n (each 0..15) -> bytes of the int8 table.
IKLLM_HD uint32_t lut4(const Lut16& t, uint32_t n) {
#if IKLLM_DEVICE_BRANCH
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

// PTX prmt (default mode): byte i of the result is byte (s >> 4i) & 7 of {b:a} (selectors < 8).
IKLLM_HD uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t s) {
#if IKLLM_DEVICE_BRANCH
    return __byte_perm(a, b, s);
#else
    const uint64_t ba = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= (uint32_t)(uint8_t)(ba >> 8 * ((s >> 4 * i) & 7)) << 8 * i;
    return r;
#endif
}

// PTX dp2a.lo / dp2a.hi (.s32.s32): the two signed 16-bit halves of a times the signed bytes
// 0, 1 (lo) or 2, 3 (hi) of b, plus c.
template <bool Hi>
IKLLM_HD int dp2a(uint32_t a, uint32_t b, int c) {
#if IKLLM_DEVICE_BRANCH
    if constexpr (Hi) return __dp2a_hi((int)a, (int)b, c);
    else return __dp2a_lo((int)a, (int)b, c);
#else
    const int s = Hi ? 16 : 0;
    return c + (int)(int16_t)(uint16_t)a * (int)(int8_t)(uint8_t)(b >> s) +
           (int)(int16_t)(uint16_t)(a >> 16) * (int)(int8_t)(uint8_t)(b >> (s + 8));
#endif
}

// Sum over the 4 pairs (2i, 2i+1) of 8 unsigned bytes v (lo, hi) times 8 int8 codes x, each
// pair sum saturated to int16 (the reference's maddubs). v bytes are widened to 16 bits (byte 4
// of the permute source is 0), two per 2-way dot.
IKLLM_HD int sat_dot8(uint32_t lo, uint32_t hi, uint32_t xlo, uint32_t xhi) {
    auto pair = [](int p) { return p > 32767 ? 32767 : (p < -32768 ? -32768 : p); };
    return pair(dp2a<false>(byte_perm(lo, 0u, 0x4140), xlo, 0)) + pair(dp2a<true>(byte_perm(lo, 0u, 0x4342), xlo, 0)) +
           pair(dp2a<false>(byte_perm(hi, 0u, 0x4140), xhi, 0)) + pair(dp2a<true>(byte_perm(hi, 0u, 0x4342), xhi, 0));
}

// f -> the nearest fp16 value (round half to even), as a float.
IKLLM_HD float round_f16(float f) {
#if IKLLM_DEVICE_BRANCH
    return __half2float(__float2half_rn(f));
#else
    return f16_to_f32(f32_to_f16(f));
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

// The numerics flags of a view (header comment); a view without them is multiplied exactly.
struct Int8Plain {
    static constexpr bool kSat = false, kConv = false, kConvF16Scales = false, kSymBatch = false, kConv32 = false;
    static constexpr bool kSymAccum = false;  // the kernel accumulates in the SymBatchAccum order
    static constexpr bool kBatchF16Scale = false;  // block scale fp16-rounded in the batch form (MXFP4's power of two, KT)
    // The scale a product uses for codes8's scale (the KT types' reference matmul multiplies
    // theirs by a factor their dequantization does not have).
    IKLLM_HD static float matmul_scale(float s) { return s; }
    // scale * code + bias equals BlockDecoder::decode8 (IQ6_K: its matmul's integer levels do not).
    static constexpr bool kCodesDecode = true;
    // The tensor-core kernel multiplies these codes directly (false: a bias per 16 weights,
    // which its once-per-32 bias step does not have -- Q2_K, whose batches of 32 tokens or more
    // take the re-encoded form and smaller ones the fp16 tensor cores).
    static constexpr bool kDirectMma = true;
    // kConv from the float values (decode8) rather than exact integers: w = d sc q - dmin m,
    // dnew = max |w| kConvD0, codes RNE(w / dnew), block scale fp16(dnew) (Q2_K).
    static constexpr bool kConvFloat = false;
};

// Building blocks of views.
namespace i8 {

// Four 8-entry table lookups at once: bytes of n (each 0..7) -> bytes of the table {t1:t0}.
IKLLM_HD uint32_t lut8x4(uint32_t t0, uint32_t t1, uint32_t n) {
    const uint32_t u = n | (n >> 4);
    return bd::byte_perm(t0, t1, (u & 0xFFu) | ((u >> 8) & 0xFF00u));  // nibble i selects byte i
}

// codes8 of a view from its conv8: the scale d * isc, as decode8 forms it.
template <class V>
struct Scaled : Int8Plain {
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        int isc;
        float dw;
        V::conv8(row, ib, chunk, lo, hi, isc, dw);
        scale = dw * bd::i2f(isc);
        bias = 0.f;
    }
};

// conv8 / sat8 of a type with two value sets, the second = the first + V::kShift (the CPU's
// corr = set * kShift * sc, then -128 * sc of to_sat). V::parts gives the chunk's 8 level
// indices, integer scale, d and set; V::levels maps indices to the levels of a set.
template <class V>
struct TwoSets : Scaled<V> {
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        uint32_t n_lo, n_hi;
        bool second;
        V::parts(row, ib, chunk, n_lo, n_hi, isc, dw, second);
        V::levels(n_lo, n_hi, second, lo, hi);
    }
    // First-set level + 128 as unsigned bytes; the set's shift and the -128 go to icorr, so
    // icorr * sc is the CPU's corr of the 16-weight halves.
    IKLLM_HD static void sat8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                              int& icorr) {
        uint32_t n_lo, n_hi;
        int isc;
        float dw;
        bool second;
        V::parts(row, ib, chunk, n_lo, n_hi, isc, dw, second);
        scale = dw * bd::i2f(isc);
        V::levels(n_lo, n_hi, false, lo, hi);
        lo ^= 0x80808080u;
        hi ^= 0x80808080u;
        icorr = (second ? V::kShift : 0) - 128;
    }
};

// The IQ4_K level table (both IQ4_KS and IQ4_KSS): second set = first + 4.
struct Iq4kLevels {
    static constexpr int kShift = 4;
    IKLLM_HD static void levels(uint32_t n_lo, uint32_t n_hi, bool second, uint32_t& lo, uint32_t& hi) {
        constexpr bd::Lut16 l0 = bd::kIq4kLut0, l1 = bd::kIq4kLut1;
        const bd::Lut16 lut = bd::sel_lut16(second, l0, l1);
        lo = bd::lut4(lut, n_lo);
        hi = bd::lut4(lut, n_hi);
    }
};

// The IQ4_NL level table (IQ4_XS): one value set.
struct Iq4nlLevels {
    static constexpr int kShift = 0;
    IKLLM_HD static void levels(uint32_t n_lo, uint32_t n_hi, bool, uint32_t& lo, uint32_t& hi) {
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
        lo = bd::lut4(lut, n_lo);
        hi = bd::lut4(lut, n_hi);
    }
};

}  // namespace i8

template <>
struct Int8Codes<quant::T_Q8_0> : Int8Plain {
    using D = BlockDecoder<quant::T_Q8_0>;
    static constexpr bool kSymBatch = true;
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
struct Int8Codes<quant::T_Q4_0> : Int8Plain {
    using D = BlockDecoder<quant::T_Q4_0>;
    static constexpr bool kSymBatch = true;
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
struct Int8Codes<quant::T_IQ4_NL> : Int8Plain {
    using D = BlockDecoder<quant::T_IQ4_NL>;
    static constexpr bool kSymBatch = true;
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

// Q5_0 / Q6_0: 4 low bits as Q4_0, the high bits beside them; codes v - 16 / v - 32.
template <>
struct Int8Codes<quant::T_Q5_0> : Int8Plain {
    using D = BlockDecoder<quant::T_Q5_0>;
    static constexpr bool kSymBatch = true;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint32_t qh = bd::ld32<2>(b + 2) >> (8 * chunk);  // bit i: the 5th bit of value i
        const uint8_t* q = b + 6 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        lo = bd::sub_bytes(bd::nib4(bd::ld32<2>(q), sh) | bd::bits_to_bytes4(qh) << 4, 16);
        hi = bd::sub_bytes(bd::nib4(bd::ld32<2>(q + 4), sh) | bd::bits_to_bytes4(qh >> 4) << 4, 16);
        scale = bd::ldh(b);
        bias = 0.f;
    }
};

template <>
struct Int8Codes<quant::T_Q6_0> : Int8Plain {
    using D = BlockDecoder<quant::T_Q6_0>;
    static constexpr bool kSymBatch = true;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint8_t* q = b + 10 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1), shh = 4 * (chunk & 1) + 2 * (chunk >> 1);  // value i: byte i of qh
        lo = bd::sub_bytes(bd::nib4(bd::ld32<2>(q), sh) | ((bd::ld32<2>(b + 2) >> shh) & 0x03030303u) << 4, 32);
        hi = bd::sub_bytes(bd::nib4(bd::ld32<2>(q + 4), sh) | ((bd::ld32<2>(b + 6) >> shh) & 0x03030303u) << 4, 32);
        scale = bd::ldh(b);
        bias = 0.f;
    }
};

// Q4_1 / Q5_1: unsigned codes (0..15 / 0..31), scale d and bias m per 32 weights (weight = d q + m).
template <>
struct Int8Codes<quant::T_Q4_1> : Int8Plain {
    using D = BlockDecoder<quant::T_Q4_1>;
    static constexpr bool kHasBias = true;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint8_t* q = b + 4 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        lo = bd::nib4(bd::ld32<2>(q), sh);
        hi = bd::nib4(bd::ld32<2>(q + 4), sh);
        scale = bd::ldh(b);
        bias = bd::ldh(b + 2);
    }
};

template <>
struct Int8Codes<quant::T_Q5_1> : Int8Plain {
    using D = BlockDecoder<quant::T_Q5_1>;
    static constexpr bool kHasBias = true;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint32_t qh = bd::ld32<2>(b + 4) >> (8 * chunk);  // bit i: the 5th bit of value i
        const uint8_t* q = b + 8 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        lo = bd::nib4(bd::ld32<2>(q), sh) | bd::bits_to_bytes4(qh) << 4;
        hi = bd::nib4(bd::ld32<2>(q + 4), sh) | bd::bits_to_bytes4(qh >> 4) << 4;
        scale = bd::ldh(b);
        bias = bd::ldh(b + 2);
    }
};

// MXFP4: 17-byte blocks (byte loads), the e2m1 values doubled as int8 codes, scale 2^(e - 128).
template <>
struct Int8Codes<quant::T_MXFP4> : Int8Plain {
    using D = BlockDecoder<quant::T_MXFP4>;
    static constexpr bool kSymBatch = true;
    static constexpr bool kBatchF16Scale = true;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint32_t e = b[0];
        const uint8_t* q = b + 1 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        constexpr bd::Lut16 lut = bd::kMxfp4Lut;
        lo = bd::lut4(lut, bd::nib4(bd::ld32_bytes(q), sh));
        hi = bd::lut4(lut, bd::nib4(bd::ld32_bytes(q + 4), sh));
        scale = e >= 2 ? bd::u2f((e - 1) << 23) : bd::u2f(0x00200000u << e);
        bias = 0.f;
    }
};

template <>
struct Int8Codes<quant::T_Q4_K> : Int8Plain {
    using D = BlockDecoder<quant::T_Q4_K>;
    static constexpr bool kConvF16Scales = true;
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
struct Int8Codes<quant::T_Q5_K> : Int8Plain {
    using D = BlockDecoder<quant::T_Q5_K>;
    static constexpr bool kConvF16Scales = true;
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
struct Int8Codes<quant::T_Q6_K> : i8::Scaled<Int8Codes<quant::T_Q6_K>> {
    using D = BlockDecoder<quant::T_Q6_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kConv32 = true;
    static constexpr int64_t kConv32MinTokens = 64;
    // Codes q - 32, the integer scale of their 16 weights and d.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const int cc = chunk >> 4, t = (chunk >> 2) & 3, l = 8 * (chunk & 3);
        const uint8_t* ql = b + 64 * cc + 32 * (t & 1) + l;
        const uint8_t* qh = b + 128 + 32 * cc + l;
        const int sh = 4 * (t >> 1), hs = 2 * t;
        lo = bd::sub_bytes(bd::nib4(bd::ld32<2>(ql), sh) | ((bd::ld32<2>(qh) >> hs) & 0x03030303u) << 4, 32);
        hi = bd::sub_bytes(bd::nib4(bd::ld32<2>(ql + 4), sh) | ((bd::ld32<2>(qh + 4) >> hs) & 0x03030303u) << 4, 32);
        isc = (int8_t)b[192 + (chunk >> 1)];
        dw = bd::ldh(b + 208);
    }
};

template <>
struct Int8Codes<quant::T_IQ4_XS> : i8::TwoSets<Int8Codes<quant::T_IQ4_XS>>, i8::Iq4nlLevels {
    using D = BlockDecoder<quant::T_IQ4_XS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // The chunk's 8 level indices (nibbles, bytes of n_lo / n_hi), integer scale and d.
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* b = D::block(row, ib);
        const int j = chunk >> 2;
        const uint32_t sh16 = bd::ld16(b + 2);
        isc = (int)(((b[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | ((sh16 >> (2 * j)) & 3) << 4) - 32;
        dw = bd::ldh(b);
        second = false;
        const uint8_t* q = b + 8 + bd::p4n_off(chunk);
        const int sh = bd::p4n_shift(chunk);
        n_lo = bd::nib4(bd::ld32<4>(q), sh);
        n_hi = bd::nib4(bd::ld32<4>(q + 4), sh);
    }
};

template <>
struct Int8Codes<quant::T_IQ4_K> : i8::TwoSets<Int8Codes<quant::T_IQ4_K>>, i8::Iq4kLevels {
    using D = BlockDecoder<quant::T_IQ4_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // The chunk's 8 level indices (nibbles), integer scale, d, and whether its 16 weights take
    // the second value set (= the first + 4).
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* b = D::block(row, ib);
        const int s = chunk >> 1;
        second = (bd::ld16(b + 2) >> s) & 1;
        isc = bd::k6_scale(b, s);
        dw = bd::ldh(b);
        const uint8_t* q = b + 16 + bd::p4n_off(chunk);
        const int sh = bd::p4n_shift(chunk);
        n_lo = bd::nib4(bd::ld32<4>(q), sh);
        n_hi = bd::nib4(bd::ld32<4>(q + 4), sh);
    }
};

// Q4_K / Q5_K (and the KT types) as the reference multiplies them in calls of 32 tokens or
// more: the per-32 scale (times the KT factor) and bias rounded to fp16.
template <class C>
struct F16ScaleCodes : C {
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        C::codes8(row, ib, chunk, lo, hi, scale, bias);
        scale = bd::round_f16(C::matmul_scale(scale));
        bias = bd::round_f16(bias);
    }
    IKLLM_HD static float matmul_scale(float s) { return s; }
};

template <>
struct Int8Codes<quant::T_Q3_K> : i8::Scaled<Int8Codes<quant::T_Q3_K>> {
    using D = BlockDecoder<quant::T_Q3_K>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = true;
    static constexpr bool kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // Codes q - (high bit ? 0 : 4) in -4..3, the 6-bit scale of their 16 weights and d.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const uint8_t* S = b + 96;
        const int s = chunk >> 1;
        const int low4 = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4);
        isc = (low4 | ((S[8 + (s & 3)] >> (2 * (s >> 2))) & 3) << 4) - 32;
        dw = bd::ldh(b + 108);
        const uint8_t* q = b + 32 + bd::p2_off(chunk);
        const uint8_t* h = b + bd::hb_off(chunk);
        const int sh = bd::p2_shift(chunk), hs = bd::hb_shift(chunk);
        lo = bd::sub_bytes(((bd::ld32<2>(q) >> sh) & 0x03030303u) | ((bd::ld32<2>(h) >> hs) & 0x01010101u) << 2, 4);
        hi = bd::sub_bytes(((bd::ld32<2>(q + 4) >> sh) & 0x03030303u) | ((bd::ld32<2>(h + 4) >> hs) & 0x01010101u) << 2, 4);
    }
};

// Q2_K: 2-bit codes, per 16 weights the scale d * sc and the bias -dmin * m (the CPU's
// small-batch form sums the same integers per 16 and combines them in float: the two agree to
// float rounding). Its batch form (32 tokens or more) re-encodes the float values per 256
// (kConvFloat); batches of 9-31 tokens keep the fp16 tensor cores (no direct mma form).
template <>
struct Int8Codes<quant::T_Q2_K> : Int8Plain {
    using D = BlockDecoder<quant::T_Q2_K>;
    static constexpr bool kHasBias = true;
    static constexpr bool kScale16 = true;
    static constexpr bool kDirectMma = false;
    static constexpr bool kConv = true, kConvFloat = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = D::block(row, ib);
        const uint32_t sc = b[chunk >> 1];
        scale = bd::ldh(b + 80) * bd::i2f(sc & 15);
        bias = -(bd::ldh(b + 82) * bd::i2f(sc >> 4));
        const uint8_t* q = b + 16 + bd::p2_off(chunk);
        const int sh = bd::p2_shift(chunk);
        lo = (bd::ld32<4>(q) >> sh) & 0x03030303u;
        hi = (bd::ld32<4>(q + 4) >> sh) & 0x03030303u;
    }
};

// A kSymBatch type as the reference multiplies it in calls of 32 tokens or more.
template <class C>
struct SymBatchCodes : C {
    static constexpr bool kSymAccum = true;
    // (the reference's batch form rounds a power-of-two block scale to fp16, sym_batch_scale,
    // and a KT sub-block scale (with its factor), the Q8_0_R8 repack: trellis_kt.h)
    IKLLM_HD static float matmul_scale(float s) {
        if constexpr (C::kBatchF16Scale) return bd::round_f16(C::matmul_scale(s));
        else return C::matmul_scale(s);
    }
};

// Re-encoded rows: per E weights a float scale (an fp16 value, or d itself) and E int8 codes,
// E + 4 bytes; rows 4-byte aligned. E = 256: a kConv type (conv_encode_kernel); E = 32: a
// kConv32 type (conv32_encode_kernel), accumulated like SymBatchCodes.
template <int E, bool SymAccum>
struct ReencodedCodes : Int8Plain {
    struct D {
        static constexpr int kBlockElems = E, kBlockBytes = E + 4;
    };
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kSymAccum = SymAccum;
    IKLLM_HD static void codes8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, float& scale,
                                float& bias) {
        const uint8_t* b = row + ib * D::kBlockBytes;
        const uint32_t sb = bd::ld32<4>(b);
        memcpy(&scale, &sb, 4);
        lo = bd::ld32<4>(b + 4 + 8 * chunk);
        hi = bd::ld32<4>(b + 8 + 8 * chunk);
        bias = 0.f;
    }
};
using ConvQ8Codes = ReencodedCodes<256, false>;
using ConvQ8x32Codes = ReencodedCodes<32, true>;

}  // namespace ikllm::cuda

// More views, one header per family (each defines its IKLLM_I8_*_TYPES(X) list).
#include "int8_codes_iqk.cuh"
#include "int8_codes_ks.cuh"
#include "int8_codes_kt.cuh"

namespace ikllm::cuda {

#define IKLLM_I8_BASE_TYPES(X) X(T_Q8_0) X(T_Q4_0) X(T_IQ4_NL) X(T_Q5_0) X(T_Q6_0) X(T_MXFP4) X(T_Q4_1) X(T_Q5_1) X(T_Q4_K) X(T_Q5_K) X(T_Q6_K) X(T_Q3_K) X(T_Q2_K) X(T_IQ4_XS) X(T_IQ4_K)
#define IKLLM_I8_ALL_TYPES(X) IKLLM_I8_BASE_TYPES(X) IKLLM_I8_IQK_TYPES(X) IKLLM_I8_KS_TYPES(X) IKLLM_I8_KT_TYPES(X)

// The types with an integer view (tests check that each of them is exercised).
#define IKLLM_I8_ID(T) quant::T,
inline constexpr uint32_t kInt8ViewTypes[] = {IKLLM_I8_ALL_TYPES(IKLLM_I8_ID)};
#undef IKLLM_I8_ID

// Calls f(Int8Codes<T>{}) for the types with a view; false for every other type.
template <class F>
bool dispatch_int8_type(uint32_t type, F&& f) {
    switch (type) {
#define IKLLM_I8_CASE(T)              \
    case quant::T:                    \
        f(Int8Codes<quant::T>{});     \
        return true;
        IKLLM_I8_ALL_TYPES(IKLLM_I8_CASE)
#undef IKLLM_I8_CASE
        default:
            return false;
    }
}

}  // namespace ikllm::cuda
