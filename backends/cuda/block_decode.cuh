// Device-side (and host-side, for tests) block decoders of the weight types the CUDA matrix
// kernels and get_rows read (docs: quant-formats.md §4-§10). One BlockDecoder<TYPE> per
// supported GGUF type id; decode8 writes 8 consecutive values of one block, bit-identical to
// the CPU registry's dequant (quant::find_type(id)->dequant): same operands, same float
// operations in the same order (device code uses the _rn intrinsics where a multiply is
// followed by an add, so nothing is contracted into an FMA).
//
// Alignment: the row pointer must be 2-byte aligned for every quantized type whose row
// length (row_meta_bytes + n * block_bytes) is only even, 4-byte aligned for types marked
// kAlign == 4 below, and 16-byte aligned for F32/F16/BF16 (decode8 then uses vector loads).
// Tensor bases from cudaMalloc / GGUF data (32-byte aligned) satisfy all of these.
//
// Tables: small int8 level tables (16 entries per half) are selected in registers with
// byte permutes; larger ones (IQ5 levels, IQ6_K float levels) live in per-translation-unit
// `static __device__` arrays (internal linkage: no relocatable device code needed, no
// duplicate symbols). Host code reads the engine's own constexpr tables (quant_tables.h).
#pragma once
#include "device_branch.cuh"
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "core/fp16.h"
#include "quant/quant_tables.h"
#include "quant/type_traits.h"

