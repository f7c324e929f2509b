// Q2_K_R8, Q3_K_R8, Q4_K_R8, Q5_K_R8, Q6_K_R8, IQ2_K_R8, IQ3_K_R8, IQ4_K_R8, IQ4_XS_X8, IQ2_KS_R8, IQ3_KS_R8, IQ4_KS_R8, IQ5_KS_R8 and IQ2_KL_R8,
// ikllm's run-time layouts of the K-quants, IQ2_K, IQ3_K, IQ4_K, IQ4_XS, IQ2_KS, IQ3_KS, IQ4_KS, IQ5_KS and IQ2_KL (quant/kquant_r8.h,
// kernels/kquant_r8_avx512.h, kernels/iqk_r8_avx512.h). Layout: packing 8 plain rows and unpacking them gives the same bytes
// back, for random code and scale bits; the group decodes to the plain rows' values; the types
// never load from a file (api_badinput_test). AVX-512 kernels: below each type's plain_from tokens
// (Q4_K, Q5_K 16, IQ2_K, IQ3_K, IQ2_KS, IQ3_KS, IQ4_KS, IQ5_KS, IQ2_KL, IQ4_K, IQ4_XS, Q2_K and Q3_K 32, Q6_K 192) within rounding of the products' magnitude of the scalar reference
// (which unpacks each group and runs the plain type's scalar kernel, token by token) and
// batch-invariant (every token of a call gives the bits it gives alone); from there the plain
// type's AVX-512 kernel on the rows before packing, bit for bit (its panels or unpacked slabs). Row sub-ranges, strided outputs, odd group and block counts, token counts
// around every tile size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/act_q8_k.h"
#include "quant/kquant_r8.h"
#include "quant/repack.h"
#include "test_support.h"
#include "quant/type_traits.h"
#include "kernel_test_util.h"

using namespace ikllm;
using namespace ikllm::quant;
using ikllm::cpu::Isa;
using Case = ikllm::test::KernelCase;
using ikllm::test::run_kernel_rows;

namespace {

// Plain rows from random floats, then (random_bits) every block's code and scale bytes overwritten
// with random bits (the quantizer rarely reaches the extremes); the fp16 factors are kept.
std::vector<uint8_t> plain_rows(uint32_t type, int64_t ne0, int64_t rows, std::mt19937& rng, bool random_bits) {
    const TypeTraits* tt = find_type(type);
    const size_t rb = row_bytes(*tt, ne0);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)ne0);
    std::vector<uint8_t> w(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : x) v = 0.02f * nd(rng);
        tt->quantize(x.data(), w.data() + rb * r, ne0, nullptr);
        if (!random_bits) continue;
        const int bb = tt->block_bytes, meta = tt->row_meta_bytes;
        // The fp16 factors stay: Q4_K, Q5_K d, dmin first; IQ4_K, IQ4_XS, IQ2_K, IQ3_K d first; Q6_K, Q3_K d last; Q2_K d, dmin last;
        // IQ2_KS, IQ3_KS, IQ4_KS, IQ5_KS, IQ2_KL: the row scale (metadata) before the blocks.
        const int lo = type == T_Q4_K || type == T_Q5_K ? 4 : type == T_IQ4_K || type == T_IQ4_XS || type == T_IQ2_K || type == T_IQ3_K ? 2 : 0,
                  hi = type == T_Q6_K || type == T_Q3_K ? bb - 2 : type == T_Q2_K ? bb - 4 : bb;
        for (int64_t b = 0; b < ne0 / 256; ++b)
            for (int i = lo; i < hi; ++i) w[rb * r + meta + (size_t)bb * b + i] = (uint8_t)rng();
    }
    return w;
}

// The activation row's values (Q8_2_X4 or Q8_K), for the tolerance's magnitude.
void decode_act(uint32_t format, const uint8_t* row, float* out, int64_t ne0) {
    if (format != T_Q8_K) return act_q8_2_x4_decode_row(row, out, ne0);
    for (int64_t b = 0; b < ne0 / 256; ++b) {
        const uint8_t* blk = row + (size_t)kQ8KBlockBytes * b;
        float d;
        std::memcpy(&d, blk + kQ8KOffD, 4);
        for (int i = 0; i < 256; ++i) out[256 * b + i] = d * (float)(int8_t)blk[kQ8KOffQs + i];
    }
}

}  // namespace

