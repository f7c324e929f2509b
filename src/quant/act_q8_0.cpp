// Reference encoders/decoders of the 32-block activation formats (quant-formats.md §15).
#include "quant/act_q8_0.h"

#include <cmath>

#include "core/fp16.h"

namespace ikllm::quant {
namespace {

// Round to nearest, ties to even, then saturate to int8 like the reference's x86 conversion
// (cvtps2dq + saturating packs): NaN and |v| >= 2^31 become INT_MIN, hence -128. This only
// matters when 127/amax overflows (amax subnormal). The adder trick avoids needing SSE4.1.
inline int8_t rne_i8(float v) {
    if (!(std::fabs(v) < 2147483648.0f)) return -128;
    float r = std::fabs(v) < 4194304.0f ? (v + 12582912.0f) - 12582912.0f : v;  // 1.5 * 2^23
    r = r < -128.0f ? -128.0f : (r > 127.0f ? 127.0f : r);
    return (int8_t)(int)r;
}

inline float block_amax(const float* x) {
    float m = 0.0f;
    for (int i = 0; i < 32; ++i) m = std::fabs(x[i]) > m ? std::fabs(x[i]) : m;  // = fmax for non-NaN, inlined
    return m;
}

// Codes with inverse scale id; returns the code sum.
inline int encode_codes(const float* x, float id, int8_t* q) {
    int s = 0;
    for (int i = 0; i < 32; ++i) {
        q[i] = rne_i8(x[i] * id);
        s += q[i];
    }
    return s;
}

inline void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline uint16_t get16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }

// Q8_0 / Q8_1 rule: d = amax/127, id = 127/amax (both float32 divisions).
struct Rne8 {
    float d, id;
    explicit Rne8(const float* x) {
        const float amax = block_amax(x);
        d = amax / 127.0f;
        id = amax != 0.0f ? 127.0f / amax : 0.0f;
    }
};

// Q8_1_X4 rule: id = 1/d from the unrounded d.
struct Rne8Inv {
    float d, id;
    explicit Rne8Inv(const float* x) {
        d = block_amax(x) / 127.0f;
        id = d > 0.0f ? 1.0f / d : 0.0f;
    }
};

// Q8_2 rule: d' = bf16(amax/127), id = 1/d'.
struct Rne8Bf16 {
    uint16_t d_bits;
    float id;
    explicit Rne8Bf16(const float* x) {
        d_bits = f32_to_bf16(block_amax(x) / 127.0f);
        const float d = bf16_to_f32(d_bits);
        id = d > 0.0f ? 1.0f / d : 0.0f;
    }
};

void q8_0_block(const float* x, uint8_t* out) {
    const Rne8 s(x);
    put16(out, f32_to_f16(s.d));
    encode_codes(x, s.id, reinterpret_cast<int8_t*>(out + 2));
}

template <class Rule>
void q8_1_block(const float* x, uint8_t* out) {
    const Rule s(x);
    const int sum = encode_codes(x, s.id, reinterpret_cast<int8_t*>(out + 4));
    put16(out, f32_to_f16(s.d));
    put16(out + 2, f32_to_f16(s.d * (float)sum));
}

void q8_2_block(const float* x, uint8_t* d, uint8_t* s, int8_t* q) {
    const Rne8Bf16 r(x);
    const int sum = encode_codes(x, r.id, q);
    put16(d, r.d_bits);
    put16(s, (uint16_t)(int16_t)sum);
}

inline void decode_codes(const int8_t* q, float d, float* y) {
    for (int i = 0; i < 32; ++i) y[i] = (float)q[i] * d;
}

}  // namespace

void act_q8_0_encode_row(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib) q8_0_block(x + 32 * ib, out + 34 * ib);
}

void act_q8_1_encode_row(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib) q8_1_block<Rne8>(x + 32 * ib, out + 36 * ib);
}

void act_q8_0_x4_encode_row(const float* x, uint8_t* out, int64_t ne0) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    for (int64_t g = 0; g < ng; ++g) {
        uint8_t* grp = out + 136 * g;
        for (int k = 0; k < 4; ++k) {
            const float* xb = x + 32 * (4 * g + k);
            const Rne8 s(xb);
            put16(grp + 2 * k, f32_to_f16(s.d));
            encode_codes(xb, s.id, reinterpret_cast<int8_t*>(grp + 8 + 32 * k));
        }
    }
    for (int64_t ib = 4 * ng; ib < nb; ++ib) q8_0_block(x + 32 * ib, out + 136 * ng + 34 * (ib - 4 * ng));
}

void act_q8_1_x4_encode_row(const float* x, uint8_t* out, int64_t ne0) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    for (int64_t g = 0; g < ng; ++g) {
        uint8_t* grp = out + 144 * g;
        for (int k = 0; k < 4; ++k) {
            const float* xb = x + 32 * (4 * g + k);
            const Rne8Inv s(xb);
            const int sum = encode_codes(xb, s.id, reinterpret_cast<int8_t*>(grp + 16 + 32 * k));
            put16(grp + 2 * k, f32_to_f16(s.d));
            put16(grp + 8 + 2 * k, f32_to_f16(s.d * (float)sum));
        }
    }
    for (int64_t ib = 4 * ng; ib < nb; ++ib) q8_1_block<Rne8Inv>(x + 32 * ib, out + 144 * ng + 36 * (ib - 4 * ng));
}

void act_q8_2_x4_encode_row(const float* x, uint8_t* out, int64_t ne0) {
    act_q8_2_x4_for_blocks(x, out, ne0, [](const float* xb, uint8_t* d, uint8_t* sum, int8_t* q) {
        q8_2_block(xb, d, sum, q);
    });
}

void act_q8_0_decode_row(const uint8_t* in, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib) {
        const uint8_t* b = in + 34 * ib;
        decode_codes(reinterpret_cast<const int8_t*>(b + 2), f16_to_f32(get16(b)), y + 32 * ib);
    }
}

void act_q8_1_decode_row(const uint8_t* in, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib) {
        const uint8_t* b = in + 36 * ib;
        decode_codes(reinterpret_cast<const int8_t*>(b + 4), f16_to_f32(get16(b)), y + 32 * ib);
    }
}

void act_q8_0_x4_decode_row(const uint8_t* in, float* y, int64_t ne0) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    for (int64_t g = 0; g < ng; ++g)
        for (int k = 0; k < 4; ++k)
            decode_codes(reinterpret_cast<const int8_t*>(in + 136 * g + 8 + 32 * k), f16_to_f32(get16(in + 136 * g + 2 * k)),
                         y + 32 * (4 * g + k));
    act_q8_0_decode_row(in + 136 * ng, y + 128 * ng, ne0 - 128 * ng);
}

void act_q8_1_x4_decode_row(const uint8_t* in, float* y, int64_t ne0) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    for (int64_t g = 0; g < ng; ++g)
        for (int k = 0; k < 4; ++k)
            decode_codes(reinterpret_cast<const int8_t*>(in + 144 * g + 16 + 32 * k), f16_to_f32(get16(in + 144 * g + 2 * k)),
                         y + 32 * (4 * g + k));
    act_q8_1_decode_row(in + 144 * ng, y + 128 * ng, ne0 - 128 * ng);
}

void act_q8_2_x4_decode_row(const uint8_t* in, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib) {
        const Q8x4BlockRef b = q8_2_x4_block(in, ne0, ib);
        decode_codes(b.qs, bf16_to_f32(b.d_bf16), y + 32 * ib);
    }
}

}  // namespace ikllm::quant