namespace ikllm::cuda {

#if defined(__CUDACC__)
#define IKLLM_HD __host__ __device__ __forceinline__
#else
#define IKLLM_HD inline
#endif
#if defined(__CUDA_ARCH__)
#define IKLLM_UNROLL _Pragma("unroll")
#else
#define IKLLM_UNROLL
#endif

namespace bd {

// Small integer (|v| < 2^22) to float, exactly: the integer added to the mantissa of 1.5 * 2^23,
// then that constant subtracted (two full-rate operations instead of the quarter-rate I2F,
// which made decoding, not memory, the limit of the matrix-vector kernels). _rn: never fused.
IKLLM_HD float i2f(int v) {
#if IKLLM_DEVICE_BRANCH
    return __fsub_rn(__int_as_float(0x4B400000 + v), 12582912.0f);
#else
    return (float)v;
#endif
}

// ---- loads (little-endian; p is 2-byte aligned unless said otherwise) -----------------------
IKLLM_HD uint32_t ld8(const uint8_t* p) { return p[0]; }
IKLLM_HD uint32_t ld16(const uint8_t* p) {
#if IKLLM_DEVICE_BRANCH
    return *reinterpret_cast<const uint16_t*>(p);
#else
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
#endif
}
// 32 bits at p; A = guaranteed alignment of p (2 or 4).
template <int A>
IKLLM_HD uint32_t ld32(const uint8_t* p) {
#if IKLLM_DEVICE_BRANCH
    if constexpr (A >= 4) return *reinterpret_cast<const uint32_t*>(p);
    else return ld16(p) | ld16(p + 2) << 16;
#else
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
#endif
}
// 8 bytes at p as two words (byte i of the 8 is byte (i & 3) of w[i >> 2]).
template <int A>
struct B8 {
    uint32_t lo, hi;
    IKLLM_HD B8(const uint8_t* p) : lo(ld32<A>(p)), hi(ld32<A>(p + 4)) {}
    IKLLM_HD uint32_t operator[](int i) const { return ((i < 4 ? lo : hi) >> (8 * (i & 3))) & 0xffu; }
};

IKLLM_HD float u2f(uint32_t u) {
#if IKLLM_DEVICE_BRANCH
    return __uint_as_float(u);
#else
    return bits_to_f32(u);
#endif
}
IKLLM_HD uint32_t f2u(float f) {
#if IKLLM_DEVICE_BRANCH
    return __float_as_uint(f);
#else
    return f32_to_bits(f);
#endif
}
IKLLM_HD float h2f(uint32_t h) {
#if IKLLM_DEVICE_BRANCH
    return __half2float(__ushort_as_half((unsigned short)h));
#else
    return f16_to_f32((uint16_t)h);
#endif
}
IKLLM_HD float ldh(const uint8_t* p) { return h2f(ld16(p)); }
template <int A>
IKLLM_HD float ldf(const uint8_t* p) { return u2f(ld32<A>(p)); }

// Uncontracted float arithmetic (device: explicit round-to-nearest ops, never fused).
IKLLM_HD float fmul(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
IKLLM_HD float fadd(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
IKLLM_HD float fsub(float a, float b) {
#if IKLLM_DEVICE_BRANCH
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

// Byte `sel` (0..7) of the 8 bytes hi:lo, sign-extended from int8.
IKLLM_HD int perm_s8(uint32_t lo, uint32_t hi, uint32_t sel) {
#if IKLLM_DEVICE_BRANCH
    return (int)(int8_t)(uint8_t)__byte_perm(lo, hi, sel & 7u);
#else
    return (int)(int8_t)(uint8_t)(((sel & 4u) ? hi : lo) >> (8 * (sel & 3u)));
#endif
}

// ---- register-resident int8 tables -----------------------------------------------------------
constexpr uint32_t pack4(const int8_t* t) {
    return (uint32_t)(uint8_t)t[0] | (uint32_t)(uint8_t)t[1] << 8 | (uint32_t)(uint8_t)t[2] << 16 |
           (uint32_t)(uint8_t)t[3] << 24;
}
// A 16-entry int8 table as 4 words.
struct Lut16 {
    uint32_t w0, w1, w2, w3;
    IKLLM_HD int operator()(uint32_t q) const {
        const uint32_t lo = (q & 8u) ? w2 : w0, hi = (q & 8u) ? w3 : w1;
        return perm_s8(lo, hi, q);
    }
};
constexpr Lut16 make_lut16(const int8_t* t) { return {pack4(t), pack4(t + 4), pack4(t + 8), pack4(t + 12)}; }
IKLLM_HD Lut16 sel_lut16(bool second, const Lut16& a, const Lut16& b) {
    return {second ? b.w0 : a.w0, second ? b.w1 : a.w1, second ? b.w2 : a.w2, second ? b.w3 : a.w3};
}

inline constexpr Lut16 kIq4nlLut = make_lut16(quant::tables::kIq4nl);
inline constexpr Lut16 kIq4kLut0 = make_lut16(quant::tables::kIq4k);
inline constexpr Lut16 kIq4kLut1 = make_lut16(quant::tables::kIq4k + 16);
inline constexpr uint32_t kIq2nlW0 = pack4(quant::tables::kIq2nl), kIq2nlW1 = pack4(quant::tables::kIq2nl + 4);
inline constexpr uint32_t kIq3nlW0 = pack4(quant::tables::kIq3nl), kIq3nlW1 = pack4(quant::tables::kIq3nl + 4),
                           kIq3nlW2 = pack4(quant::tables::kIq3nl + 8), kIq3nlW3 = pack4(quant::tables::kIq3nl + 12);
inline constexpr int8_t kMxfp4Vals[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
inline constexpr Lut16 kMxfp4Lut = make_lut16(kMxfp4Vals);

// ---- memory tables (device copies of the engine's constexpr tables) --------------------------
struct I8x64 { int8_t v[64]; };
struct U32x64 { uint32_t v[64]; };
constexpr I8x64 make_iq5() {
    I8x64 r{};
    for (int i = 0; i < 64; ++i) r.v[i] = quant::tables::kIq5nl[i];
    return r;
}
constexpr U32x64 make_iq6() {
    U32x64 r{};
    for (int i = 0; i < 64; ++i) r.v[i] = quant::tables::kIq6kF32Bits[i];
    return r;
}
inline constexpr I8x64 kIq5Host = make_iq5();
inline constexpr U32x64 kIq6Host = make_iq6();
#if defined(__CUDACC__) || defined(IKLLM_EMU_DEVICE_BRANCHES)  // (device tables)
static __device__ const I8x64 kIq5Dev = make_iq5();
static __device__ const U32x64 kIq6Dev = make_iq6();
#endif
struct U16x32 { uint16_t v[32]; };
constexpr U16x32 make_iq2kl() {
    U16x32 r{};
    for (int i = 0; i < 32; ++i) r.v[i] = quant::tables::kIq2kl[i];
    return r;
}
inline constexpr U16x32 kIq2klHost = make_iq2kl();
#if defined(__CUDACC__) || defined(IKLLM_EMU_DEVICE_BRANCHES)  // (device tables)
static __device__ const U16x32 kIq2klDev = make_iq2kl();
#endif
// IQ2_KL pair codebook entry: low byte = first weight, high byte = second (int8 each).
IKLLM_HD uint32_t iq2kl(uint32_t i) {
#if IKLLM_DEVICE_BRANCH
    return kIq2klDev.v[i];
#else
    return kIq2klHost.v[i];
#endif
}
IKLLM_HD int iq5nl(uint32_t i) {
#if IKLLM_DEVICE_BRANCH
    return kIq5Dev.v[i];
#else
    return kIq5Host.v[i];
#endif
}
IKLLM_HD float iq6k_level(uint32_t i) {
#if IKLLM_DEVICE_BRANCH
    return __uint_as_float(kIq6Dev.v[i]);
#else
    return bits_to_f32(kIq6Host.v[i]);
#endif
}

// ---- trellis generator (quant-formats.md §10.1; src/quant/trellis_gen.h) --------------------
constexpr uint32_t kKtMult = 0xCBAC1FEDu, kKtOffset = 4096u, kKtOffsetOdd = 36864u, kKtMask = 0x3F3F3F3Fu;
IKLLM_HD int kt_value(uint32_t x) {
#if IKLLM_DEVICE_BRANCH
    return __dp4a((int)(x & kKtMask), 0x01010101, -126);  // bytes <= 63: signed == unsigned
#else
    return (int)(((x & kKtMask) * 0x01010101u) >> 24) - 126;
#endif
}

// Shared helpers of the 256-weight layouts, for chunk c (0..31) of a block, value i (0..7).
// P2 (2-bit planes): byte offset and shift of chunk c.
IKLLM_HD int p2_off(int c) { return 32 * (c >> 4) + 8 * (c & 3); }
IKLLM_HD int p2_shift(int c) { return 2 * ((c >> 2) & 3); }
// P4K: byte offset and shift.
IKLLM_HD int p4k_off(int c) { return 32 * (c >> 3) + 8 * (c & 3); }
IKLLM_HD int p4k_shift(int c) { return 4 * ((c >> 2) & 1); }
// P4N (NL4 per 32): byte offset and shift.
IKLLM_HD int p4n_off(int c) { return 16 * (c >> 2) + 8 * (c & 1); }
IKLLM_HD int p4n_shift(int c) { return 4 * ((c >> 1) & 1); }
// HB (high-bit plane): byte offset and shift.
IKLLM_HD int hb_off(int c) { return 8 * (c & 3); }
IKLLM_HD int hb_shift(int c) { return c >> 2; }

}  // namespace bd

template <uint32_t TYPE>
struct BlockDecoder;  // unsupported types have no specialisation

// Common base: geometry and block address.
template <int E, int B, int M, int A>
struct DecoderBase {
    static constexpr int kBlockElems = E;
    static constexpr int kBlockBytes = B;
    static constexpr int kRowMetaBytes = M;
    static constexpr int kAlign = A;  // alignment decode8 relies on (see the file comment)
    IKLLM_HD static const uint8_t* block(const uint8_t* row, int64_t ib) { return row + M + ib * (int64_t)B; }
};

// ---- float types (32 values per "block") ------------------------------------------------------
template <>
struct BlockDecoder<quant::T_F32> : DecoderBase<32, 128, 0, 16> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* p = block(row, ib) + 32 * chunk;
#if IKLLM_DEVICE_BRANCH
        const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
        out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
        out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
#else
        std::memcpy(out, p, 32);
#endif
    }
};

template <>
struct BlockDecoder<quant::T_F16> : DecoderBase<32, 64, 0, 16> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* p = block(row, ib) + 16 * chunk;
#if IKLLM_DEVICE_BRANCH
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
IKLLM_UNROLL
        for (int k = 0; k < 4; ++k) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[k]));
            out[2 * k] = f.x;
            out[2 * k + 1] = f.y;
        }
