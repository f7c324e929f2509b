// Matmul kernels of the K-quant and ik K/KS types: the scalar kernel against a float dot product
// of the decoded weights and decoded Q8_K activations, and every SIMD kernel against scalar,
// on odd row counts, row sub-ranges, several row lengths and token counts.
#include <gtest/gtest.h>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/act_q8_k.h"
#include "quant/families.h"
#include "quant/quant_tables.h"

using namespace ikllm;
using namespace ikllm::quant;
using namespace ikllm::cpu;

namespace {

struct TypeCase {
    uint32_t id;
    const char* name;
    int bytes, meta;
    std::vector<int> f16_fields;  // offsets of fp16 scales inside a block (randomised data gets sane values)
};

const std::vector<TypeCase>& cases() {
    static const std::vector<TypeCase> c = {
        {T_Q2_K, "q2_K", 84, 0, {80, 82}},     {T_Q3_K, "q3_K", 110, 0, {108}},   {T_Q4_K, "q4_K", 144, 0, {0, 2}},
        {T_Q5_K, "q5_K", 176, 0, {0, 2}},      {T_Q6_K, "q6_K", 210, 0, {208}},   {T_IQ4_XS, "iq4_xs", 136, 0, {0}},
        {T_IQ2_K, "iq2_k", 76, 0, {0}},        {T_IQ3_K, "iq3_k", 110, 0, {0}},   {T_IQ4_K, "iq4_k", 144, 0, {0}},
        {T_IQ5_K, "iq5_k", 176, 0, {0}},       {T_IQ6_K, "iq6_k", 212, 0, {0}},   {T_IQ2_KS, "iq2_ks", 70, 2, {}},
        {T_IQ3_KS, "iq3_ks", 102, 2, {}},      {T_IQ4_KS, "iq4_ks", 136, 4, {}},  {T_IQ4_KSS, "iq4_kss", 128, 4, {}},
        {T_IQ5_KS, "iq5_ks", 168, 4, {}},      {T_IQ2_KL, "iq2_kl", 86, 2, {}},
    };
    return c;
}

const FamilyEntry* family_entry(uint32_t id) {
    for (FamilyTable t : {kquant_family(), iqk_family()})
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].id == id) return &t.entries[i];
    return nullptr;
}

const MatmulKernel* kernel(uint32_t id, Isa isa) {
    KernelTable tabs[2];
    if (isa == Isa::scalar) { tabs[0] = kquant_kernels_scalar(); tabs[1] = iqk_kernels_scalar(); }
    else if (isa == Isa::avx2) { tabs[0] = kquant_kernels_avx2(); tabs[1] = iqk_kernels_avx2(); }
    else { tabs[0] = kquant_kernels_avx512(); tabs[1] = iqk_kernels_avx512(); }
    for (const KernelTable& t : tabs)
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].weight_type == id) return &t.entries[i];
    return nullptr;
}

bool cpu_has(Isa isa) {
    if (isa == Isa::scalar) return true;
    __builtin_cpu_init();
    if (isa == Isa::avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vbmi");
}

size_t row_size(const TypeCase& tc, int64_t ne0) { return tc.meta + (size_t)tc.bytes * (ne0 / 256); }

// Weight matrix: either quantized from Gaussian data, or random bytes with sane scales.
std::vector<uint8_t> make_weights(const TypeCase& tc, int64_t ne0, int64_t rows, bool random_bytes, std::mt19937& rng) {
    const size_t rb = row_size(tc, ne0);
    std::vector<uint8_t> w(rb * rows);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::uniform_real_distribution<float> ud(-0.01f, 0.01f);
    if (!random_bytes) {
        const FamilyEntry* e = family_entry(tc.id);
        std::vector<float> x(ne0);
        for (int64_t r = 0; r < rows; ++r) {
            for (auto& v : x) v = nd(rng);
            e->quantize(x.data(), w.data() + r * rb, ne0, nullptr);
        }
        return w;
    }
    for (auto& b : w) b = (uint8_t)(rng() & 255);
    // scales in [-0.01, 0.01], every 4th one tiny (fp16 subnormal range)
    auto scale = [&]() { return ud(rng) * (rng() % 4 == 0 ? 1e-3f : 1.0f); };
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* row = w.data() + r * rb;
        if (tc.meta == 2) { const uint16_t h = f32_to_f16(scale()); std::memcpy(row, &h, 2); }
        if (tc.meta == 4) { const float f = scale(); std::memcpy(row, &f, 4); }
        for (int64_t b = 0; b < ne0 / 256; ++b)
            for (int off : tc.f16_fields) {
                const uint16_t h = f32_to_f16(scale());
                std::memcpy(row + tc.meta + b * tc.bytes + off, &h, 2);
            }
    }
    return w;
}

