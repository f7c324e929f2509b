// Quantizers of the own 4-row formats IQ1_S_R4 / IQ1_M_R4 (docs: quant-formats.md §12.8): round
// trips through the registered decoders, quality against plain IQ1_S / IQ1_M on the same data,
// determinism, importance-matrix use, the documented all-zero block encoding, and (with the
// reference data) quality against the reference quantizer's IQ1_S_R4 file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/grid_tables.h"
#include "quant/type_traits.h"
#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 0.02f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, sigma);
    std::vector<float> x(n);
    for (auto& v : x) v = nd(rng);
    return x;
}

// Quantizes x (rows of ne0, a multiple of the type's interleave) group by group.
std::vector<uint8_t> quantize(uint32_t type, const std::vector<float>& x, int64_t ne0, const float* imatrix) {
    const TypeTraits* t = find_type(type);
    const int64_t N = t->interleave, rows = (int64_t)x.size() / ne0;
    const size_t rb = row_bytes(*t, ne0);
    std::vector<uint8_t> q(rb * (size_t)rows);
    for (int64_t g = 0; g < rows / N; ++g) t->quantize(x.data() + g * N * ne0, q.data() + rb * (size_t)(g * N), ne0, imatrix);
    return q;
}

std::vector<float> dequantize(uint32_t type, const std::vector<uint8_t>& q, int64_t ne0, int64_t rows) {
    const TypeTraits* t = find_type(type);
    const int64_t N = t->interleave;
    const size_t rb = row_bytes(*t, ne0);
    std::vector<float> y((size_t)(ne0 * rows));
    for (int64_t g = 0; g < rows / N; ++g) t->dequant(q.data() + rb * (size_t)(g * N), y.data() + g * N * ne0, ne0);
    return y;
}

std::vector<float> round_trip(uint32_t type, const std::vector<float>& x, int64_t ne0, const float* imatrix) {
    return dequantize(type, quantize(type, x, ne0, imatrix), ne0, (int64_t)x.size() / ne0);
}

double rmse(const std::vector<float>& x, const std::vector<float>& y, int64_t ne0 = 0, const float* imatrix = nullptr) {
    double e = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double w = imatrix ? imatrix[i % (size_t)ne0] : 1.0;
        e += w * (double)(x[i] - y[i]) * (x[i] - y[i]);
        s += w;
    }
    return std::sqrt(e / s);
}

bool all_finite(const std::vector<float>& y) {
    for (float v : y)
        if (!std::isfinite(v)) return false;
    return true;
}

struct Pair {
    uint32_t plain, r4;
};
constexpr Pair kPairs[] = {{T_IQ1_S, T_IQ1_S_R4}, {T_IQ1_M, T_IQ1_M_R4}};

}  // namespace

TEST(QuantIq1R4, QuantizersRegistered) {
    for (uint32_t id : {(uint32_t)T_IQ1_S_R4, (uint32_t)T_IQ1_M_R4}) {
        const TypeTraits* t = find_type(id);
        ASSERT_NE(t, nullptr);
        EXPECT_NE(t->quantize, nullptr) << t->name;
        EXPECT_NE(t->dequant, nullptr) << t->name;
        EXPECT_EQ(t->interleave, 4);
        EXPECT_EQ(t->block_elems, 32);
        EXPECT_EQ(t->row_meta_bytes, 2);
    }
}

// RMSE within 10% of the plain type's on the same Gaussian data, for short and long rows.
TEST(QuantIq1R4, GaussianRmseComparableToPlain) {
    for (const Pair& p : kPairs) {
        for (int64_t ne0 : {256, 4096}) {
            const int64_t rows = ne0 == 256 ? 64 : 16;
            const std::vector<float> x = gaussian((size_t)(ne0 * rows), 1234u + (uint32_t)ne0);
            const std::vector<float> yp = round_trip(p.plain, x, ne0, nullptr);
            const std::vector<float> yr = round_trip(p.r4, x, ne0, nullptr);
            ASSERT_TRUE(all_finite(yp));
            ASSERT_TRUE(all_finite(yr));
            const double ep = rmse(x, yp), er = rmse(x, yr);
            std::printf("[iq1_r4] ne0=%-5lld %-8s rmse %.6f  %-8s rmse %.6f  ratio %.4f (sigma 0.02)\n",
                        (long long)ne0, find_type(p.plain)->name, ep, find_type(p.r4)->name, er, er / ep);
            EXPECT_LT(er, 1.10 * ep) << find_type(p.r4)->name << " ne0=" << ne0;
            EXPECT_LT(er, 0.02 * 0.75) << find_type(p.r4)->name;  // well below the signal itself
        }
    }
}