#else
        for (int i = 0; i < 8; ++i) out[i] = bd::ldh(p + 2 * i);
#endif
    }
};

template <>
struct BlockDecoder<quant::T_BF16> : DecoderBase<32, 64, 0, 16> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* p = block(row, ib) + 16 * chunk;
#if IKLLM_DEVICE_BRANCH
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
IKLLM_UNROLL
        for (int k = 0; k < 4; ++k) {
            out[2 * k] = __uint_as_float(w[k] << 16);
            out[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
        }
#else
        for (int i = 0; i < 8; ++i) out[i] = bd::u2f(bd::ld16(p + 2 * i) << 16);
#endif
    }
};

// ---- 32-weight legacy blocks (§5) -------------------------------------------------------------
// Nibble layout NL4: values [0,16) are low nibbles of qs[0..16), [16,32) high nibbles.
// Chunk c reads qs[8*(c&1) .. +8) shifted by 4*(c>>1).

template <>
struct BlockDecoder<quant::T_Q4_0> : DecoderBase<32, 18, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const bd::B8<2> q(b + 2 + 8 * (chunk & 1));
        const int sh = 4 * (chunk >> 1);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = bd::i2f(((int)((q[i] >> sh) & 15) - 8)) * d;
    }
};

template <>
struct BlockDecoder<quant::T_Q4_1> : DecoderBase<32, 20, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b), m = bd::ldh(b + 2);
        const bd::B8<2> q(b + 4 + 8 * (chunk & 1));
        const int sh = 4 * (chunk >> 1);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = bd::fadd(bd::fmul(bd::i2f(((q[i] >> sh) & 15)), d), m);
    }
};

template <>
struct BlockDecoder<quant::T_Q5_0> : DecoderBase<32, 22, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const uint32_t qh = bd::ld32<2>(b + 2) >> (8 * chunk);
        const bd::B8<2> q(b + 6 + 8 * (chunk & 1));
        const int sh = 4 * (chunk >> 1);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const int v = (int)(((q[i] >> sh) & 15) | ((qh >> i) & 1) << 4);
            out[i] = bd::i2f((v - 16)) * d;
        }
    }
};

template <>
struct BlockDecoder<quant::T_Q5_1> : DecoderBase<32, 24, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b), m = bd::ldh(b + 2);
        const uint32_t qh = bd::ld32<2>(b + 4) >> (8 * chunk);
        const bd::B8<2> q(b + 8 + 8 * (chunk & 1));
        const int sh = 4 * (chunk >> 1);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 15) | ((qh >> i) & 1) << 4;
            out[i] = bd::fadd(bd::fmul(bd::i2f(v), d), m);
        }
    }
};

template <>
struct BlockDecoder<quant::T_Q6_0> : DecoderBase<32, 26, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const bd::B8<2> qh(b + 2);  // value w: (qh[w & 7] >> (4*((w>>3)&1) + 2*(w>>4))) & 3
        const bd::B8<2> q(b + 10 + 8 * (chunk & 1));
        const int sh = 4 * (chunk >> 1), shh = 4 * (chunk & 1) + 2 * (chunk >> 1);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const int v = (int)(((q[i] >> sh) & 15) | ((qh[i] >> shh) & 3) << 4);
            out[i] = bd::i2f((v - 32)) * d;
        }
    }
};