// IQ6_K as its matmul kernels read it: the integer levels iq6nl (quant-formats.md §7.6 caveat).
void dequant_iq6_k_integer(const uint8_t* src, float* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += 212, dst += 256) {
        uint16_t dh, extra;
        std::memcpy(&dh, src, 2);
        std::memcpy(&extra, src + 2, 2);
        const double d = f16_to_f32(dh);
        for (int w = 0; w < 256; ++w) {
            const int c = w / 64, r = w % 64;
            const int low4 = (src[20 + 32 * c + r % 32] >> (4 * (r / 32))) & 15;
            const int high2 = (src[148 + 32 * (c / 2) + r % 32] >> (4 * (c % 2) + 2 * (r / 32))) & 3;
            const int s = w / 16;
            dst[w] = (float)(d * (int8_t)src[4 + s] * tables::kIq6nl[(low4 | high2 << 4) + 64 * ((extra >> s) & 1)]);
        }
    }
}

struct Problem {
    int64_t ne0, rows, nt, r0, r1, y_stride;
    std::vector<uint8_t> w, act;
    size_t act_rb;
};

std::vector<float> run(const MatmulKernel* k, const TypeCase& tc, const Problem& p) {
    std::vector<float> y(p.nt * p.y_stride, -12345.0f);
    k->run(p.w.data(), row_size(tc, p.ne0), p.ne0, p.r0, p.r1, p.act.data(), p.act_rb, p.nt, y.data(), p.y_stride);
    return y;
}

void check_type(const TypeCase& tc, bool random_bytes) {
    std::mt19937 rng(1234u + tc.id + (random_bytes ? 7 : 0));
    const MatmulKernel* ks = kernel(tc.id, Isa::scalar);
    ASSERT_NE(ks, nullptr) << tc.name;
    ASSERT_EQ(ks->act->id, (uint32_t)T_Q8_K);
    const FamilyEntry* fe = family_entry(tc.id);
    ASSERT_NE(fe, nullptr);
    struct Shape { int64_t ne0, rows, nt; };
    const Shape shapes[] = {{256, 7, 1}, {512, 13, 3}, {1536, 5, 8}, {256, 9, 17}, {4096, 3, 1}, {768, 11, 70}, {2048, 6, 5}};
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (const Shape& s : shapes) {
        Problem p;
        p.ne0 = s.ne0;
        p.rows = s.rows;
        p.nt = s.nt;
        p.r0 = s.rows > 4 ? 1 : 0;
        p.r1 = s.rows > 4 ? s.rows - 1 : s.rows;
        p.y_stride = s.rows + 3;
        p.w = make_weights(tc, s.ne0, s.rows, random_bytes, rng);
        p.act_rb = ks->act->row_bytes(s.ne0);
        p.act.resize(p.act_rb * s.nt);
        std::vector<float> x(s.ne0);
        std::vector<std::vector<float>> xa(s.nt, std::vector<float>(s.ne0));
        for (int64_t t = 0; t < s.nt; ++t) {
            for (auto& v : x) v = nd(rng) * (t % 3 == 0 ? 10.0f : 0.1f);
            ks->act->encode_row(x.data(), p.act.data() + t * p.act_rb, s.ne0);
            // decoded activations: d * q
            const uint8_t* a = p.act.data() + t * p.act_rb;
            for (int64_t b = 0; b < s.ne0 / 256; ++b) {
                float d;
                std::memcpy(&d, a + b * 296, 4);
                for (int j = 0; j < 256; ++j) xa[t][b * 256 + j] = d * (float)(int8_t)a[b * 296 + 8 + j];
            }
        }
        // float reference of the scalar kernel
        const std::vector<float> ys = run(ks, tc, p);
        std::vector<float> wrow(s.ne0);
        const size_t rb = row_size(tc, s.ne0);
        for (int64_t r = 0; r < s.rows; ++r) {
            if (tc.id == T_IQ6_K) dequant_iq6_k_integer(p.w.data() + r * rb, wrow.data(), s.ne0);
            else fe->dequant(p.w.data() + r * rb, wrow.data(), s.ne0);
            for (int64_t t = 0; t < s.nt; ++t) {
                const float got = ys[t * p.y_stride + r];
                if (r < p.r0 || r >= p.r1) {
                    EXPECT_EQ(got, -12345.0f) << tc.name << ": row outside [r0,r1) written";
                    continue;
                }
                double ref = 0, mag = 0;
                for (int64_t j = 0; j < s.ne0; ++j) {
                    ref += (double)wrow[j] * xa[t][j];
                    mag += std::fabs((double)wrow[j] * xa[t][j]);
                }
                ASSERT_NEAR(got, ref, 2e-5 * mag + 1e-30) << tc.name << " scalar ne0=" << s.ne0 << " r=" << r << " t=" << t;
            }
        }
        // SIMD kernels against scalar
        for (Isa isa : {Isa::avx2, Isa::avx512}) {
            const MatmulKernel* kv = kernel(tc.id, isa);
            ASSERT_NE(kv, nullptr) << tc.name << " " << isa_name(isa);
            if (!cpu_has(isa)) continue;
            ASSERT_EQ(kv->act->id, (uint32_t)T_Q8_K);
            const std::vector<float> yv = run(kv, tc, p);
            for (int64_t t = 0; t < s.nt; ++t)
                for (int64_t r = 0; r < s.rows; ++r) {
                    const float a = ys[t * p.y_stride + r], b = yv[t * p.y_stride + r];
                    if (r < p.r0 || r >= p.r1) { EXPECT_EQ(b, -12345.0f); continue; }
                    double mag = 0;
                    fe->dequant(p.w.data() + r * rb, wrow.data(), s.ne0);
                    for (int64_t j = 0; j < s.ne0; ++j) mag += std::fabs((double)wrow[j] * xa[t][j]);
                    ASSERT_NEAR(b, a, 1e-5 * mag + 1e-30)
                        << tc.name << " " << isa_name(isa) << " ne0=" << s.ne0 << " r=" << r << " t=" << t;
                }
        }
    }
}