// ne0 only needs to be a multiple of 32 (not of 256), and scales spread over decades work.
TEST(QuantIq1R4, OddWidthsAndScalesFinite) {
    for (uint32_t type : {(uint32_t)T_IQ1_S_R4, (uint32_t)T_IQ1_M_R4}) {
        for (int64_t ne0 : {32, 96, 160}) {
            std::vector<float> x = gaussian((size_t)(4 * ne0), 99u + (uint32_t)ne0, 1.0f);
            for (int64_t k = 0; k < 4; ++k)  // rows with very different magnitudes
                for (int64_t j = 0; j < ne0; ++j) x[(size_t)(k * ne0 + j)] *= std::pow(10.0f, (float)(k - 2));
            const std::vector<float> y = round_trip(type, x, ne0, nullptr);
            ASSERT_TRUE(all_finite(y)) << find_type(type)->name;
            for (int64_t k = 0; k < 4; ++k) {
                double e = 0, s = 0;
                for (int64_t j = 0; j < ne0; ++j) {
                    const double a = x[(size_t)(k * ne0 + j)], b = y[(size_t)(k * ne0 + j)];
                    e += (a - b) * (a - b);
                    s += a * a;
                }
                EXPECT_LT(std::sqrt(e / s), 0.8) << find_type(type)->name << " ne0=" << ne0 << " row " << k;
            }
        }
    }
}

TEST(QuantIq1R4, Deterministic) {
    const int64_t ne0 = 512;
    const std::vector<float> x = gaussian((size_t)(8 * ne0), 5u);
    std::vector<float> imat(ne0);
    for (int64_t j = 0; j < ne0; ++j) imat[(size_t)j] = 0.5f + (float)(j % 7);
    for (uint32_t type : {(uint32_t)T_IQ1_S_R4, (uint32_t)T_IQ1_M_R4})
        for (const float* im : {(const float*)nullptr, (const float*)imat.data()}) {
            const std::vector<uint8_t> a = quantize(type, x, ne0, im), b = quantize(type, x, ne0, im);
            EXPECT_EQ(a, b) << find_type(type)->name;
            const std::vector<float> ya = dequantize(type, a, ne0, 8), yb = dequantize(type, b, ne0, 8);
            EXPECT_EQ(ya, yb);
            EXPECT_TRUE(all_finite(ya));
        }
}

// Quantizing with the importance matrix must lower the importance-weighted error.
TEST(QuantIq1R4, ImatrixImprovesWeightedError) {
    const int64_t ne0 = 1024, rows = 16;
    const std::vector<float> x = gaussian((size_t)(ne0 * rows), 77u);
    std::mt19937 rng(3);
    std::exponential_distribution<float> ex(1.0f);
    std::vector<float> imat((size_t)ne0);
    for (auto& v : imat) v = 0.05f + 4.0f * ex(rng) * ex(rng);  // heavy-tailed column importance
    for (uint32_t type : {(uint32_t)T_IQ1_S_R4, (uint32_t)T_IQ1_M_R4}) {
        const double plain = rmse(x, round_trip(type, x, ne0, nullptr), ne0, imat.data());
        const double weighted = rmse(x, round_trip(type, x, ne0, imat.data()), ne0, imat.data());
        std::printf("[iq1_r4] %-8s imatrix-weighted rmse: without imatrix %.6f, with %.6f\n", find_type(type)->name,
                    plain, weighted);
        EXPECT_LT(weighted, 0.97 * plain) << find_type(type)->name;
    }
}