TEST(Q4KR8Layout, RegisteredAsRunTimeLayouts) {
    const TypeTraits* r8 = find_type(T_Q4_K_R8);
    const TypeTraits* plain = find_type(T_Q4_K);
    ASSERT_TRUE(r8 && plain);
    EXPECT_EQ(r8->interleave, 8);
    EXPECT_EQ(row_bytes(*r8, 4096), row_bytes(*plain, 4096));  // converted in place
    EXPECT_TRUE(is_runtime_layout(T_Q4_K_R8));
    EXPECT_FALSE(is_runtime_layout(T_Q8_K_R8));
    EXPECT_EQ(r8->quantize, nullptr);  // never written by ikllm quantize
    EXPECT_EQ(repack_base(T_Q4_K_R8), (uint32_t)T_Q4_K);
    EXPECT_EQ(repack_target(T_Q4_K), (uint32_t)T_Q4_K_R4);  // files keep the reference's form
    const TypeTraits* q6 = find_type(T_Q6_K_R8);
    ASSERT_TRUE(q6);
    EXPECT_EQ(q6->interleave, 8);
    EXPECT_EQ(row_bytes(*q6, 4096), row_bytes(*find_type(T_Q6_K), 4096));
    EXPECT_TRUE(is_runtime_layout(T_Q6_K_R8));
    EXPECT_EQ(repack_base(T_Q6_K_R8), (uint32_t)T_Q6_K);
    const TypeTraits* iq4 = find_type(T_IQ4_K_R8);
    ASSERT_TRUE(iq4);
    EXPECT_EQ(iq4->interleave, 8);
    EXPECT_EQ(row_bytes(*iq4, 4096), row_bytes(*find_type(T_IQ4_K), 4096));
    EXPECT_TRUE(is_runtime_layout(T_IQ4_K_R8));
    EXPECT_EQ(repack_base(T_IQ4_K_R8), (uint32_t)T_IQ4_K);
    const TypeTraits* xs = find_type(T_IQ4_XS_X8);
    ASSERT_TRUE(xs);
    EXPECT_EQ(xs->interleave, 8);
    EXPECT_EQ(row_bytes(*xs, 4096), row_bytes(*find_type(T_IQ4_XS), 4096));
    EXPECT_TRUE(is_runtime_layout(T_IQ4_XS_X8));
    EXPECT_EQ(repack_base(T_IQ4_XS_X8), (uint32_t)T_IQ4_XS);
    EXPECT_EQ(repack_target(T_IQ4_XS), (uint32_t)T_IQ4_XS_R8);  // the reference's file layout stays
    const TypeTraits* iq2 = find_type(T_IQ2_K_R8);
    ASSERT_TRUE(iq2);
    EXPECT_EQ(iq2->interleave, 8);
    EXPECT_EQ(row_bytes(*iq2, 4096), row_bytes(*find_type(T_IQ2_K), 4096));
    EXPECT_TRUE(is_runtime_layout(T_IQ2_K_R8));
    EXPECT_EQ(repack_base(T_IQ2_K_R8), (uint32_t)T_IQ2_K);
    const TypeTraits* iq3 = find_type(T_IQ3_K_R8);
    ASSERT_TRUE(iq3);
    EXPECT_EQ(iq3->interleave, 8);
    EXPECT_EQ(row_bytes(*iq3, 4096), row_bytes(*find_type(T_IQ3_K), 4096));
    EXPECT_TRUE(is_runtime_layout(T_IQ3_K_R8));
    EXPECT_EQ(repack_base(T_IQ3_K_R8), (uint32_t)T_IQ3_K);
    for (auto [packed, base] : {std::pair<uint32_t, uint32_t>{T_IQ2_KS_R8, T_IQ2_KS}, {T_IQ3_KS_R8, T_IQ3_KS}, {T_IQ4_KS_R8, T_IQ4_KS}, {T_IQ5_KS_R8, T_IQ5_KS}, {T_IQ2_KL_R8, T_IQ2_KL}}) {
        const TypeTraits* ks = find_type(packed);
        ASSERT_TRUE(ks);
        EXPECT_EQ(ks->interleave, 8);
        EXPECT_EQ(ks->row_meta_bytes, base == T_IQ4_KS || base == T_IQ5_KS ? 4 : 2);  // the row scale; the group's 8 lead it
        EXPECT_EQ(row_bytes(*ks, 4096), row_bytes(*find_type(base), 4096));
        EXPECT_TRUE(is_runtime_layout(packed));
        EXPECT_EQ(repack_base(packed), base);
        EXPECT_EQ(ks->quantize, nullptr);
    }
}

using UnpackGroup = void (*)(const uint8_t*, uint8_t*, size_t, int64_t);

