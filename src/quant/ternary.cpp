// Ternary / 1-bit types IQ1_BN, IQ2_BN and the 8-bit row-scaled Q8_KV (docs: quant-formats.md
// §11). The reference's own to_float for IQ1_BN/IQ2_BN ignores the row scale (§13.4); we decode
// the layout its quantizer writes and its matmul kernels read.
// I2_S (§11.3) is not registered: its whole-tensor scale lives in a trailer after the last row,
// which a per-row decoder cannot reach, so loading it fails with an error naming the type.
#include <cmath>

#include "quant/families.h"
#include "quant/grid_util.h"
#include "quant/ternary_formats.h"

namespace ikllm::quant {

int iq1bn_trit(uint8_t b, int j) {
    static const uint8_t kMult[5] = {81, 27, 9, 3, 1};
    const uint8_t p = (uint8_t)(b * kMult[j]);  // 8-bit wrap-around is part of the format
    return (3 * p) >> 8;
}

void dequant_iq1_bn(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f16(src);
    src += 2;
    const float vals[3] = {-d, 0.0f * d, d};  // d * (trit - 1), keeps the sign rules of d * 0
    for (int64_t b = 0; b < ne0 / 64; ++b, src += 13, y += 64) {
        for (int i16 = 0; i16 < 4; ++i16) {
            for (int k = 0; k < 3; ++k)
                for (int j = 0; j < 5; ++j) y[16 * i16 + 5 * k + j] = vals[iq1bn_trit(src[3 * i16 + k], j)];
            y[16 * i16 + 15] = vals[iq1bn_trit(src[12], i16)];
        }
    }
}

void dequant_iq2_bn(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f32(src);
    src += 4;
    for (int64_t b = 0; b < ne0 / 64; ++b, src += 16, y += 64)
        for (int w = 0; w < 64; ++w) y[w] = d * (float)(bits(src[w % 16], 2 * (w / 16), 2) - 1);
}

namespace {

// Ternary code of x for a row with max |x| = m: 1 near zero, else 0 (negative) / 2 (positive).
inline int ternary_code(float x, float m) {
    if (std::fabs(x) < 0.5f * m) return 1;
    return x < 0 ? 0 : 2;
}

float row_absmax(const float* x, int64_t n) {
    float m = 0;
    for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i]));
    return m;
}

// Byte holding base-3 digits q[0..n-1] (weights 3^j) so that iq1bn_trit recovers them.
uint8_t pack_trits(const int* q, int n) {
    int v = 0, p = 1;
    for (int j = 0; j < n; ++j, p *= 3) v += p * q[j];
    return (uint8_t)((256 * v + 242) / 243);
}

void quantize_iq1_bn(const float* x, uint8_t* dst, int64_t ne0, const float*) {
    const float m = row_absmax(x, ne0);
    wr_u16(dst, f32_to_f16(m));
    dst += 2;
    for (int64_t b = 0; b < ne0 / 64; ++b, dst += 13, x += 64) {
        int extra[5] = {0, 0, 0, 0, 0};
        for (int i16 = 0; i16 < 4; ++i16) {
            for (int k = 0; k < 3; ++k) {
                int q[5];
                for (int j = 0; j < 5; ++j) q[j] = ternary_code(x[16 * i16 + 5 * k + j], m);
                dst[3 * i16 + k] = pack_trits(q, 5);
            }
            extra[i16] = ternary_code(x[16 * i16 + 15], m);
        }
        dst[12] = pack_trits(extra, 4);
    }
}

void quantize_iq2_bn(const float* x, uint8_t* dst, int64_t ne0, const float*) {
    const float m = row_absmax(x, ne0);
    wr_f32(dst, m);
    dst += 4;
    for (int64_t b = 0; b < ne0 / 64; ++b, dst += 16, x += 64) {
        for (int i = 0; i < 16; ++i) {
            uint8_t v = 0;
            for (int t = 0; t < 4; ++t) v |= (uint8_t)(ternary_code(x[16 * t + i], m) << (2 * t));
            dst[i] = v;
        }
    }
}

void dequant_q8_kv(const uint8_t* src, float* y, int64_t ne0) {
    const float d = rd_f32(src);
    const int8_t* q = (const int8_t*)(src + 8);
    for (int64_t i = 0; i < ne0; ++i) y[i] = d * (float)q[i];
}

const FamilyEntry kTernaryEntries[] = {
    {T_IQ1_BN, dequant_iq1_bn, quantize_iq1_bn},
    {T_IQ2_BN, dequant_iq2_bn, quantize_iq2_bn},
    {T_Q8_KV, dequant_q8_kv, quantize_q8_kv_row},
};

}  // namespace

// Q8_KV (§11.4): d = max|x| / 127, q = RNE(x * (1/d)) with 1/d rounded to float32, Σq exact.
void quantize_q8_kv_row(const float* x, uint8_t* dst, int64_t ne0, const float*) {
    const float amax = row_absmax(x, ne0);
    int8_t* q = (int8_t*)(dst + 8);
    if (amax == 0.0f) {
        wr_f32(dst, 0.0f);
        wr_u32(dst + 4, 0);
        for (int64_t i = 0; i < ne0; ++i) q[i] = 0;
        return;
    }
    const float d = amax / 127.0f;
    const float id = 1.0f / d;
    int32_t sum = 0;
    for (int64_t i = 0; i < ne0; ++i) {
        float r = std::nearbyint(x[i] * id);
        r = std::fmin(127.0f, std::fmax(-127.0f, r));
        q[i] = (int8_t)r;
        sum += q[i];
    }
    wr_f32(dst, d);
    wr_u32(dst + 4, (uint32_t)sum);
}

size_t q8_kv_row_bytes(int64_t ne0) { return 8 + (size_t)ne0; }

FamilyTable ternary_family() { return {kTernaryEntries, sizeof(kTernaryEntries) / sizeof(kTernaryEntries[0])}; }

}  // namespace ikllm::quant