template <>
struct BlockDecoder<quant::T_Q8_0> : DecoderBase<32, 34, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const bd::B8<2> q(b + 2 + 8 * chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = bd::i2f((int8_t)(uint8_t)q[i]) * d;
    }
};

template <>
struct BlockDecoder<quant::T_IQ4_NL> : DecoderBase<32, 18, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const bd::B8<2> q(b + 2 + 8 * (chunk & 1));
        const int sh = 4 * (chunk >> 1);
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = d * bd::i2f(lut((q[i] >> sh) & 15));
    }
};

template <>
struct BlockDecoder<quant::T_MXFP4> : DecoderBase<32, 17, 0, 1> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);  // 17-byte blocks: byte loads only
        const uint32_t e = b[0];
        const float d = e >= 2 ? bd::u2f((e - 1) << 23) : bd::u2f(0x00200000u << e);
        const uint8_t* qs = b + 1 + 8 * (chunk & 1);
        const int sh = 4 * (chunk >> 1);
        constexpr bd::Lut16 lut = bd::kMxfp4Lut;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = d * bd::i2f(lut((qs[i] >> sh) & 15));
    }
};

template <>
struct BlockDecoder<quant::T_Q1_0_G128> : DecoderBase<128, 18, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const uint32_t bits = b[2 + chunk];
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = ((bits >> i) & 1) ? d : -d;
    }
};

// ---- K-quants (§6) ----------------------------------------------------------------------------

template <>
struct BlockDecoder<quant::T_Q2_K> : DecoderBase<256, 84, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b + 80), dmin = bd::ldh(b + 82);
        const uint32_t sc = b[chunk >> 1];
        const float dl = d * bd::i2f((sc & 15));
        const float ml = dmin * bd::i2f((sc >> 4));
        const bd::B8<4> q(b + 16 + bd::p2_off(chunk));
        const int sh = bd::p2_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = bd::fsub(bd::fmul(dl, bd::i2f(((q[i] >> sh) & 3))), ml);
    }
};

template <>
struct BlockDecoder<quant::T_Q3_K> : DecoderBase<256, 110, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b + 108);
        const uint8_t* S = b + 96;
        const int s = chunk >> 1;
        const int low4 = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4);
        const int high2 = (S[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
        const float dl = d * bd::i2f(((low4 | high2 << 4) - 32));
        const bd::B8<2> q(b + 32 + bd::p2_off(chunk));
        const bd::B8<2> h(b + bd::hb_off(chunk));
        const int sh = bd::p2_shift(chunk), hs = bd::hb_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const int v = (int)((q[i] >> sh) & 3) - (((h[i] >> hs) & 1) ? 0 : 4);
            out[i] = dl * bd::i2f(v);
        }
    }
};

namespace bd {
// Q4_K / Q5_K 6-bit (scale, min) pair j of the 12-byte pack S.
IKLLM_HD void kscale(const uint8_t* S, int j, int& sc, int& m) {
    if (j < 4) {
        sc = S[j] & 63;
        m = S[j + 4] & 63;
    } else {
        sc = (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4);
        m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4);
    }
}
}  // namespace bd

template <>
struct BlockDecoder<quant::T_Q4_K> : DecoderBase<256, 144, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b), dmin = bd::ldh(b + 2);
        int sc, m;
        bd::kscale(b + 4, chunk >> 2, sc, m);
        const float dl = d * bd::i2f(sc);
        const float ml = dmin * bd::i2f(m);
        const bd::B8<4> q(b + 16 + bd::p4k_off(chunk));
        const int sh = bd::p4k_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = bd::fsub(bd::fmul(dl, bd::i2f(((q[i] >> sh) & 15))), ml);
    }
};

template <>
struct BlockDecoder<quant::T_Q5_K> : DecoderBase<256, 176, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b), dmin = bd::ldh(b + 2);
        int sc, m;
        bd::kscale(b + 4, chunk >> 2, sc, m);
        const float dl = d * bd::i2f(sc);
        const float ml = dmin * bd::i2f(m);
        const bd::B8<4> q(b + 48 + bd::p4k_off(chunk));
        const bd::B8<4> h(b + 16 + bd::hb_off(chunk));
        const int sh = bd::p4k_shift(chunk), hs = bd::hb_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 15) | ((h[i] >> hs) & 1) << 4;
            out[i] = bd::fsub(bd::fmul(dl, bd::i2f(v)), ml);
        }
    }
};

template <>
struct BlockDecoder<quant::T_Q6_K> : DecoderBase<256, 210, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b + 208);
        const int cc = chunk >> 4, t = (chunk >> 2) & 3, l = 8 * (chunk & 3);
        const bd::B8<2> ql(b + 64 * cc + 32 * (t & 1) + l);
        const bd::B8<2> qh(b + 128 + 32 * cc + l);
        const int sh = 4 * (t >> 1), hs = 2 * t;
        const float dl = d * bd::i2f((int8_t)b[192 + (chunk >> 1)]);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const int v = (int)(((ql[i] >> sh) & 15) | ((qh[i] >> hs) & 3) << 4) - 32;
            out[i] = dl * bd::i2f(v);
        }
    }
};

