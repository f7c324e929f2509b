// AMX-BF16 prompt-batch kernels (kernels/amx_bf16.h, bf16_fill_avx512.h) against independent
// references, for every weight type that has one:
//  - the decoded weights, read back through the kernel itself with one-hot activations (each
//    output is then exactly one bf16 weight), equal the scalar dequantizer's values rounded to
//    bf16, up to one bf16 step on rare ties of the product rounding order;
//  - products with random activations equal double-precision sums over those bf16 weights and
//    bf16 activations within fp32 accumulation error, for row and token counts that are not
//    multiples of the 16 x 16 tiles and row ranges that start inside the matrix;
//  - the activation encoder is bit-identical to the reference bf16 conversion;
//  - find_batch_matmul hands the AMX kernel out only from kAmxMinTokens tokens.
// Skipped (with a message) where the CPU or OS does not grant the tile unit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

using namespace ikllm;
using cpu::Isa;

namespace {

std::vector<uint32_t> amx_types() {
    std::vector<uint32_t> ids;
    size_t n = 0;
    const quant::TypeTraits* all = quant::all_types(&n);
    for (size_t i = 0; i < n; ++i)
        if (cpu::find_amx_matmul(all[i].id)) ids.push_back(all[i].id);
    return ids;
}

#define REQUIRE_AMX()                                                                                 \
    do {                                                                                              \
        if (!cpu::amx_usable()) GTEST_SKIP() << "AMX-BF16 not available on this CPU/OS (or IKLLM_AMX=0)"; \
    } while (0)

struct Matrix {
    const quant::TypeTraits* tt;
    int64_t rows, K;
    size_t row_bytes;
    std::vector<uint8_t> data;
    std::vector<float> deq;  // scalar dequantizer's values
};

Matrix make_matrix(uint32_t id, int64_t rows, int64_t K, uint32_t seed) {
    Matrix m{quant::find_type(id), rows, K, 0, {}, {}};
    m.row_bytes = quant::row_bytes(*m.tt, K);
    m.data.resize(m.row_bytes * rows);
    m.deq.resize((size_t)(rows * K));
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> src((size_t)(rows * K));
    for (int64_t r = 0; r < rows; ++r) {
        const float scale = 0.02f * (1.0f + (float)(r % 7));  // rows of different magnitudes
        for (int64_t k = 0; k < K; ++k) src[(size_t)(r * K + k)] = scale * nd(rng);
    }
    const int il = m.tt->interleave;
    for (int64_t r = 0; r < rows; r += il) {
        m.tt->quantize(src.data() + r * K, m.data.data() + r * m.row_bytes, K, nullptr);
        m.tt->dequant(m.data.data() + r * m.row_bytes, m.deq.data() + r * K, K);
    }
    return m;
}

std::vector<uint8_t> encode(const cpu::MatmulKernel& k, const std::vector<float>& x, int64_t T, int64_t K) {
    const size_t rb = k.act->row_bytes(K);
    std::vector<uint8_t> out(rb * T);
    for (int64_t t = 0; t < T; ++t) k.act->encode_row(x.data() + t * K, out.data() + t * rb, K);
    return out;
}

float bf16_round(float x) { return bf16_to_f32(f32_to_bf16(x)); }

std::vector<float> normal_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
}

// The kernel's bf16 weights, read back with one-hot activations (token k = unit vector e_k).
// `block` tokens per call (kernels with a separate batch form switch at 32 tokens).
std::vector<float> decoded_weights(const cpu::MatmulKernel& k, const Matrix& m, int64_t block = 0) {
    std::vector<float> onehot((size_t)(m.K * m.K), 0.f);
    for (int64_t t = 0; t < m.K; ++t) onehot[(size_t)(t * m.K + t)] = 1.f;
    const auto act = encode(k, onehot, m.K, m.K);
    std::vector<float> y((size_t)(m.K * m.rows), NAN);
    const size_t arb = k.act->row_bytes(m.K);
    if (block <= 0) block = m.K;
    for (int64_t t0 = 0; t0 < m.K; t0 += block)
        k.run(m.data.data(), m.row_bytes, m.K, 0, m.rows, act.data() + t0 * arb, arb, std::min(block, m.K - t0),
              y.data() + t0 * m.rows, m.rows);
    std::vector<float> w((size_t)(m.rows * m.K));
    for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t c = 0; c < m.K; ++c) w[(size_t)(r * m.K + c)] = y[(size_t)(c * m.rows + r)];
    return w;
}