// §12.8: an all-zero 32-column block of IQ1_S_R4 is grid index 1029 (all zero), scale 0, delta
// +1/8, decoding to d_k/8; IQ1_M_R4's zero block (scale 0) decodes to 0; all-zero rows give d_k = 0.
TEST(QuantIq1R4, ZeroBlocksAndRows) {
    EXPECT_EQ(kIq1sGrid[1029], 0u);
    const int64_t ne0 = 128;
    std::vector<float> x = gaussian((size_t)(4 * ne0), 11u);
    for (int64_t j = 32; j < 64; ++j) x[(size_t)j] = 0.0f;                              // row 0, block 1
    for (int64_t j = 0; j < ne0; ++j) x[(size_t)(2 * ne0 + j)] = 0.0f;                 // row 2 entirely
    for (uint32_t type : {(uint32_t)T_IQ1_S_R4, (uint32_t)T_IQ1_M_R4}) {
        const bool is_s = type == T_IQ1_S_R4;
        const std::vector<uint8_t> q = quantize(type, x, ne0, nullptr);
        const std::vector<float> y = dequantize(type, q, ne0, 4);
        const float d0 = f16_to_f32((uint16_t)(q[0] | q[1] << 8));
        ASSERT_GT(d0, 0.0f);
        EXPECT_EQ(q[4] | q[5] << 8, 0) << "all-zero row must get d_k = 0";
        for (int64_t j = 0; j < ne0; ++j) EXPECT_EQ(y[(size_t)(2 * ne0 + j)], 0.0f);
        const uint8_t* blk = q.data() + 8 + (is_s ? 24 : 28) * 1;  // 32-column block 1, row k = 0
        if (is_s) {
            for (int i = 0; i < 4; ++i) EXPECT_EQ(blk[4 * i], 1029 & 255);
            EXPECT_EQ(blk[16] | blk[17] << 8, 1029 >> 8 | 1029 >> 8 << 3 | 1029 >> 8 << 6 | 1029 >> 8 << 9);
            for (int64_t j = 32; j < 64; ++j) EXPECT_EQ(y[(size_t)j], 0.125f * d0);
        } else {
            EXPECT_EQ(blk[24], 0);
            for (int64_t j = 32; j < 64; ++j) EXPECT_EQ(y[(size_t)j], 0.0f);
        }
        // the rest of row 0 and rows 1, 3 still quantize sensibly
        double e = 0, s = 0;
        for (int64_t r : {0, 1, 3})
            for (int64_t j = 0; j < ne0; ++j) {
                const size_t i = (size_t)(r * ne0 + j);
                e += (x[i] - y[i]) * (x[i] - y[i]);
                s += x[i] * x[i];
            }
        EXPECT_LT(std::sqrt(e / s), 0.75) << find_type(type)->name;
    }
}

// On the reference matrix, our error (no importance matrix) must be close to that of the
// reference quantizer's IQ1_S_R4 file (made with one). No IQ1_M_R4 reference file exists.
TEST(QuantIq1R4, QualityComparableToReferenceFile) {
    IKLLM_REQUIRE_REFDATA();
    auto src = gguf::File::open(test::refdata_dir() + "/models/llama-q-f32.gguf", test::gti_geometry);
    auto ref = test::gti_open_quant("llama-q-IQ1_S_R4");
    int compared = 0;
    double se_ref = 0, se_ours = 0, se_plain = 0;
    for (const gguf::TensorInfo& r : ref->tensors()) {
        if (r.type != T_IQ1_S_R4) continue;
        const gguf::TensorInfo* f = src->find_tensor(r.name);
        ASSERT_TRUE(f && f->type == T_F32) << r.name;
        const float* xs = reinterpret_cast<const float*>(f->data);
        const std::vector<float> x(xs, xs + f->n_elements());
        const int64_t ne0 = f->ne[0];
        const std::vector<float> yr = test::gti_decode(r, r.n_rows());
        const std::vector<float> yo = round_trip(T_IQ1_S_R4, x, ne0, nullptr);
        const double er = rmse(x, yr), eo = rmse(x, yo);
        se_ref += er * er * (double)x.size();
        se_ours += eo * eo * (double)x.size();
        if (ne0 % 256 == 0) {
            const double ep = rmse(x, round_trip(T_IQ1_S, x, ne0, nullptr));
            se_plain += ep * ep * (double)x.size();
        }
        std::printf("[iq1_r4] %-24s ne0=%-5lld reference %.5e  ours %.5e  ratio %.4f\n", r.name.c_str(), (long long)ne0,
                    er, eo, eo / er);
        EXPECT_LT(eo, 1.15 * er) << r.name;
        ++compared;
    }
    std::printf("[iq1_r4] total squared error: reference %.5e ours %.5e (plain iq1_s %.5e)\n", se_ref, se_ours, se_plain);
    EXPECT_GT(compared, 0);
}
