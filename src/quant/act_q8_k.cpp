// Q8_K / Q8_K32 / Q8_K128 activation encoders (quant-formats.md §15, rule "RNE8").
#include "quant/act_q8_k.h"
#include <cmath>
#include <cstring>

namespace ikllm::quant {

namespace {

// Round-half-to-even of a float with |v| < 2^22 (adding 1.5*2^23 leaves the integer in the
// mantissa, rounded by the FPU's default round-to-nearest-even).
inline int rne_small(float v) {
    const float t = v + 12582912.0f;
    uint32_t u;
    std::memcpy(&u, &t, 4);
    return (int)(u & 0x7fffffu) - 0x400000;
}

// Encodes n values with one scale: returns d, writes codes.
inline float encode_group(const float* x, int8_t* q, int n) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < n; ++i) {
        int v = rne_small(x[i] * id);
        v = v > 127 ? 127 : (v < -128 ? -128 : v);  // the reference saturates to int8
        q[i] = (int8_t)v;
    }
    return d;
}

}  // namespace

size_t q8_k_row_bytes(int64_t ne0) { return (size_t)(ne0 / 256) * kQ8KBlockBytes; }
size_t q8_k32_row_bytes(int64_t ne0) { return (size_t)(ne0 / 256) * kQ8KBlockBytes; }
size_t q8_k128_row_bytes(int64_t ne0) { return (size_t)(ne0 / 128) * kQ8K128BlockBytes; }

void encode_q8_k_row(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, x += 256, out += kQ8KBlockBytes) {
        int8_t q[256];
        const float d = encode_group(x, q, 256);
        int16_t bsums[16];
        int total = 0;
        for (int s = 0; s < 16; ++s) {
            int acc = 0;
            for (int k = 0; k < 16; ++k) acc += q[16 * s + k];
            bsums[s] = (int16_t)acc;
            total += acc;
        }
        const float sum = d * (float)total;
        std::memcpy(out + kQ8KOffD, &d, 4);
        std::memcpy(out + kQ8KOffSum, &sum, 4);
        std::memcpy(out + kQ8KOffQs, q, 256);
        std::memcpy(out + kQ8KOffBsums, bsums, 32);
    }
}

void encode_q8_k32_row(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, x += 256, out += kQ8KBlockBytes) {
        int8_t q[256];
        const float d = encode_group(x, q, 256);
        float bs[8];
        float sum = 0.0f;
        for (int s = 0; s < 8; ++s) {
            int acc = 0;
            for (int k = 0; k < 32; ++k) acc += q[32 * s + k];
            bs[s] = d * (float)acc;
            sum += bs[s];
        }
        std::memcpy(out + kQ8KOffD, &d, 4);
        std::memcpy(out + kQ8KOffSum, &sum, 4);
        std::memcpy(out + kQ8KOffQs, q, 256);
        std::memcpy(out + kQ8KOffBsums, bs, 32);
    }
}

void encode_q8_k128_row(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 128; ++ib, x += 128, out += kQ8K128BlockBytes) {
        int8_t q[128];
        const float d = encode_group(x, q, 128);
        int16_t bsums[4];
        for (int s = 0; s < 4; ++s) {
            int acc = 0;
            for (int k = 0; k < 32; ++k) acc += q[32 * s + k];
            bsums[s] = (int16_t)acc;
        }
        std::memcpy(out + kQ8K128OffD, &d, 4);
        std::memcpy(out + kQ8K128OffBsums, bsums, 8);
        std::memcpy(out + kQ8K128OffQs, q, 128);
    }
}

}  // namespace ikllm::quant