// Every kernel's activation encoder writes the bytes of the reference Q8_K encoder.
TEST(KiqkKernelsAct, EncodersMatchReference) {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t ne0 = 1024;
    std::vector<float> x(ne0);
    for (auto& v : x) v = nd(rng);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // all-zero block
    // block 2: amax 127 -> id 1, exact ties x.5 must round to even
    for (int j = 0; j < 256; ++j) x[512 + j] = (float)(j % 20) - 9.5f;
    x[512 + 77] = 127.0f;
    std::vector<uint8_t> ref(q8_k_row_bytes(ne0)), got(ref.size());
    encode_q8_k_row(x.data(), ref.data(), ne0);
    EXPECT_EQ((int8_t)ref[2 * 296 + 8 + 0], -10);  // -9.5 -> -10 (even)
    EXPECT_EQ((int8_t)ref[2 * 296 + 8 + 1], -8);   // -8.5 -> -8
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        if (!cpu_has(isa)) continue;
        for (const TypeCase& tc : cases()) {
            const MatmulKernel* k = kernel(tc.id, isa);
            ASSERT_NE(k, nullptr);
            ASSERT_EQ(k->act->id, (uint32_t)T_Q8_K);
            ASSERT_EQ(k->act->row_bytes(ne0), ref.size());
            std::fill(got.begin(), got.end(), 0xAB);
            k->act->encode_row(x.data(), got.data(), ne0);
            ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size())) << tc.name << " " << isa_name(isa);
        }
    }
}

class KiqkKernels : public ::testing::TestWithParam<size_t> {};

TEST_P(KiqkKernels, QuantizedWeights) { check_type(cases()[GetParam()], false); }
TEST_P(KiqkKernels, RandomBitPatterns) { check_type(cases()[GetParam()], true); }

INSTANTIATE_TEST_SUITE_P(AllTypes, KiqkKernels, ::testing::Range<size_t>(0, 17),
                         [](const ::testing::TestParamInfo<size_t>& i) { return std::string(cases()[i.param].name); });

}  // namespace
