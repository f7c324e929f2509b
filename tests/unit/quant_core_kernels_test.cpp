// Matmul kernels of the float and 32-block types, every ISA this CPU runs:
//  * against a float64 dot product of the decoded weights with the decoded (encoded) activations;
//  * SIMD against the scalar kernel;
//  * row splits give identical results and never write outside their rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::cpu;
using namespace ikllm::quant;

namespace {

std::vector<float> random_matrix(int64_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, scale);
    std::uniform_int_distribution<int> pick(0, 199);
    std::vector<float> v((size_t)n);
    for (auto& x : v) {
        x = nd(rng);
        if (pick(rng) == 0) x *= 8.0f;  // outliers
        if (pick(rng) == 1) x = 0.0f;
    }
    return v;
}

// Activation rows decoded back to the values the kernel multiplies.
std::vector<float> decode_act(const ActFormat& f, const std::vector<uint8_t>& enc, int64_t ne0, int64_t nt) {
    std::vector<float> out((size_t)(ne0 * nt));
    const size_t rb = f.row_bytes(ne0);
    for (int64_t t = 0; t < nt; ++t) {
        const uint8_t* a = enc.data() + t * rb;
        float* y = out.data() + t * ne0;
        switch (f.id) {
            case T_F32: std::memcpy(y, a, (size_t)ne0 * 4); break;
            case T_Q8_2_X4: act_q8_2_x4_decode_row(a, y, ne0); break;
            case T_Q8_0: act_q8_0_decode_row(a, y, ne0); break;
            default: find_type(f.id)->dequant(a, y, ne0); break;  // BF16, F16
        }
    }
    return out;
}

struct Problem {
    uint32_t type;
    int64_t ne0, rows, nt;
    std::vector<uint8_t> w;     // quantized weights
    std::vector<float> wdec;    // decoded weights
    std::vector<float> x;       // float activations
};

Problem make_problem(uint32_t type, int64_t ne0, int64_t rows, int64_t nt, uint32_t seed) {
    Problem p{type, ne0, rows, nt, {}, {}, {}};
    const TypeTraits* tt = find_type(type);
    const std::vector<float> wf = random_matrix(ne0 * rows, seed, 0.05f);
    const size_t rb = row_bytes(*tt, ne0);
    p.w.resize(rb * (size_t)rows);
    p.wdec.resize((size_t)(ne0 * rows));
    for (int64_t r = 0; r < rows; r += tt->interleave) {
        tt->quantize(wf.data() + r * ne0, p.w.data() + r * rb, ne0, nullptr);
        tt->dequant(p.w.data() + r * rb, p.wdec.data() + r * ne0, ne0);
    }
    p.x = random_matrix(ne0 * nt, seed + 1000, 1.0f);
    return p;
}

// y[t * ys + r] for rows [r0, r1); y pre-filled with NaN to catch stray writes.
std::vector<float> run_kernel(const MatmulKernel& k, const Problem& p, const std::vector<uint8_t>& act, int64_t ys,
                              const std::vector<std::pair<int64_t, int64_t>>& splits) {
    const TypeTraits* tt = find_type(p.type);
    std::vector<float> y((size_t)(ys * p.nt), std::numeric_limits<float>::quiet_NaN());
    for (auto [r0, r1] : splits)
        k.run(p.w.data(), row_bytes(*tt, p.ne0), p.ne0, r0, r1, act.data(), k.act->row_bytes(p.ne0), p.nt, y.data(), ys);
    return y;
}

std::vector<uint8_t> encode(const ActFormat& f, const Problem& p) {
    const size_t rb = f.row_bytes(p.ne0);
    std::vector<uint8_t> a(rb * (size_t)p.nt);
    for (int64_t t = 0; t < p.nt; ++t) f.encode_row(p.x.data() + t * p.ne0, a.data() + t * rb, p.ne0);
    return a;
}

std::vector<Isa> runnable_isas() {
    std::vector<Isa> v{Isa::scalar};
    const Isa hw = detected_isa();
    if (hw == Isa::avx2 || hw == Isa::avx512) v.push_back(Isa::avx2);
    if (hw == Isa::avx512) v.push_back(Isa::avx512);
    if (hw == Isa::neon) v.push_back(Isa::neon);
    return v;
}

