// Integer views (int8_codes.cuh) of IQ4_KS, IQ5_KS, IQ4_KSS, IQ2_KS, IQ3_KS, IQ2_KL.
// All six have one integer scale per 32 weights and a row scale d at the start of the row
// (BlockDecoder::decode8 reads it; here it is `dw`, the CPU's kb.dw), so every view is
//     weight = (d * isc) * level,   level = the signed level of the weight's value set,
// exactly as decode8 computes it, and conv8 gives P = isc * level, the CPU's sc * v + corr.
#pragma once
#include "int8_codes.cuh"

namespace ikllm::cuda {

namespace ks {

// IQ5 levels of the 4 indices in the bytes of n (each 0..31), from the set at `base` (0, 32).
IKLLM_HD uint32_t iq5nl4(uint32_t n, uint32_t base) {
    uint32_t r = 0;
IKLLM_UNROLL
    for (int i = 0; i < 4; ++i) r |= (uint32_t)(uint8_t)bd::iq5nl(base + ((n >> 8 * i) & 31u)) << 8 * i;
    return r;
}

// IQ4_KS / IQ5_KS scale byte: bits 1..7 = scale + 127, bit 0 = value set.
IKLLM_HD int ks_scale(uint32_t s) { return (int)(s & 254u) - 127; }

}  // namespace ks

template <>
struct Int8Codes<quant::T_IQ4_KS> : i8::TwoSets<Int8Codes<quant::T_IQ4_KS>>, i8::Iq4kLevels {
    using D = BlockDecoder<quant::T_IQ4_KS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* b = D::block(row, ib);
        const uint32_t s = b[chunk >> 2];
        second = s & 1;
        isc = ks::ks_scale(s);
        dw = bd::ldf<4>(row);
        const uint8_t* q = b + 8 + bd::p4n_off(chunk);
        const int sh = bd::p4n_shift(chunk);
        n_lo = bd::nib4(bd::ld32<4>(q), sh);
        n_hi = bd::nib4(bd::ld32<4>(q + 4), sh);
    }
};

template <>
struct Int8Codes<quant::T_IQ5_KS> : i8::TwoSets<Int8Codes<quant::T_IQ5_KS>> {
    using D = BlockDecoder<quant::T_IQ5_KS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    static constexpr int kShift = 2;  // second IQ5 set = first + 2
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* b = D::block(row, ib);
        const uint32_t s = b[chunk >> 2];
        second = s & 1;
        isc = ks::ks_scale(s);
        dw = bd::ldf<4>(row);
        const uint8_t* q = b + 8 + bd::p4k_off(chunk);
        const uint8_t* h = b + 136 + bd::hb_off(chunk);
        const int sh = bd::p4k_shift(chunk), hs = bd::hb_shift(chunk);
        n_lo = bd::nib4(bd::ld32<4>(q), sh) | ((bd::ld32<4>(h) >> hs) & 0x01010101u) << 4;
        n_hi = bd::nib4(bd::ld32<4>(q + 4), sh) | ((bd::ld32<4>(h + 4) >> hs) & 0x01010101u) << 4;
    }
    IKLLM_HD static void levels(uint32_t n_lo, uint32_t n_hi, bool second, uint32_t& lo, uint32_t& hi) {
        lo = ks::iq5nl4(n_lo, second ? 32 : 0);
        hi = ks::iq5nl4(n_hi, second ? 32 : 0);
    }
};

template <>
struct Int8Codes<quant::T_IQ4_KSS> : i8::TwoSets<Int8Codes<quant::T_IQ4_KSS>>, i8::Iq4kLevels {
    using D = BlockDecoder<quant::T_IQ4_KSS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kSat = true, kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // A 32-group is 8 u16 words: bit 0 of word q is bit q of the IQ4_KS-style scale byte, the
    // other 15 bits (bit 0 cleared) e give 4 nibble indices as e ^ (e >> 1).
    IKLLM_HD static void parts(const uint8_t* row, int64_t ib, int chunk, uint32_t& n_lo, uint32_t& n_hi, int& isc,
                               float& dw, bool& second) {
        const uint8_t* g = D::block(row, ib) + 16 * (chunk >> 2);
        const uint32_t w0 = bd::ld32<4>(g), w1 = bd::ld32<4>(g + 4), w2 = bd::ld32<4>(g + 8), w3 = bd::ld32<4>(g + 12);
        constexpr uint32_t m = 0x00010001u;  // bit 0 of both u16 words of a u32
        const uint32_t t = (w0 & m) | (w1 & m) << 2 | (w2 & m) << 4 | (w3 & m) << 6;  // word q at bit q or 15 + q
        const uint32_t s = (t & 0x55u) | ((t >> 15) & 0xAAu);
        second = s & 1;
        isc = ks::ks_scale(s);
        dw = bd::ldf<4>(row);
        // Values 8 * sub..: words 4 * (sub & 1).., nibble sub >> 1 of each decoded byte. With
        // bit 0 (and so bit 16) cleared, e >> 1 moves nothing across the two u16 words.
        const int sub = chunk & 3, sh = 4 * (sub >> 1);
        const uint32_t e_lo = ((sub & 1) ? w2 : w0) & 0xFFFEFFFEu, e_hi = ((sub & 1) ? w3 : w1) & 0xFFFEFFFEu;
        n_lo = bd::nib4(e_lo ^ (e_lo >> 1), sh);
        n_hi = bd::nib4(e_hi ^ (e_hi >> 1), sh);
    }
};

