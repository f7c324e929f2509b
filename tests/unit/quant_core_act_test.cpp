// Activation encoders (quant-formats.md §15) against a literal, independent transcription of the
// spec's rules, byte for byte, including the group/leftover layout of the _X4 formats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/act_q8_0.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

std::vector<float> test_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)n);
    for (auto& v : x) v = nd(rng);
    // special blocks: all zero, one huge, one tiny (subnormal scale), exact ties
    if (n >= 128) {
        for (int i = 0; i < 32; ++i) x[i] = 0.0f;
        for (int i = 32; i < 64; ++i) x[i] = 1e30f * (i % 2 ? 1 : -1) / (float)(i - 31);
        for (int i = 64; i < 96; ++i) x[i] = 1e-40f * (float)(i - 80);
        for (int i = 96; i < 128; ++i) x[i] = (float)(i - 112) * 0.5f;  // 127/amax scaling of halves
    }
    return x;
}

// bf16 nearest-even, by comparing the two neighbours in double (independent of core/fp16.h).
uint16_t bf16_rne(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u;
    float flo, fhi;
    std::memcpy(&flo, &lo, 4);
    std::memcpy(&fhi, &hi, 4);
    const double dl = std::fabs((double)f - flo), dh = std::fabs((double)fhi - f);
    if (dl < dh || (dl == dh && ((lo >> 16) & 1) == 0)) return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

float amax32(const float* x) {
    float m = 0;
    for (int i = 0; i < 32; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
}

// Spec: q = RNE(x * id) as float32 product, saturated to int8 by the x86 conversion (which turns
// NaN and values beyond int32 into INT_MIN, i.e. -128: reachable only when 127/amax overflows).
int codes(const float* x, float id, int8_t* q) {
    int s = 0;
    for (int i = 0; i < 32; ++i) {
        const float v = x[i] * id;
        const double r = std::fabs(v) < 2147483648.0 ? std::nearbyint((double)v) : -2147483648.0;
        q[i] = (int8_t)std::min(127.0, std::max(-128.0, r));
        s += q[i];
    }
    return s;
}

template <class T>
void put(std::vector<uint8_t>& out, size_t off, T v) { std::memcpy(out.data() + off, &v, sizeof(T)); }

std::vector<uint8_t> spec_q8_2_x4(const std::vector<float>& x) {
    const int64_t nb = (int64_t)x.size() / 32, ng = nb / 4;
    std::vector<uint8_t> out((size_t)nb * 36);
    for (int64_t ib = 0; ib < nb; ++ib) {
        const float* xb = x.data() + 32 * ib;
        const uint16_t dbits = bf16_rne(amax32(xb) / 127.0f);
        const float d = bf16_to_f32(dbits);
        const float id = d > 0 ? 1.0f / d : 0.0f;
        int8_t q[32];
        const int s = codes(xb, id, q);
        size_t d_off, s_off, q_off;
        if (ib < 4 * ng) {
            const size_t g = 144 * (size_t)(ib / 4), k = (size_t)(ib % 4);
            d_off = g + 2 * k, s_off = g + 8 + 2 * k, q_off = g + 16 + 32 * k;
        } else {
            const size_t b = 144 * (size_t)ng + 36 * (size_t)(ib - 4 * ng);
            d_off = b, s_off = b + 2, q_off = b + 4;
        }
        put(out, d_off, dbits);
        put(out, s_off, (int16_t)s);
        std::memcpy(out.data() + q_off, q, 32);
    }
    return out;
}

std::vector<uint8_t> spec_q8_0(const std::vector<float>& x, bool q8_1) {
    const int64_t nb = (int64_t)x.size() / 32;
    const size_t bs = q8_1 ? 36 : 34;
    std::vector<uint8_t> out((size_t)nb * bs);
    for (int64_t ib = 0; ib < nb; ++ib) {
        const float* xb = x.data() + 32 * ib;
        const float amax = amax32(xb), d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
        int8_t q[32];
        const int s = codes(xb, id, q);
        put(out, bs * ib, f32_to_f16(d));
        if (q8_1) put(out, bs * ib + 2, f32_to_f16(d * (float)s));
        std::memcpy(out.data() + bs * ib + (q8_1 ? 4 : 2), q, 32);
    }
    return out;
}

}  // namespace

TEST(QuantCoreAct, Q8_2_X4MatchesSpec) {
    for (int64_t n : {32, 64, 96, 128, 160, 256, 4096 + 96}) {
        const std::vector<float> x = test_row(n, (uint32_t)n);
        std::vector<uint8_t> enc(act_q8_2_x4_row_bytes(n));
        act_q8_2_x4_encode_row(x.data(), enc.data(), n);
        EXPECT_EQ(enc, spec_q8_2_x4(x)) << "ne0 " << n;
        // block accessor agrees with the layout
        for (int64_t ib = 0; ib < n / 32; ++ib) {
            const Q8x4BlockRef b = q8_2_x4_block(enc.data(), n, ib);
            int s = 0;
            for (int i = 0; i < 32; ++i) s += b.qs[i];
            EXPECT_EQ(s, b.sum);
            EXPECT_EQ(b.d_bf16, bf16_rne(amax32(x.data() + 32 * ib) / 127.0f));
        }
        // decoded values are within half a step (normal scales; subnormal ones lose precision)
        std::vector<float> y((size_t)n);
        act_q8_2_x4_decode_row(enc.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const float d = bf16_to_f32(q8_2_x4_block(enc.data(), n, i / 32).d_bf16);
            if (amax32(x.data() + i / 32 * 32) >= 127 * 1.2e-38f) {
                EXPECT_LE(std::fabs(y[i] - x[i]), 0.5001f * d) << i;
            }
        }
    }
}

TEST(QuantCoreAct, Q8_0AndQ8_1MatchSpec) {
    for (int64_t n : {32, 160, 1024}) {
        const std::vector<float> x = test_row(n, 7 + (uint32_t)n);
        std::vector<uint8_t> a(act_q8_0_row_bytes(n)), b(act_q8_1_row_bytes(n));
        act_q8_0_encode_row(x.data(), a.data(), n);
        act_q8_1_encode_row(x.data(), b.data(), n);
        EXPECT_EQ(a, spec_q8_0(x, false));
        EXPECT_EQ(b, spec_q8_0(x, true));
    }
}

// The _X4 variants regroup the same blocks: 4 scales (and sums) first, then 4 x 32 codes.
TEST(QuantCoreAct, X4LayoutsRegroupPlainBlocks) {
    const int64_t n = 32 * 7;  // one group of 4 + 3 leftovers
    const std::vector<float> x = test_row(n, 99);
    std::vector<uint8_t> plain(act_q8_0_row_bytes(n)), x4(act_q8_0_x4_row_bytes(n));
    act_q8_0_encode_row(x.data(), plain.data(), n);
    act_q8_0_x4_encode_row(x.data(), x4.data(), n);
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(std::memcmp(x4.data() + 2 * k, plain.data() + 34 * k, 2), 0);
        EXPECT_EQ(std::memcmp(x4.data() + 8 + 32 * k, plain.data() + 34 * k + 2, 32), 0);
    }
    EXPECT_EQ(std::memcmp(x4.data() + 136, plain.data() + 4 * 34, 3 * 34), 0);
    std::vector<float> y1((size_t)n), y2((size_t)n);
    act_q8_0_decode_row(plain.data(), y1.data(), n);
    act_q8_0_x4_decode_row(x4.data(), y2.data(), n);
    EXPECT_EQ(y1, y2);

    // Q8_1_X4: d = amax/127, id = 1/d (not 127/amax), s = fp16(d * sum)
    std::vector<uint8_t> x41(act_q8_1_x4_row_bytes(n));
    act_q8_1_x4_encode_row(x.data(), x41.data(), n);
    for (int64_t ib = 0; ib < 4; ++ib) {
        const float* xb = x.data() + 32 * ib;
        const float d = amax32(xb) / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        int8_t q[32];
        const int s = codes(xb, id, q);
        uint16_t dd, ss;
        std::memcpy(&dd, x41.data() + 2 * ib, 2);
        std::memcpy(&ss, x41.data() + 8 + 2 * ib, 2);
        EXPECT_EQ(dd, f32_to_f16(d));
        EXPECT_EQ(ss, f32_to_f16(d * (float)s));
        EXPECT_EQ(std::memcmp(x41.data() + 16 + 32 * ib, q, 32), 0);
    }
}