struct R8Type {
    uint32_t base, packed;
    UnpackGroup unpack;
    int64_t plain_from;  // the AVX-512 kernel's batches from here give the plain kernel's bits
};
const R8Type kR8Types[] = {{T_Q4_K, T_Q4_K_R8, q4k_r8_unpack_group, 16},
                           {T_Q6_K, T_Q6_K_R8, q6k_r8_unpack_group, 16},
                           {T_IQ4_K, T_IQ4_K_R8, iq4k_r8_unpack_group, 32},
                           {T_IQ4_XS, T_IQ4_XS_X8, iq4xs_x8_unpack_group, 32},
                           {T_Q2_K, T_Q2_K_R8, q2k_r8_unpack_group, 32},
                           {T_IQ2_K, T_IQ2_K_R8, iq2k_r8_unpack_group, 32},
                           {T_IQ3_K, T_IQ3_K_R8, iq3k_r8_unpack_group, 32},
                           {T_Q3_K, T_Q3_K_R8, q3k_r8_unpack_group, 32},
                           {T_Q5_K, T_Q5_K_R8, q5k_r8_unpack_group, 16},
                           {T_IQ2_KS, T_IQ2_KS_R8, iq2ks_r8_unpack_group, 32},
                           {T_IQ3_KS, T_IQ3_KS_R8, iq3ks_r8_unpack_group, 32},
                           {T_IQ4_KS, T_IQ4_KS_R8, iq4ks_r8_unpack_group, 32},
                           {T_IQ5_KS, T_IQ5_KS_R8, iq5ks_r8_unpack_group, 32},
                           {T_IQ2_KL, T_IQ2_KL_R8, iq2kl_r8_unpack_group, 32}};

TEST(Q4KR8Layout, PackUnpackGivesThePlainBytesAndValues) {
    std::mt19937 rng(5);
    for (const R8Type& ty : kR8Types)
        for (bool random_bits : {false, true})
            for (int64_t ne0 : {256, 768, 2304}) {
                SCOPED_TRACE(std::string(find_type(ty.packed)->name) + " ne0 " + std::to_string(ne0) + " random " +
                             std::to_string(random_bits));
                const int64_t rows = 16;
                const std::vector<uint8_t> w = plain_rows(ty.base, ne0, rows, rng, random_bits);
                const size_t rb = row_bytes(*find_type(ty.base), ne0);
                std::vector<uint8_t> packed(w.size()), back(w.size());
                ASSERT_TRUE(repack_rows_to(ty.base, ty.packed, w.data(), packed.data(), ne0, rows));
                EXPECT_NE(std::memcmp(packed.data(), w.data(), w.size()), 0);
                for (int64_t g = 0; g < rows; g += 8) ty.unpack(packed.data() + rb * g, back.data() + rb * g, rb, ne0);
                ASSERT_EQ(std::memcmp(back.data(), w.data(), w.size()), 0);
                std::vector<float> want((size_t)(8 * ne0)), got((size_t)(8 * ne0));
                for (int64_t g = 0; g < rows; g += 8) {
                    for (int r = 0; r < 8; ++r) find_type(ty.base)->dequant(w.data() + rb * (g + r), want.data() + r * ne0, ne0);
                    find_type(ty.packed)->dequant(packed.data() + rb * g, got.data(), ne0);
                    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
                }
            }
    std::vector<uint8_t> w(144 * 7), out(w.size());
    EXPECT_FALSE(repack_rows_to(T_Q4_K, T_Q4_K_R8, w.data(), out.data(), 256, 7));  // not a whole group
}

TEST(Q4KR8Kernel, ScalarReferenceIsThePlainKernel) {
    // The reference every SIMD path is held to: plain rows through the plain scalar kernel.
    for (const R8Type& ty : kR8Types) {
        const cpu::MatmulKernel* ref = cpu::find_matmul_exact(ty.packed, Isa::scalar);
        const cpu::MatmulKernel* plain = cpu::find_matmul_exact(ty.base, Isa::scalar);
        ASSERT_TRUE(ref && plain);
        std::mt19937 rng(9);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (int64_t nt : {1, 3, 33, 70}) {
            const Case c{512, 24, 8, nt};
            const std::vector<uint8_t> w = plain_rows(ty.base, c.ne0, c.rows, rng, false);
            std::vector<uint8_t> wr(w.size());
            ASSERT_TRUE(repack_rows_to(ty.base, ty.packed, w.data(), wr.data(), c.ne0, c.rows));
            const size_t arb = ref->act->row_bytes(c.ne0);
            std::vector<uint8_t> act(arb * (size_t)nt + 64);
            std::vector<float> a((size_t)c.ne0);
            for (int64_t t = 0; t < nt; ++t) {
                for (auto& v : a) v = nd(rng);
                ref->act->encode_row(a.data(), act.data() + arb * t, c.ne0);
            }
            const std::vector<float> got = run_kernel_rows(*ref, wr, act, c), want = run_kernel_rows(*plain, w, act, c);
            ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "nt " << nt;
        }
    }
}

class R8Avx512 : public ::testing::TestWithParam<R8Type> {};