// ---- IQ4_XS and the ik K family (§7) ---------------------------------------------------------

template <>
struct BlockDecoder<quant::T_IQ4_XS> : DecoderBase<256, 136, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const int j = chunk >> 2;
        const uint32_t sh16 = bd::ld16(b + 2);
        const int ls = (int)(((b[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | ((sh16 >> (2 * j)) & 3) << 4);
        const float dl = d * bd::i2f((ls - 32));
        const bd::B8<4> q(b + 8 + bd::p4n_off(chunk));
        const int sh = bd::p4n_shift(chunk);
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = dl * bd::i2f(lut((q[i] >> sh) & 15));
    }
};

template <>
struct BlockDecoder<quant::T_IQ2_K> : DecoderBase<256, 76, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const int s = chunk >> 1;
        const uint32_t extra = bd::ld16(b + 2);
        const float dl = d * bd::i2f(((int)((b[4 + (s >> 1)] >> (4 * (s & 1))) & 15) - 8));
        const uint32_t tw = ((extra >> s) & 1) ? bd::kIq2nlW1 : bd::kIq2nlW0;
        const bd::B8<4> q(b + 12 + bd::p2_off(chunk));
        const int sh = bd::p2_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = dl * bd::i2f(bd::perm_s8(tw, tw, (q[i] >> sh) & 3));
    }
};

template <>
struct BlockDecoder<quant::T_IQ3_K> : DecoderBase<256, 110, 0, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const int s = chunk >> 1;
        const uint32_t extra = bd::ld16(b + 2), sgn = bd::ld16(b + 4);
        const int mag = 2 * (int)((b[6 + (s >> 1)] >> (4 * (s & 1))) & 15) + 1;
        const float dl = d * bd::i2f((((sgn >> s) & 1) ? -mag : mag));
        const bool hi = (extra >> s) & 1;
        const uint32_t t0 = hi ? bd::kIq3nlW2 : bd::kIq3nlW0, t1 = hi ? bd::kIq3nlW3 : bd::kIq3nlW1;
        const bd::B8<2> q(b + 14 + bd::p2_off(chunk));
        const bd::B8<2> h(b + 78 + bd::hb_off(chunk));
        const int sh = bd::p2_shift(chunk), hs = bd::hb_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 3) | ((h[i] >> hs) & 1) << 2;
            out[i] = dl * bd::i2f(bd::perm_s8(t0, t1, v));
        }
    }
};

namespace bd {
// IQ4_K / IQ5_K signed 6-bit scale of 16-weight sub-block s (sh at b+4, sl at b+8).
IKLLM_HD int k6_scale(const uint8_t* b, int s) {
    return (int)(((b[8 + (s >> 1)] >> (4 * (s & 1))) & 15) | ((b[4 + (s >> 2)] >> (2 * (s & 3))) & 3) << 4) - 32;
}
}  // namespace bd

template <>
struct BlockDecoder<quant::T_IQ4_K> : DecoderBase<256, 144, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const int s = chunk >> 1;
        const uint32_t extra = bd::ld16(b + 2);
        const float dl = d * bd::i2f(bd::k6_scale(b, s));
        constexpr bd::Lut16 l0 = bd::kIq4kLut0, l1 = bd::kIq4kLut1;
        const bd::Lut16 lut = bd::sel_lut16((extra >> s) & 1, l0, l1);
        const bd::B8<4> q(b + 16 + bd::p4n_off(chunk));
        const int sh = bd::p4n_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = dl * bd::i2f(lut((q[i] >> sh) & 15));
    }
};

template <>
struct BlockDecoder<quant::T_IQ5_K> : DecoderBase<256, 176, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const int s = chunk >> 1;
        const uint32_t extra = bd::ld16(b + 2);
        const float dl = d * bd::i2f(bd::k6_scale(b, s));
        const uint32_t base = 32 * ((extra >> s) & 1);
        const bd::B8<4> q(b + 16 + bd::p4k_off(chunk));
        const bd::B8<4> h(b + 144 + bd::hb_off(chunk));
        const int sh = bd::p4k_shift(chunk), hs = bd::hb_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 15) | ((h[i] >> hs) & 1) << 4;
            out[i] = dl * bd::i2f(bd::iq5nl(base + v));
        }
    }
};

template <>
struct BlockDecoder<quant::T_IQ6_K> : DecoderBase<256, 212, 0, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const uint8_t* b = block(row, ib);
        const float d = bd::ldh(b);
        const int s = chunk >> 1;
        const uint32_t extra = bd::ld16(b + 2);
        const float dl = d * bd::i2f((int8_t)b[4 + s]);
        const float add = ((extra >> s) & 1) ? 1.0f : 0.0f;
        const int cc = chunk >> 3, hbit = (chunk >> 2) & 1, l = 8 * (chunk & 3);
        const bd::B8<4> q(b + 20 + 32 * cc + l);
        const bd::B8<4> h(b + 148 + 32 * (cc >> 1) + l);
        const int sh = 4 * hbit, hs = 4 * (cc & 1) + 2 * hbit;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 15) | ((h[i] >> hs) & 3) << 4;
            out[i] = dl * bd::fadd(bd::iq6k_level(v), add);
        }
    }
};