// Checks one kernel on one problem; returns the largest error relative to sum |w*a|.
double check_kernel(const MatmulKernel& k, const Problem& p, double rel_tol, const std::vector<float>* scalar_y,
                    std::vector<float>* y_out, bool same_bits_as_scalar = false) {
    const std::vector<uint8_t> act = encode(*k.act, p);
    const std::vector<float> xdec = decode_act(*k.act, act, p.ne0, p.nt);
    const int64_t ys = p.rows + 3;  // padded output stride
    const std::vector<float> y = run_kernel(k, p, act, ys, {{0, p.rows}});
    double worst = 0;
    for (int64_t t = 0; t < p.nt; ++t) {
        for (int64_t r = 0; r < p.rows; ++r) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < p.ne0; ++i) {
                const double prod = (double)p.wdec[r * p.ne0 + i] * xdec[t * p.ne0 + i];
                ref += prod;
                mag += std::fabs(prod);
            }
            const float got = y[t * ys + r];
            const double err = std::fabs(got - ref) / (mag > 0 ? mag : 1.0);
            worst = std::max(worst, err);
            EXPECT_LE(err, rel_tol) << "row " << r << " token " << t << ": " << got << " vs " << ref;
            if (scalar_y) {
                const double e2 = std::fabs((double)got - (*scalar_y)[t * ys + r]) / (mag > 0 ? mag : 1.0);
                EXPECT_LE(e2, rel_tol) << "vs scalar, row " << r << " token " << t;
                if (same_bits_as_scalar) {
                    EXPECT_EQ(f32_to_bits(got), f32_to_bits((*scalar_y)[t * ys + r]))
                        << "not bit-identical to scalar, row " << r << " token " << t << ": " << got << " vs "
                        << (*scalar_y)[t * ys + r];
                }
            }
        }
        for (int64_t r = p.rows; r < ys; ++r) EXPECT_TRUE(std::isnan(y[t * ys + r])) << "wrote outside rows";
    }
    // splitting the row range must not change any output
    const int64_t il = find_type(p.type)->interleave;
    if (p.rows >= 3 * il) {
        const int64_t a = il, b = (p.rows / il) / 2 * il;
        const std::vector<float> y2 = run_kernel(k, p, act, ys, {{b, p.rows}, {0, a}, {a, b}});
        for (size_t i = 0; i < y.size(); ++i)
            if (!std::isnan(y[i])) {
                EXPECT_EQ(f32_to_bits(y[i]), f32_to_bits(y2[i])) << "split changed output " << i;
            }
    }
    if (y_out) *y_out = y;
    return worst;
}

// Where the CPU has AVX-VNNI, find_matmul_exact(type, avx2) gives the VNNI build of the AVX2
// kernel (legacy_avxvnni.cpp); the plain AVX2 build is checked too, straight from its table.
const MatmulKernel* plain_avx2_kernel(uint32_t type) {
    if (!avxvnni_usable()) return nullptr;
    const KernelTable t = legacy_kernels_avx2();
    for (size_t i = 0; i < t.count; ++i)
        if (t.entries[i].weight_type == type) return &t.entries[i];
    return nullptr;
}

struct TypeCase {
    uint32_t type;
    double tol;
    bool same_bits = false;  // every ISA rounds exactly like the scalar kernel
};
// Float kernels sum in float32 (error grows with ne0); quant kernels have exact integer block dots.
// The symmetric 32-weight types round like the reference (offset codes whose offset term nearly
// cancels, legacy_sym_accum.h): a looser bound against float64, but bit-identical across ISAs.
const TypeCase kCases[] = {
    {T_F32, 2e-6}, {T_F16, 2e-6}, {T_BF16, 2e-6}, {T_Q4_0, 1e-5, true}, {T_Q4_1, 5e-7}, {T_Q5_0, 1e-5, true},
    {T_Q5_1, 5e-7}, {T_Q8_0, 1e-5, true}, {T_Q6_0, 1e-5, true}, {T_IQ4_NL, 1e-5, true}, {T_MXFP4, 1e-5, true},
};

}  // namespace