TEST(AmxMatmul, HasKernelsForTheMainTypes) {
    if (cpu::detected_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    const auto ids = amx_types();
    if (ids.empty()) GTEST_SKIP() << "AMX kernels not compiled in";
    for (uint32_t id : {quant::T_Q4_0, quant::T_Q8_0, quant::T_Q4_K, quant::T_Q6_K, quant::T_IQ4_XS, quant::T_IQ4_K})
        EXPECT_NE(cpu::find_amx_matmul(id), nullptr) << quant::find_type(id)->name;
}

TEST(AmxMatmul, ActivationEncoderIsTheReferenceBf16) {
    if (cpu::detected_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    const cpu::MatmulKernel* k = cpu::find_amx_matmul(quant::T_Q4_0);
    if (!k) GTEST_SKIP() << "AMX kernels not compiled in";
    std::mt19937 rng(5);
    std::vector<float> x(1000);
    for (auto& v : x) {
        uint32_t b = rng();
        std::memcpy(&v, &b, 4);  // every bit pattern: NaNs, infinities, denormals, ties
    }
    const float special[] = {0.f, -0.f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, std::numeric_limits<float>::denorm_min(),
                             -1e-40f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN(),
                             3.4e38f};
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); ++i) x[i] = special[i];
    std::vector<uint8_t> a(2 * x.size()), b(2 * x.size());
    k->act->encode_row(x.data(), a.data(), (int64_t)x.size() - 3);  // odd length: vector body + tail
    cpu::act_format_bf16()->encode_row(x.data(), b.data(), (int64_t)x.size() - 3);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), 2 * (x.size() - 3)));
    EXPECT_EQ(k->act->id, cpu::act_format_bf16()->id);
}

// The weights the scalar reference kernel multiplies by (one-hot activations again; an 8-bit
// activation format encodes 1.0 as 127 * (1/127), hence the bf16 comparison's slack).
std::vector<float> scalar_kernel_weights(const Matrix& m) {
    const cpu::MatmulKernel* k = cpu::find_matmul_exact(m.tt->id, Isa::scalar);
    if (!k) return {};
    return decoded_weights(*k, m, 16);
}

TEST(AmxMatmul, DecodedWeightsAreTheDequantizedValuesInBf16) {
    REQUIRE_AMX();
    for (uint32_t id : amx_types()) {
        const Matrix m = make_matrix(id, 19, 512, 100 + id);
        const cpu::MatmulKernel* k = cpu::find_amx_matmul(id);
        const auto w = decoded_weights(*k, m);
        // IQ6_K: matrix products use the integer approximation of its value table, the
        // dequantizer the exact polynomial values (quant-formats.md §7.6); the AMX kernel follows
        // the products.
        const std::vector<float> ref = id == quant::T_IQ6_K ? scalar_kernel_weights(m) : m.deq;
        ASSERT_EQ(ref.size(), w.size()) << m.tt->name;
        int64_t off_by_one = 0;
        for (size_t i = 0; i < w.size(); ++i) {
            const float want = bf16_round(ref[i]);
            if (w[i] == want) continue;
            // a product rounded in another order can land on the other side of a bf16 tie
            const float step = std::fabs(want) * (1.0f / 128) * 1.01f;
            ASSERT_LE(std::fabs(w[i] - want), step) << m.tt->name << " weight " << i << " reference " << ref[i];
            ++off_by_one;
        }
        EXPECT_LE(off_by_one, (int64_t)w.size() / 200) << m.tt->name;
    }
}

TEST(AmxMatmul, ProductsMatchDoublePrecisionOverBf16Operands) {
    REQUIRE_AMX();
    struct Shape { int64_t rows, K, r0, T; };
    // (the first five take the token-major layout, the last three the row-major one: see
    // amx::prefer_token_major)
    const Shape shapes[] = {{16, 256, 0, 64},  {37, 512, 0, 77},   {64, 768, 16, 100}, {33, 512, 0, 150},
                            {20, 256, 0, 300}, {50, 256, 32, 5},   {200, 512, 0, 40},  {130, 1024, 16, 21}};
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (uint32_t id : amx_types()) {
        const cpu::MatmulKernel* k = cpu::find_amx_matmul(id);
        for (const Shape& s : shapes) {
            const Matrix m = make_matrix(id, s.rows, s.K, 7 * id + (uint32_t)s.K);
            const auto w = decoded_weights(*k, m);  // checked against the dequantizer above
            std::vector<float> x((size_t)(s.T * s.K));
            for (auto& v : x) v = nd(rng);
            const auto act = encode(*k, x, s.T, s.K);
            const int64_t ys = s.rows + 3;
            std::vector<float> y((size_t)(s.T * ys), -12345.f);
            k->run(m.data.data(), m.row_bytes, s.K, s.r0, s.rows, act.data(), k->act->row_bytes(s.K), s.T, y.data(), ys);
            for (int64_t t = 0; t < s.T; ++t) {
                for (int64_t r = 0; r < ys; ++r) {
                    const float got = y[(size_t)(t * ys + r)];
                    if (r < s.r0 || r >= s.rows) {  // outside the range: untouched
                        ASSERT_EQ(got, -12345.f) << m.tt->name << " t=" << t << " r=" << r;
                        continue;
                    }
                    double ref = 0, mag = 0;
                    for (int64_t c = 0; c < s.K; ++c) {
                        const double p = (double)w[(size_t)(r * s.K + c)] * bf16_round(x[(size_t)(t * s.K + c)]);
                        ref += p;
                        mag += std::fabs(p);
                    }
                    ASSERT_NEAR(got, ref, 2e-6 * mag + 1e-30)
                        << m.tt->name << " rows=" << s.rows << " K=" << s.K << " T=" << s.T << " t=" << t << " r=" << r;
                }
            }
        }
    }
}