// ---- ik KS family (§8): per-row scale at the row start ---------------------------------------

template <>
struct BlockDecoder<quant::T_IQ2_KS> : DecoderBase<256, 70, 2, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const float d = bd::ldh(row);
        const uint8_t* b = block(row, ib);
        const int j = chunk >> 2;
        const uint32_t extra = bd::ld16(b);
        const int ls = (int)(((b[2 + (j >> 1)] >> (4 * (j & 1))) & 15) | ((extra >> (8 + j)) & 1) << 4) - 16;
        const float dl = d * bd::i2f(ls);
        const uint32_t tw = ((extra >> j) & 1) ? bd::kIq2nlW1 : bd::kIq2nlW0;
        const bd::B8<2> q(b + 6 + bd::p2_off(chunk));
        const int sh = bd::p2_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = dl * bd::i2f(bd::perm_s8(tw, tw, (q[i] >> sh) & 3));
    }
};

template <>
struct BlockDecoder<quant::T_IQ3_KS> : DecoderBase<256, 102, 2, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const float d = bd::ldh(row);
        const uint8_t* b = block(row, ib);
        const int j = chunk >> 2;
        const uint32_t extra = bd::ld16(b);
        const int ls = (int)(((b[2 + (j & 3)] >> (4 * (j >> 2))) & 15) | ((extra >> j) & 1) << 4) - 16;
        const float dl = d * bd::i2f(ls);
        const bool hi = (extra >> (8 + j)) & 1;
        const uint32_t t0 = hi ? bd::kIq3nlW2 : bd::kIq3nlW0, t1 = hi ? bd::kIq3nlW3 : bd::kIq3nlW1;
        const bd::B8<2> q(b + 6 + bd::p2_off(chunk));
        const bd::B8<2> h(b + 70 + bd::hb_off(chunk));
        const int sh = bd::p2_shift(chunk), hs = bd::hb_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 3) | ((h[i] >> hs) & 1) << 2;
            out[i] = dl * bd::i2f(bd::perm_s8(t0, t1, v));
        }
    }
};

template <>
struct BlockDecoder<quant::T_IQ4_KS> : DecoderBase<256, 136, 4, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const float d = bd::ldf<4>(row);
        const uint8_t* b = block(row, ib);
        const uint32_t s = b[chunk >> 2];
        const float dl = d * bd::i2f(((int)(s & 254) - 127));
        constexpr bd::Lut16 l0 = bd::kIq4kLut0, l1 = bd::kIq4kLut1;
        const bd::Lut16 lut = bd::sel_lut16(s & 1, l0, l1);
        const bd::B8<4> q(b + 8 + bd::p4n_off(chunk));
        const int sh = bd::p4n_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = dl * bd::i2f(lut((q[i] >> sh) & 15));
    }
};

template <>
struct BlockDecoder<quant::T_IQ4_KSS> : DecoderBase<256, 128, 4, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const float d = bd::ldf<4>(row);
        const uint8_t* g = block(row, ib) + 16 * (chunk >> 2);  // 8 u16 words of this 32-group
        // The group's scale: bit 0 of each of its 8 words.
        const bd::B8<4> w0(g), w1(g + 8);
        int ls = 0;
IKLLM_UNROLL
        for (int k = 0; k < 4; ++k) ls |= (int)((w0[2 * k] & 1) << k) | (int)((w1[2 * k] & 1) << (k + 4));
        const float dl = d * bd::i2f(((ls & 254) - 127));
        constexpr bd::Lut16 l0 = bd::kIq4kLut0, l1 = bd::kIq4kLut1;
        const bd::Lut16 lut = bd::sel_lut16(ls & 1, l0, l1);
        // Values 8*sub..: words 4*(sub&1).. , nibble (sub>>1) of each decoded byte.
        const int sub = chunk & 3;
        const bd::B8<4> w = (sub & 1) ? w1 : w0;
        const int sh = 4 * (sub >> 1);
IKLLM_UNROLL
        for (int k = 0; k < 4; ++k) {
            const uint32_t u = w[2 * k] | w[2 * k + 1] << 8;
            const uint32_t e = u & 0xFFFEu;
            const uint32_t v = e ^ (e >> 1);
            out[2 * k] = dl * bd::i2f(lut(((v & 255) >> sh) & 15));
            out[2 * k + 1] = dl * bd::i2f(lut(((v >> 8) >> sh) & 15));
        }
    }
};

template <>
struct BlockDecoder<quant::T_IQ5_KS> : DecoderBase<256, 168, 4, 4> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const float d = bd::ldf<4>(row);
        const uint8_t* b = block(row, ib);
        const uint32_t s = b[chunk >> 2];
        const float dl = d * bd::i2f(((int)(s & 254) - 127));
        const uint32_t base = 32 * (s & 1);
        const bd::B8<4> q(b + 8 + bd::p4k_off(chunk));
        const bd::B8<4> h(b + 136 + bd::hb_off(chunk));
        const int sh = bd::p4k_shift(chunk), hs = bd::hb_shift(chunk);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            const uint32_t v = ((q[i] >> sh) & 15) | ((h[i] >> hs) & 1) << 4;
            out[i] = dl * bd::i2f(bd::iq5nl(base + v));
        }
    }
};