template <>
struct Int8Codes<quant::T_IQ2_KS> : i8::Scaled<Int8Codes<quant::T_IQ2_KS>> {
    using D = BlockDecoder<quant::T_IQ2_KS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kConv = true;
    static constexpr float kConvD0 = 1.0f / 125.0f;
    // Levels of the weight's set (second = first + 5: the CPU's corr / sc), scale and d.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const int j = chunk >> 2;
        const uint32_t extra = bd::ld16(b);
        isc = (int)(((b[2 + (j >> 1)] >> (4 * (j & 1))) & 15) | ((extra >> (8 + j)) & 1) << 4) - 16;
        dw = bd::ldh(row);
        const uint32_t tw = ((extra >> j) & 1) ? bd::kIq2nlW1 : bd::kIq2nlW0;
        const uint8_t* q = b + 6 + bd::p2_off(chunk);
        const int sh = bd::p2_shift(chunk);
        lo = i8::lut8x4(tw, tw, (bd::ld32<2>(q) >> sh) & 0x03030303u);
        hi = i8::lut8x4(tw, tw, (bd::ld32<2>(q + 4) >> sh) & 0x03030303u);
    }
};

template <>
struct Int8Codes<quant::T_IQ3_KS> : i8::Scaled<Int8Codes<quant::T_IQ3_KS>> {
    using D = BlockDecoder<quant::T_IQ3_KS>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kConv = true;
    static constexpr float kConvD0 = 1.0f / 127.0f;
    // Levels of the weight's set (second = first + 4), scale and d.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const int j = chunk >> 2;
        const uint32_t extra = bd::ld16(b);
        isc = (int)(((b[2 + (j & 3)] >> (4 * (j >> 2))) & 15) | ((extra >> j) & 1) << 4) - 16;
        dw = bd::ldh(row);
        const bool second = (extra >> (8 + j)) & 1;
        const uint32_t t0 = second ? bd::kIq3nlW2 : bd::kIq3nlW0, t1 = second ? bd::kIq3nlW3 : bd::kIq3nlW1;
        const uint8_t* q = b + 6 + bd::p2_off(chunk);
        const uint8_t* h = b + 70 + bd::hb_off(chunk);
        const int sh = bd::p2_shift(chunk), hs = bd::hb_shift(chunk);
        lo = i8::lut8x4(t0, t1, ((bd::ld32<2>(q) >> sh) & 0x03030303u) | ((bd::ld32<2>(h) >> hs) & 0x01010101u) << 2);
        hi = i8::lut8x4(t0, t1, ((bd::ld32<2>(q + 4) >> sh) & 0x03030303u) | ((bd::ld32<2>(h + 4) >> hs) & 0x01010101u) << 2);
    }
};

template <>
struct Int8Codes<quant::T_IQ2_KL> : i8::Scaled<Int8Codes<quant::T_IQ2_KL>> {
    using D = BlockDecoder<quant::T_IQ2_KL>;
    static constexpr bool kHasBias = false;
    static constexpr bool kScale16 = false;
    static constexpr bool kConv = true;
    static constexpr float kConvD0 = 1.0f / 125.0f;
    // One value set (the CPU's corr is 0): the chunk's 4 pair codes give its 8 levels.
    IKLLM_HD static void conv8(const uint8_t* row, int64_t ib, int chunk, uint32_t& lo, uint32_t& hi, int& isc, float& dw) {
        const uint8_t* b = D::block(row, ib);
        const int ib32 = chunk >> 2;
        const uint32_t sh16 = bd::ld16(b);
        isc = (int)(((b[2 + (ib32 & 3)] >> (4 * (ib32 >> 2))) & 15) | ((sh16 >> (2 * ib32)) & 3) << 4) - 32;
        dw = bd::ldh(row);
        // Pair k of the chunk: byte k of qs and qh (decode8's layout), 4 pairs at once.
        const int c = chunk >> 3, half = (chunk >> 2) & 1;
        const uint32_t qs = bd::ld32<2>(b + 6 + 16 * c + 4 * (chunk & 3));
        const uint32_t qh = bd::ld32<2>(b + 70 + 4 * (chunk & 3));
        const uint32_t n = bd::nib4(qs, 4 * half) | ((qh >> (2 * c + half)) & 0x01010101u) << 4;
        lo = bd::iq2kl(n & 31u) | bd::iq2kl((n >> 8) & 31u) << 16;
        hi = bd::iq2kl((n >> 16) & 31u) | bd::iq2kl(n >> 24) << 16;
    }
};

}  // namespace ikllm::cuda

#define IKLLM_I8_KS_TYPES(X) X(T_IQ4_KS) X(T_IQ5_KS) X(T_IQ4_KSS) X(T_IQ2_KS) X(T_IQ3_KS) X(T_IQ2_KL)