// Rounding weights and activations to bf16 loses no more than the standard kernels' 8-bit
// activations do: against double-precision products of the dequantized weights and the float
// activations, the AMX kernel's RMS error is at most the scalar reference kernel's.
TEST(AmxMatmul, AtLeastAsAccurateAsTheScalarKernels) {
    REQUIRE_AMX();
    const int64_t rows = 48, K = 1024, T = 80;
    std::mt19937 rng(21);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> x((size_t)(T * K));
    for (auto& v : x) v = nd(rng);
    for (uint32_t id : amx_types()) {
        const Matrix m = make_matrix(id, rows, K, 300 + id);
        // IQ6_K's products use an approximation of its value table (see above): the exact
        // reference is then the kernels' own weights.
        const std::vector<float> wref = id == quant::T_IQ6_K ? scalar_kernel_weights(m) : m.deq;
        auto rms_error = [&](const cpu::MatmulKernel& k, int64_t block) {
            const auto act = encode(k, x, T, K);
            const size_t arb = k.act->row_bytes(K);
            std::vector<float> y((size_t)(T * rows));
            for (int64_t t0 = 0; t0 < T; t0 += block)
                k.run(m.data.data(), m.row_bytes, K, 0, rows, act.data() + t0 * arb, arb, std::min(block, T - t0),
                      y.data() + t0 * rows, rows);
            double num = 0, den = 0;
            for (int64_t t = 0; t < T; ++t)
                for (int64_t r = 0; r < rows; ++r) {
                    double exact = 0;
                    for (int64_t c = 0; c < K; ++c) exact += (double)wref[(size_t)(r * K + c)] * x[(size_t)(t * K + c)];
                    const double d = y[(size_t)(t * rows + r)] - exact;
                    num += d * d;
                    den += exact * exact;
                }
            return std::sqrt(num / den);
        };
        const double amx = rms_error(*cpu::find_amx_matmul(id), T);
        const double scalar = rms_error(*cpu::find_matmul_exact(id, Isa::scalar), 16);
        EXPECT_LE(amx, scalar) << m.tt->name;
        EXPECT_LT(amx, 5e-3) << m.tt->name;
        std::printf("%-8s relative RMS error vs exact: amx %.2e, scalar kernel %.2e\n", m.tt->name, amx, scalar);
    }
}

// Long rows: the packed activations of a call are capped (amx::kPackBytes), so a batch goes in
// token blocks, each decoding the weights again; every token's result is the one it gets in a
// call of its own block size.
TEST(AmxMatmul, TokenBlocksOfLongRowsGiveTheSameBits) {
    REQUIRE_AMX();
    const int64_t rows = 20, K = 32768, T = 150;  // 4 MiB / 64 KiB per token: blocks of 64 tokens
    for (uint32_t id : {quant::T_Q4_0, quant::T_Q4_K}) {
        const Matrix m = make_matrix(id, rows, K, 77);
        const cpu::MatmulKernel* k = cpu::find_amx_matmul(id);
        std::mt19937 rng(4);
        std::normal_distribution<float> nd(0.f, 1.f);
        std::vector<float> x((size_t)(T * K));
        for (auto& v : x) v = nd(rng);
        const auto act = encode(*k, x, T, K);
        const size_t arb = k->act->row_bytes(K);
        std::vector<float> whole((size_t)(T * rows)), parts((size_t)(T * rows));
        k->run(m.data.data(), m.row_bytes, K, 0, rows, act.data(), arb, T, whole.data(), rows);
        for (int64_t t0 = 0; t0 < T; t0 += 30)
            k->run(m.data.data(), m.row_bytes, K, 0, rows, act.data() + t0 * arb, arb, std::min<int64_t>(30, T - t0),
                   parts.data() + t0 * rows, rows);
        for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], parts[i]) << m.tt->name << " element " << i;
    }
}