template <>
struct BlockDecoder<quant::T_IQ2_KL> : DecoderBase<256, 86, 2, 2> {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        const float d = bd::ldh(row);
        const uint8_t* b = block(row, ib);
        const int ib32 = chunk >> 2;
        const uint32_t sh16 = bd::ld16(b);
        const int ls = (int)(((b[2 + (ib32 & 3)] >> (4 * (ib32 >> 2))) & 15) | ((sh16 >> (2 * ib32)) & 3) << 4) - 32;
        const float dl = d * bd::i2f(ls);
        // Pair p of chunk: w = 8*chunk + 2*k; c = chunk>>3, half = (chunk>>2)&1, p = 4*(chunk&3)+k.
        const int c = chunk >> 3, half = (chunk >> 2) & 1;
        const uint32_t qs = bd::ld32<2>(b + 6 + 16 * c + 4 * (chunk & 3));
        const uint32_t qh = bd::ld32<2>(b + 70 + 4 * (chunk & 3));
IKLLM_UNROLL
        for (int k = 0; k < 4; ++k) {
            const uint32_t code = ((qs >> (8 * k + 4 * half)) & 15) | ((qh >> (8 * k + 2 * c + half)) & 1) << 4;
            const uint32_t pr = bd::iq2kl(code);
            out[2 * k] = dl * bd::i2f((int8_t)(uint8_t)(pr & 255));
            out[2 * k + 1] = dl * bd::i2f((int8_t)(uint8_t)(pr >> 8));
        }
    }
};

// ---- trellis types (§10): per-row float32 scale ----------------------------------------------

// values(): the sub-block scale sl = d * s and the chunk's 8 generated integers v (|v| <= 126;
// the integer view of int8_codes_kt.cuh uses them too); decode8 = sl * v.
template <class Self>
struct KtDecoder {
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        float sl;
        int v[8];
        Self::values(row, ib, chunk, sl, v);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = sl * bd::i2f(v[i]);
    }
};

template <>
struct BlockDecoder<quant::T_IQ1_KT> : DecoderBase<256, 56, 4, 4>, KtDecoder<BlockDecoder<quant::T_IQ1_KT>> {
    IKLLM_HD static void values(const uint8_t* row, int64_t ib, int chunk, float& sl, int (&v)[8]) {
        const float d = bd::ldf<4>(row);
        const uint8_t* b = block(row, ib);
        const int j = chunk >> 2, g = chunk & 3;
        const uint32_t sh = b[j];
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
        sl = d * bd::i2f(lut(sh & 15));
        const uint32_t c = b[8 + 4 * j + g] | ((b[40 + 4 * (j & 3) + g] >> (4 * (j >> 2))) & 15) << 8 |
                           ((sh >> (4 + g)) & 1) << 12;
        uint32_t x = c + bd::kKtOffset;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            x *= bd::kKtMult;
            v[i] = bd::kt_value(x);
        }
    }
};

// The reference's matmul of the trellis types multiplies their block scales by a factor their
// dequantization (these decoders) lacks, in percent: int8_codes_kt.cuh applies it per block,
// the float matrix kernels (matmul.cu) to the sum.
constexpr int kt_factor_percent(uint32_t type) {
    return type == quant::T_IQ2_KT ? 105 : type == quant::T_IQ3_KT ? 101 : 100;
}

template <>
struct BlockDecoder<quant::T_IQ2_KT> : DecoderBase<256, 68, 4, 4>, KtDecoder<BlockDecoder<quant::T_IQ2_KT>> {
    IKLLM_HD static void values(const uint8_t* row, int64_t ib, int chunk, float& sl, int (&v)[8]) {
        const float d = bd::ldf<4>(row);
        const uint8_t* b = block(row, ib);
        const int j = chunk >> 2;
        constexpr bd::Lut16 lut = bd::kIq4nlLut;
        sl = d * bd::i2f(lut((b[j & 3] >> (4 * (j >> 2))) & 15));
        uint32_t x = bd::ld16(b + 4 + 2 * chunk) + bd::kKtOffset;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            x *= bd::kKtMult;
            v[i] = bd::kt_value(x);
        }
    }
};