TEST(QuantCoreKernels, EveryIsaHasEveryCoreKernel) {
    for (const TypeCase& c : kCases)
        for (Isa isa : runnable_isas()) {
            const MatmulKernel* k = find_matmul_exact(c.type, isa);
            ASSERT_NE(k, nullptr) << find_type(c.type)->name << " " << isa_name(isa);
            EXPECT_EQ(k->weight_type, c.type);
            EXPECT_EQ(k->isa, isa);
            const MatmulKernel* best = find_matmul(c.type, isa);
            ASSERT_NE(best, nullptr);
            EXPECT_EQ(best->isa, isa);
        }
}

TEST(QuantCoreKernels, MatchFloat64ReferenceAndScalar) {
    struct Shape { int64_t ne0, rows, nt; };
    // Shapes of 32 tokens or more take the prompt-batch panel GEMM: rows not a multiple of the
    // 16-row panel, token counts with 8/4/1 remainders, rows with leftover (non-x4) blocks, and
    // rows spanning groups of 2 / 3 panels plus single panels (53 rows, 37 tokens: 4-token tiles
    // and one single token). Single tokens: an odd group of 4 blocks and leftover blocks (416), and
    // a row longer than the single-token kernel's precomputed activation (33024).
    const Shape shapes[] = {{32, 5, 1},    {96, 7, 3},    {160, 9, 8},   {256, 13, 17}, {512, 11, 1},
                            {1024, 6, 8},  {800, 17, 17}, {4096, 5, 3},  {224, 21, 77}, {512, 35, 64},
                            {96, 3, 131}, {256, 19, 32}, {160, 7, 40}, {128, 4, 31}, {288, 9, 16}, {672, 5, 2}, {256, 512, 1}, {512, 256, 1}, {256, 53, 37},
                            {160, 5, 1}, {416, 3, 1}, {33024, 2, 1}};
    uint32_t seed = 1;
    double worst[4] = {};
    for (const TypeCase& c : kCases) {
        for (const Shape& s : shapes) {
            const Problem p = make_problem(c.type, s.ne0, s.rows, s.nt, seed++);
            SCOPED_TRACE(std::string(find_type(c.type)->name) + " ne0=" + std::to_string(s.ne0) +
                         " rows=" + std::to_string(s.rows) + " nt=" + std::to_string(s.nt));
            std::vector<float> y_scalar;
            for (Isa isa : runnable_isas()) {
                SCOPED_TRACE(isa_name(isa));
                const MatmulKernel* k = find_matmul_exact(c.type, isa);
                ASSERT_NE(k, nullptr);
                const double e = check_kernel(*k, p, c.tol, isa == Isa::scalar ? nullptr : &y_scalar,
                                              isa == Isa::scalar ? &y_scalar : nullptr, c.same_bits);
                worst[(int)isa] = std::max(worst[(int)isa], e);
            }
            if (const MatmulKernel* k = plain_avx2_kernel(c.type)) {
                SCOPED_TRACE("avx2 without AVX-VNNI");
                check_kernel(*k, p, c.tol, &y_scalar, nullptr, c.same_bits);
            }
        }
        printf("  %-7s worst error / sum|w*a|:", find_type(c.type)->name);
        for (Isa isa : runnable_isas()) printf("  %s %.2e", isa_name(isa), worst[(int)isa]);
        printf("\n");
        for (double& w : worst) w = 0;
    }
}