// The kernel picks its tile layout per call from the shape (token-major: C = tokens x rows,
// stored straight into y; row-major: C = rows x tokens, transposed on the way out). Both
// accumulate the same products in the same order, so a matrix done in one call (row-major
// here) and in 16-row calls (token-major) gives the same bits, for every type.
TEST(AmxMatmul, BothTileLayoutsGiveTheSameBits) {
    REQUIRE_AMX();
    const int64_t rows = 256, K = 512, T = 70;
    const std::vector<float> x = normal_values((size_t)(T * K), 21);
    for (uint32_t id : amx_types()) {
        const Matrix m = make_matrix(id, rows, K, 500 + id);
        const cpu::MatmulKernel* k = cpu::find_amx_matmul(id);
        const auto act = encode(*k, x, T, K);
        const size_t arb = k->act->row_bytes(K);
        std::vector<float> whole((size_t)(T * rows), NAN), split((size_t)(T * rows), NAN);
        k->run(m.data.data(), m.row_bytes, K, 0, rows, act.data(), arb, T, whole.data(), rows);
        for (int64_t r0 = 0; r0 < rows; r0 += 16)
            k->run(m.data.data(), m.row_bytes, K, r0, r0 + 16, act.data(), arb, T, split.data(), rows);
        for (size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], split[i]) << m.tt->name << " element " << i;
    }
}

// Float rows packed once (amx_pack_rows: gathered rows, encoded and laid out for the tile unit in
// one pass) and multiplied by run_packed give the bits of `run` on the encoded rows, for every
// type; the pack is the same for any weight type, so one packing serves several matrices.
TEST(AmxMatmul, PackedFloatRowsGiveTheBitsOfEncodedRows) {
    REQUIRE_AMX();
    const int64_t rows = 40, K = 512, T = 37;
    std::vector<float> x = normal_values((size_t)(2 * T * K), 31);
    x[5] = std::numeric_limits<float>::denorm_min();  // conversion corner cases travel too
    x[7] = -0.f;
    std::vector<const float*> ptr((size_t)T);
    for (int64_t t = 0; t < T; ++t) ptr[(size_t)t] = x.data() + (2 * ((t * 7) % T) + 1) * K;  // scattered rows
    std::vector<float> gathered((size_t)(T * K));
    for (int64_t t = 0; t < T; ++t) std::copy(ptr[(size_t)t], ptr[(size_t)t] + K, gathered.begin() + t * K);
    const size_t bytes = cpu::amx_packed_bytes(K, T);
    std::vector<uint8_t> store(bytes + 64);
    void* packed = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(store.data()) + 63) & ~(uintptr_t)63);
    cpu::amx_pack_rows(ptr.data(), K, T, packed);
    for (uint32_t id : amx_types()) {
        const Matrix m = make_matrix(id, rows, K, 900 + id);
        const cpu::MatmulKernel* k = cpu::find_amx_matmul(id);
        ASSERT_NE(k->run_packed, nullptr) << m.tt->name;
        const auto act = encode(*k, gathered, T, K);
        std::vector<float> a((size_t)(T * rows), NAN), b((size_t)(T * rows), NAN);
        k->run(m.data.data(), m.row_bytes, K, 8, rows, act.data(), k->act->row_bytes(K), T, a.data(), rows);
        k->run_packed(m.data.data(), m.row_bytes, K, 8, rows, packed, T, b.data(), rows);
        for (size_t i = 0; i < a.size(); ++i)
            if (!std::isnan(a[i]) || !std::isnan(b[i])) {
                ASSERT_EQ(a[i], b[i]) << m.tt->name << " element " << i;
            }
    }
}

TEST(AmxMatmul, BatchLookupUsesTheTileUnitFromTheThreshold) {
    REQUIRE_AMX();
    const cpu::MatmulKernel* amx = cpu::find_amx_matmul(quant::T_Q4_0);
    ASSERT_NE(amx, nullptr);
    EXPECT_EQ(cpu::find_batch_matmul(quant::T_Q4_0, Isa::avx512, cpu::kAmxMinTokens), amx);
    EXPECT_EQ(cpu::find_batch_matmul(quant::T_Q4_0, Isa::avx512, 512), amx);
    EXPECT_EQ(cpu::find_batch_matmul(quant::T_Q4_0, Isa::avx512, cpu::kAmxMinTokens - 1),
              cpu::find_matmul(quant::T_Q4_0, Isa::avx512));
    EXPECT_EQ(cpu::find_batch_matmul(quant::T_Q4_0, Isa::avx2, 512), cpu::find_matmul(quant::T_Q4_0, Isa::avx2));
    // a type without a bf16 decoder keeps its kernel
    EXPECT_EQ(cpu::find_batch_matmul(quant::T_IQ2_XXS, Isa::avx512, 512), cpu::find_matmul(quant::T_IQ2_XXS, Isa::avx512));
}

}  // namespace