// IQ3_KT: magnitudes |v| with a sign bit per weight; decode8 flips the sign bit of the product
// (so a zero with its sign bit set is -0, as the CPU's dequantization gives).
template <>
struct BlockDecoder<quant::T_IQ3_KT> : DecoderBase<256, 100, 4, 4> {
    IKLLM_HD static void magnitudes(const uint8_t* row, int64_t ib, int chunk, float& sl, int (&a)[8], uint32_t& neg) {
        const float d = bd::ldf<4>(row);
        const uint8_t* b = block(row, ib);
        const int j = chunk >> 2;
        sl = d * bd::i2f(((b[j & 3] >> (4 * (j >> 2))) & 15));
        const bd::B8<4> sg(b + 68 + bd::hb_off(chunk));
        const int hs = bd::hb_shift(chunk);
        uint32_t x = bd::ld16(b + 4 + 2 * chunk) + bd::kKtOffset;
        neg = 0;
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) {
            x *= bd::kKtMult;
            const int v = bd::kt_value(x);
            a[i] = v < 0 ? -v : v;
            neg |= ((sg[i] >> hs) & 1) << i;
        }
    }
    IKLLM_HD static void values(const uint8_t* row, int64_t ib, int chunk, float& sl, int (&v)[8]) {
        uint32_t neg;
        magnitudes(row, ib, chunk, sl, v, neg);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) v[i] = (neg >> i) & 1 ? -v[i] : v[i];
    }
    IKLLM_HD static void decode8(const uint8_t* row, int64_t ib, int chunk, float out[8]) {
        float sl;
        int a[8];
        uint32_t neg;
        magnitudes(row, ib, chunk, sl, a, neg);
IKLLM_UNROLL
        for (int i = 0; i < 8; ++i) out[i] = bd::u2f(bd::f2u(sl * bd::i2f(a[i])) ^ ((neg >> i) & 1) << 31);
    }
};

template <>
struct BlockDecoder<quant::T_IQ4_KT> : DecoderBase<256, 128, 4, 4>, KtDecoder<BlockDecoder<quant::T_IQ4_KT>> {
    IKLLM_HD static void values(const uint8_t* row, int64_t ib, int chunk, float& sl, int (&v)[8]) {
        const float d = bd::ldf<4>(row);
        const uint8_t* b = block(row, ib);
        const int j = chunk >> 2;
        const uint32_t s = bd::ld32<4>(b + 4 * j);
        const uint32_t offset = (s & 1) ? bd::kKtOffsetOdd : bd::kKtOffset;
        sl = d * bd::i2f(((int)((s & 255) >> 1) - 64));
        const int jj0 = 2 * chunk;  // 8*j + g for g = 2*(chunk&3) and +1
        const uint32_t lo = bd::ld16(b + 32 + jj0);
        const uint32_t nb = b[96 + (jj0 & 31)] | (uint32_t)b[96 + ((jj0 + 1) & 31)] << 8;
        const int ns = 4 * (jj0 >> 5);
IKLLM_UNROLL
        for (int h = 0; h < 2; ++h) {
            const int g = 2 * (chunk & 3) + h;
            const uint32_t c = ((lo >> (8 * h)) & 255) | ((nb >> (8 * h + ns)) & 15) << 8 | ((s >> (8 + 3 * g)) & 7) << 12;
            uint32_t x = c + offset;
IKLLM_UNROLL
            for (int i = 0; i < 4; ++i) {
                x *= bd::kKtMult;
                v[4 * h + i] = bd::kt_value(x);
            }
        }
    }
};

// ---- dispatch ---------------------------------------------------------------------------------

// Calls f(BlockDecoder<T>{}) for a supported weight type and returns true; false otherwise
// (row-interleaved *_R4/_R8 types, grid i-quants, activation-only types, ...).
template <class F>
bool dispatch_weight_type(uint32_t type, F&& f) {
    switch (type) {
#define IKLLM_BD_CASE(T) \
    case quant::T:       \
        f(BlockDecoder<quant::T>{}); \
        return true;
        IKLLM_BD_CASE(T_F32)
        IKLLM_BD_CASE(T_F16)
        IKLLM_BD_CASE(T_BF16)
        IKLLM_BD_CASE(T_Q4_0)
        IKLLM_BD_CASE(T_Q4_1)
        IKLLM_BD_CASE(T_Q5_0)
        IKLLM_BD_CASE(T_Q5_1)
        IKLLM_BD_CASE(T_Q6_0)
        IKLLM_BD_CASE(T_Q8_0)
        IKLLM_BD_CASE(T_IQ4_NL)
        IKLLM_BD_CASE(T_MXFP4)
        IKLLM_BD_CASE(T_Q1_0_G128)
        IKLLM_BD_CASE(T_Q2_K)
        IKLLM_BD_CASE(T_Q3_K)
        IKLLM_BD_CASE(T_Q4_K)
        IKLLM_BD_CASE(T_Q5_K)
        IKLLM_BD_CASE(T_Q6_K)
        IKLLM_BD_CASE(T_IQ4_XS)
        IKLLM_BD_CASE(T_IQ2_K)
        IKLLM_BD_CASE(T_IQ3_K)
        IKLLM_BD_CASE(T_IQ4_K)
        IKLLM_BD_CASE(T_IQ5_K)
        IKLLM_BD_CASE(T_IQ6_K)
        IKLLM_BD_CASE(T_IQ2_KS)
        IKLLM_BD_CASE(T_IQ3_KS)
        IKLLM_BD_CASE(T_IQ4_KS)
        IKLLM_BD_CASE(T_IQ4_KSS)
        IKLLM_BD_CASE(T_IQ5_KS)
        IKLLM_BD_CASE(T_IQ2_KL)
        IKLLM_BD_CASE(T_IQ1_KT)
        IKLLM_BD_CASE(T_IQ2_KT)
        IKLLM_BD_CASE(T_IQ3_KT)
        IKLLM_BD_CASE(T_IQ4_KT)
#undef IKLLM_BD_CASE
        default:
            return false;
    }
}

}  // namespace ikllm::cuda