// Float weights have 1-element blocks: rows of any length, including SIMD tails.
// The largest codes against the largest activation codes: the AVX2 kernels add several maddubs
// pair sums in int16 before widening (sym_lanes_avx2.h, kDirectSteps), which holds only while
// their sum stays below 32768 -- random data never gets near that. Every code byte of every
// block is set to its largest code (Q4_0 15, Q5_0 31, Q6_0 63, MXFP4 +12, IQ4_NL +113, Q8_0
// +127), the activations are all +1 or all -1 (codes +-127); one token, the step form (5) and
// the batch form (40) must give the scalar kernel's bits.
TEST(QuantCoreKernels, LargestCodesMatchScalarBits) {
    struct Fill {
        uint32_t type;
        int code_from;   // first code byte of a block (the scale bytes before it are kept)
        uint8_t byte;    // every code byte
    };
    const Fill fills[] = {{T_Q4_0, 2, 0xFF}, {T_Q5_0, 2, 0xFF}, {T_Q6_0, 2, 0xFF},
                          {T_MXFP4, 1, 0x77}, {T_IQ4_NL, 2, 0xFF}, {T_Q8_0, 2, 0x7F}};
    uint32_t seed = 500;
    for (const Fill& f : fills)
        for (float sign : {1.0f, -1.0f})
            for (int64_t nt : {1, 5, 40}) {
                Problem p = make_problem(f.type, 256, 16, nt, seed++);
                const TypeTraits* tt = find_type(f.type);
                for (size_t b = 0; b < p.w.size(); b += (size_t)tt->block_bytes)
                    std::memset(p.w.data() + b + f.code_from, f.byte, (size_t)(tt->block_bytes - f.code_from));
                const size_t rb = row_bytes(*tt, p.ne0);
                for (int64_t r = 0; r < p.rows; ++r) tt->dequant(p.w.data() + r * rb, p.wdec.data() + r * p.ne0, p.ne0);
                for (float& x : p.x) x = sign;
                SCOPED_TRACE(std::string(tt->name) + " sign " + std::to_string(sign) + " nt=" + std::to_string(nt));
                std::vector<float> y_scalar;
                for (Isa isa : runnable_isas()) {
                    SCOPED_TRACE(isa_name(isa));
                    const MatmulKernel* k = find_matmul_exact(f.type, isa);
                    ASSERT_NE(k, nullptr);
                    check_kernel(*k, p, 1e-5, isa == Isa::scalar ? nullptr : &y_scalar, isa == Isa::scalar ? &y_scalar : nullptr,
                                 true);
                }
                if (const MatmulKernel* k = plain_avx2_kernel(f.type)) check_kernel(*k, p, 1e-5, &y_scalar, nullptr, true);
            }
}

TEST(QuantCoreKernels, FloatKernelsHandleOddLengths) {
    uint32_t seed = 500;
    for (uint32_t type : {T_F32, T_F16, T_BF16})
        for (int64_t ne0 : {1, 7, 15, 17, 31, 33, 63, 65, 100})
            for (int64_t nt : {1, 5}) {
                const Problem p = make_problem(type, ne0, 6, nt, seed++);
                SCOPED_TRACE(std::string(find_type(type)->name) + " ne0=" + std::to_string(ne0));
                std::vector<float> y_scalar;
                for (Isa isa : runnable_isas()) {
                    SCOPED_TRACE(isa_name(isa));
                    check_kernel(*find_matmul_exact(type, isa), p, 2e-6, isa == Isa::scalar ? nullptr : &y_scalar,
                                 isa == Isa::scalar ? &y_scalar : nullptr);
                }
            }
}

// Types without their own kernel run through the generic dequantize-then-F32 kernel.
TEST(QuantCoreKernels, GenericFallbackForDecodableTypes) {
    for (uint32_t type : {T_Q1_0_G128, T_F64}) {
        EXPECT_EQ(find_matmul_exact(type, Isa::scalar), nullptr);
        for (Isa isa : runnable_isas()) {
            const MatmulKernel* k = find_matmul(type, isa);
            ASSERT_NE(k, nullptr) << find_type(type)->name;
            EXPECT_EQ(k->act->id, (uint32_t)T_F32);
            const Problem p = make_problem(type, 512, 37, 5, 900 + (uint32_t)isa);
            check_kernel(*k, p, 2e-5, nullptr, nullptr);
        }
    }
    // not decodable at all -> no kernel
    EXPECT_EQ(find_matmul(T_I32, Isa::scalar), nullptr);
    EXPECT_EQ(find_matmul(12345, Isa::scalar), nullptr);
}

TEST(QuantCoreKernels, IsaSelection) {
    EXPECT_STREQ(isa_name(Isa::scalar), "scalar");
    EXPECT_STREQ(isa_name(Isa::avx512), "avx512");
    // find_matmul never returns a kernel above what the CPU can run
    const MatmulKernel* k = find_matmul(T_Q4_0, Isa::avx512);
    ASSERT_NE(k, nullptr);
    EXPECT_LE((int)k->isa, (int)detected_isa());
    EXPECT_EQ(find_matmul(T_Q4_0, Isa::scalar)->isa, Isa::scalar);
    if (detected_isa() == Isa::avx512) {
        EXPECT_EQ(k->isa, Isa::avx512);
    }
}