TEST_P(R8Avx512, MatchesReferenceAndPlainPanels) {
    if (cpu::detected_isa() != Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512";
    const R8Type ty = GetParam();
    const cpu::MatmulKernel* r8 = cpu::find_matmul_exact(ty.packed, Isa::avx512);
    const cpu::MatmulKernel* ref = cpu::find_matmul_exact(ty.packed, Isa::scalar);
    const cpu::MatmulKernel* plain = cpu::find_matmul_exact(ty.base, Isa::avx512);
    ASSERT_TRUE(r8 && ref && plain);
    ASSERT_EQ(r8->act->id, plain->act->id);
    ASSERT_EQ(r8->act->id, ref->act->id);
    const TypeTraits* bt = find_type(ty.base);
    std::mt19937 rng(77);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<Case> cases;
    for (int64_t ne0 : {256, 512, 2304})  // 1, 2, 9 blocks
        for (auto [rows, r0] : {std::pair<int64_t, int64_t>{8, 0}, {16, 0}, {24, 8}, {40, 0}, {56, 16}})
            for (int64_t nt : {1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 64, 65, 191, 192, 193})
                // Batches past 33 tokens on two shapes only, the longest rows on three row ranges
                // (each small batch's tokens also run alone and through the scalar reference:
                // seven types took 144 s under ASan with every shape).
                // Sanitizer builds: every token count on 1 and 9 blocks and three row ranges.
                if ((nt <= 33 || (rows <= 24 && ne0 <= 512)) && (ne0 < 2304 || rows != 16) && (ne0 < 2304 || rows != 40) &&
                    !(ikllm::test::kSanitized && (ne0 == 512 || rows == 16 || rows == 40)))
                    cases.push_back({ne0, rows, r0, nt});
    int small = 0, batches = 0;
    for (const Case& c : cases) {
        SCOPED_TRACE("ne0=" + std::to_string(c.ne0) + " rows=" + std::to_string(c.rows) + " r0=" + std::to_string(c.r0) +
                     " nt=" + std::to_string(c.nt));
        const size_t wrb = row_bytes(*bt, c.ne0);
        const std::vector<uint8_t> w = plain_rows(ty.base, c.ne0, c.rows, rng, c.nt % 2 == 1);
        std::vector<uint8_t> wr(w.size());
        ASSERT_TRUE(repack_rows_to(ty.base, ty.packed, w.data(), wr.data(), c.ne0, c.rows));
        const size_t arb = r8->act->row_bytes(c.ne0);
        std::vector<uint8_t> act(arb * (size_t)c.nt + 64);
        std::vector<float> a((size_t)c.ne0);
        for (int64_t t = 0; t < c.nt; ++t) {
            for (auto& v : a) v = nd(rng);
            r8->act->encode_row(a.data(), act.data() + arb * t, c.ne0);
        }
        const std::vector<float> got = run_kernel_rows(*r8, wr, act, c);
        if (c.nt >= ty.plain_from) {  // the plain type's kernel (panels, or unpacked slabs)
            const std::vector<float> want = run_kernel_rows(*plain, w, act, c);
            ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "differs from the plain type";
            ++batches;
            continue;
        }
        std::vector<float> wf((size_t)(c.rows * c.ne0)), af((size_t)c.ne0);
        for (int64_t r = 0; r < c.rows; ++r) bt->dequant(w.data() + wrb * r, wf.data() + r * c.ne0, c.ne0);
        const int64_t ys = c.rows + 5;
        for (int64_t t = 0; t < c.nt; ++t) {
            decode_act(r8->act->id, act.data() + arb * t, af.data(), c.ne0);
            Case one = c;
            one.nt = 1;
            std::vector<uint8_t> act1(act.begin() + (ptrdiff_t)(arb * t), act.begin() + (ptrdiff_t)(arb * (t + 1)));
            act1.resize(arb + 64);
            const std::vector<float> alone = run_kernel_rows(*r8, wr, act1, one);
            // The reference token by token: its exact numerics (the plain kernels re-encode the
            // weights to 8 bits for big batches, which the tiles never do).
            const std::vector<float> want = run_kernel_rows(*ref, wr, act1, one);
            for (int64_t r = c.r0; r < c.rows; ++r) {
                double mag = 0;
                for (int64_t i = 0; i < c.ne0; ++i) mag += std::fabs((double)wf[(size_t)(r * c.ne0 + i)] * af[i]);
                const float g = got[(size_t)(t * ys + r)];
                ASSERT_NEAR(g, want[(size_t)r], 2e-6 * mag + 1e-30) << "row " << r << " token " << t;
                ASSERT_EQ(std::memcmp(&g, &alone[(size_t)r], 4), 0) << "row " << r << " token " << t << ": not batch-invariant";
            }
        }
        ++small;
    }
    EXPECT_GT(small, 0);
    EXPECT_GT(batches, 0);
}

INSTANTIATE_TEST_SUITE_P(Types, R8Avx512, ::testing::ValuesIn(kR8Types),
                         [](const auto& info) { return std::string(find_type(info.param.packed)->name); });
