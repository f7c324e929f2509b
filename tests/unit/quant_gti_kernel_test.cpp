// Matrix-product kernels of the grid / trellis / ternary / interleaved types: every ISA's kernel
// against a double-precision product of the dequantized weights with the decoded activations
// (the activation format of quant-formats.md §15), on random data with odd row-group counts,
// row sub-ranges, strided outputs and several token counts and row lengths. The trellis types
// follow the reference's matmul (kernels/trellis_kt.h): IQ2_KT / IQ3_KT products carry an extra
// factor 1.05 / 1.01 over the dequantized weights, and batches of 32+ tokens use fp16-rounded
// sub-block scales (checked loosely against the model, tightly across ISAs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/interleaved_act.h"
#include "quant_gti_support.h"

using namespace ikllm;
using namespace ikllm::test;
using namespace ikllm::quant;
using ikllm::cpu::Isa;

namespace {

const uint32_t kTypes[] = {
    T_IQ2_XXS,   T_IQ2_XS,    T_IQ2_S,     T_IQ3_XXS,    T_IQ3_S,     T_IQ1_S,     T_IQ1_M,      T_IQ1_KT,
    T_IQ2_KT,    T_IQ3_KT,    T_IQ4_KT,    T_IQ1_BN,     T_IQ2_BN,    T_Q8_KV,     T_Q4_0_R8,    T_Q8_0_R8,
    T_Q5_0_R4,   T_Q6_0_R4,   T_IQ4_NL_R4, T_MXFP4_R8,   T_Q2_K_R4,   T_Q3_K_R4,   T_Q4_K_R4,    T_Q5_K_R4,
    T_Q6_K_R4,   T_IQ4_XS_R8, T_IQ2_K_R4,  T_IQ3_K_R4,   T_IQ4_K_R4,  T_IQ5_K_R4,  T_IQ4_KS_R4,  T_IQ5_KS_R4,
    T_IQ2_XXS_R4, T_IQ2_XS_R4, T_IQ2_S_R4, T_IQ3_XXS_R4, T_IQ3_S_R4,  T_IQ1_S_R4,  T_IQ1_M_R4,   T_IQ2_BN_R4,
    T_BF16_R16,  T_Q8_K_R8,   T_Q8_K_R16,  T_Q8_KV_R8,   T_Q4_0_4X4,  T_Q4_0_4X8,  T_Q4_0_8X8,
};

// Float decoder of an activation format id.
ActDecodeFn act_decoder(uint32_t id) {
    switch (id) {
        case T_Q8_2_X4: return act_q8_2_x4_decode_row;
        case T_Q8_0: return act_q8_0_decode_row;
        case T_Q8_K:
        case T_Q8_K32: return decode_q8_k_row;
        case T_Q8_K128: return decode_q8_k128_row;
        case T_Q8_K64: return decode_q8_k64_row;
        case T_Q8_K16: return decode_q8_k16_row;
        case T_Q8_KV: return decode_q8_kv_row;
        case T_BF16: return decode_bf16_row;
        default: return nullptr;
    }
}

// Types whose encoders search code books (slow): their test data is random block bytes.
bool slow_encoder(uint32_t id) {
    switch (id) {
        case T_IQ2_XXS: case T_IQ2_XS: case T_IQ2_S: case T_IQ3_XXS: case T_IQ3_S: case T_IQ1_S: case T_IQ1_M:
        case T_IQ1_KT: case T_IQ2_KT: case T_IQ3_KT: case T_IQ4_KT: case T_IQ2_XXS_R4: case T_IQ2_XS_R4:
        case T_IQ2_S_R4: case T_IQ3_XXS_R4: case T_IQ3_S_R4: return true;
        default: return false;
    }
}

// Random weights of `type`: quantized Gaussian data when the type has a fast quantizer, otherwise
// random block bytes with sane per-row scales (every bit pattern of a block is valid).
std::vector<uint8_t> random_weights(const TypeTraits& t, int64_t ne0, int64_t nrows, std::mt19937& rng) {
    const size_t rb = row_bytes(t, ne0);
    std::vector<uint8_t> w(rb * (size_t)nrows);
    const int64_t N = t.interleave;
    if (t.quantize && !slow_encoder(t.id)) {
        std::normal_distribution<float> nd(0.0f, 0.02f);
        std::vector<float> x((size_t)(N * ne0)), y((size_t)(N * ne0));
        bool sane = true;  // a base quantizer still under development must not fail these tests
        for (int64_t g = 0; g < nrows / N; ++g) {
            for (auto& v : x) v = nd(rng);
            t.quantize(x.data(), w.data() + rb * (size_t)(g * N), ne0, nullptr);
            t.dequant(w.data() + rb * (size_t)(g * N), y.data(), ne0);
            for (float v : y) sane = sane && std::fabs(v) < 1.0f;
        }
        if (sane) return w;
    }
    for (auto& b : w) b = (uint8_t)rng();
    std::uniform_real_distribution<float> ud(0.5e-3f, 2e-3f);
    const int meta = t.row_meta_bytes;
    for (int64_t g = 0; g < nrows / N; ++g) {
        uint8_t* p = w.data() + rb * (size_t)(g * N);  // N metadata items lead each group
        for (int64_t k = 0; k < N; ++k) {
            if (meta == 2) {
                const uint16_t h = f32_to_f16(ud(rng));
                std::memcpy(p + 2 * k, &h, 2);
            } else if (meta >= 4) {
                const float f = ud(rng);
                std::memcpy(p + (size_t)(N == 1 ? 0 : 4 * k), &f, 4);
            }
        }
    }
    return w;
}

std::vector<int64_t> row_lengths(const TypeTraits& t, uint32_t act) {
    std::vector<int64_t> out;
    for (int64_t ne0 : {96, 128, 224, 256, 512, 768, 1280}) {
        if (ne0 % t.block_elems) continue;
        if ((act == T_Q8_K || act == T_Q8_K32) && ne0 % 256) continue;
        if (act == T_Q8_K128 && ne0 % 128) continue;
        if ((act == T_Q8_K64 || act == T_Q8_K16) && ne0 % 64) continue;
        if (ne0 % 32) continue;
        out.push_back(ne0);
    }
    return out;
}

// Factor of the reference's trellis matmuls over the dequantized weights (trellis_kt.h).
double matmul_factor(uint32_t type) { return type == T_IQ2_KT ? 1.05 : type == T_IQ3_KT ? 1.01 : 1.0; }

class QuantGtiKernel : public ::testing::TestWithParam<uint32_t> {};

}  // namespace

TEST_P(QuantGtiKernel, EveryIsaMatchesDequantizedProduct) {
    const uint32_t type = GetParam();
    const TypeTraits* t = find_type(type);
    ASSERT_TRUE(t && t->dequant);
    const cpu::MatmulKernel* scalar = cpu::find_matmul_exact(type, Isa::scalar);
    ASSERT_NE(scalar, nullptr) << "no scalar kernel for " << t->name;
    std::vector<Isa> isas = {Isa::scalar};
    if (cpu::detected_isa() == Isa::avx2 || cpu::detected_isa() == Isa::avx512) isas.push_back(Isa::avx2);
    if (cpu::detected_isa() == Isa::avx512) isas.push_back(Isa::avx512);
    if (cpu::detected_isa() == Isa::neon) isas.push_back(Isa::neon);
    std::mt19937 rng(4321 + type);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t N = t->interleave;
    int runs = 0;
    for (Isa isa : isas) {
        const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, isa);
        if (!k) continue;
        const ActDecodeFn dec = act_decoder(k->act->id);
        ASSERT_NE(dec, nullptr) << "unknown activation format " << k->act->id;
        for (int64_t ne0 : row_lengths(*t, k->act->id)) {
            for (int64_t groups : {1, 3, 5}) {
                const int64_t nrows = N * groups;
                const std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
                for (int64_t nt : {1, 3, 8, 17}) {
                    SCOPED_TRACE(std::string(t->name) + " isa=" + cpu::isa_name(isa) + " ne0=" + std::to_string(ne0) +
                                 " groups=" + std::to_string(groups) + " nt=" + std::to_string(nt));
                    const size_t wrb = row_bytes(*t, ne0), arb = k->act->row_bytes(ne0);
                    std::vector<float> x((size_t)(nt * ne0));
                    for (auto& v : x) v = nd(rng);
                    std::vector<uint8_t> act(arb * (size_t)nt + 64);
                    for (int64_t i = 0; i < nt; ++i) k->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
                    // Reference: dequantized weights x decoded activations, in double.
                    std::vector<float> wf((size_t)(nrows * ne0)), xf((size_t)(nt * ne0));
                    for (int64_t g = 0; g < groups; ++g) t->dequant(w.data() + wrb * (size_t)(g * N), wf.data() + g * N * ne0, ne0);
                    for (int64_t i = 0; i < nt; ++i) dec(act.data() + arb * i, xf.data() + i * ne0, ne0);
                    // Run on rows [r0, nrows) with a padded output stride.
                    const int64_t r0 = groups > 1 ? N : 0, ys = nrows + 3;
                    std::vector<float> y((size_t)(nt * ys), -12345.0f);
                    k->run(w.data(), wrb, ne0, r0, nrows, act.data(), arb, nt, y.data(), ys);
                    // NEON kernels run the portable kernel's float operations: the same bits.
                    if (isa == Isa::neon && scalar->act->id == k->act->id) {
                        std::vector<float> y0((size_t)(nt * ys), -12345.0f);
                        scalar->run(w.data(), wrb, ne0, r0, nrows, act.data(), arb, nt, y0.data(), ys);
                        for (size_t i = 0; i < y.size(); ++i)
                            ASSERT_EQ(f32_to_bits(y[i]), f32_to_bits(y0[i])) << "NEON vs scalar bits at " << i;
                    }
                    for (int64_t i = 0; i < nt; ++i)
                        for (int64_t r = 0; r < nrows; ++r) {
                            const float got = y[i * ys + r];
                            if (r < r0) {
                                ASSERT_EQ(got, -12345.0f) << "row outside [r0, r1) written";
                                continue;
                            }
                            double ref = 0, mag = 0;
                            for (int64_t c = 0; c < ne0; ++c) {
                                const double p = (double)wf[r * ne0 + c] * xf[i * ne0 + c];
                                ref += p;
                                mag += std::fabs(p);
                            }
                            if (std::isnan(ref)) {
                                ASSERT_TRUE(std::isnan(got)) << "row " << r << " token " << i;
                                continue;
                            }
                            ref *= matmul_factor(type);
                            mag *= matmul_factor(type);
                            ASSERT_NEAR(got, ref, 2e-5 * mag + 1e-30) << "row " << r << " token " << i;
                        }
                    ++runs;
                }
            }
        }
    }
    EXPECT_GT(runs, 0);
}

INSTANTIATE_TEST_SUITE_P(All, QuantGtiKernel, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                             return std::string(find_type(info.param)->name);
                         });

// Trellis types in large batches (>= 32 tokens): sub-block scales rounded to fp16 (relative
// change <= 2^-11 per scale for these row scales): every ISA agrees with scalar to rounding, and
// all stay within the fp16 bound of the (factor-scaled) dequantized product.
TEST(QuantGtiKernelKt, LargeBatchesRoundScalesToFp16) {
    for (uint32_t type : {(uint32_t)T_IQ1_KT, (uint32_t)T_IQ2_KT, (uint32_t)T_IQ3_KT, (uint32_t)T_IQ4_KT}) {
        const TypeTraits* t = find_type(type);
        std::mt19937 rng(99 + type);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        const int64_t ne0 = 512, nrows = 5, nt = 40;
        const std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
        const cpu::MatmulKernel* ks = cpu::find_matmul_exact(type, Isa::scalar);
        ASSERT_NE(ks, nullptr);
        const size_t wrb = row_bytes(*t, ne0), arb = ks->act->row_bytes(ne0);
        std::vector<float> x((size_t)(nt * ne0)), wf((size_t)(nrows * ne0)), xf((size_t)(nt * ne0));
        for (auto& v : x) v = nd(rng);
        std::vector<uint8_t> act(arb * (size_t)nt);
        for (int64_t i = 0; i < nt; ++i) ks->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
        for (int64_t r = 0; r < nrows; ++r) t->dequant(w.data() + wrb * r, wf.data() + r * ne0, ne0);
        for (int64_t i = 0; i < nt; ++i) act_q8_2_x4_decode_row(act.data() + arb * i, xf.data() + i * ne0, ne0);
        std::vector<float> ys((size_t)(nt * nrows));
        ks->run(w.data(), wrb, ne0, 0, nrows, act.data(), arb, nt, ys.data(), nrows);
        bool rounded = false;  // fp16 rounding must actually change something
        for (int64_t i = 0; i < nt; ++i)
            for (int64_t r = 0; r < nrows; ++r) {
                double ref = 0, mag = 0;
                for (int64_t c = 0; c < ne0; ++c) {
                    const double p = (double)wf[r * ne0 + c] * xf[i * ne0 + c];
                    ref += p;
                    mag += std::fabs(p);
                }
                ref *= matmul_factor(type);
                mag *= matmul_factor(type);
                const double got = ys[i * nrows + r];
                EXPECT_NEAR(got, ref, std::ldexp(1.0, -11) * mag + 1e-30) << t->name << " r=" << r << " t=" << i;
                rounded = rounded || std::fabs(got - ref) > 1e-6 * mag;
            }
        EXPECT_TRUE(rounded) << t->name;
    }
}

// Trellis calls of 16+ tokens sum in the symmetric 32-weight types' batch order (SymBatchAccum;
// the SIMD kernels run them through the Q8_0 family's panels / lanes), fp16 scales from 32: every
// ISA gives the scalar kernel's bits, with exact scales (17 tokens) and rounded ones (40).
TEST(QuantGtiKernelKt, BatchesMatchScalarBits) {
    for (uint32_t type : {(uint32_t)T_IQ1_KT, (uint32_t)T_IQ2_KT, (uint32_t)T_IQ3_KT, (uint32_t)T_IQ4_KT}) {
        const TypeTraits* t = find_type(type);
        std::mt19937 rng(5 + type);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        const cpu::MatmulKernel* ks = cpu::find_matmul_exact(type, Isa::scalar);
        ASSERT_NE(ks, nullptr);
        for (int64_t ne0 : {256, 768}) {
            const int64_t nrows = 37;  // two full 16-row panels and a partial one
            const std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
            const size_t wrb = row_bytes(*t, ne0), arb = ks->act->row_bytes(ne0);
            for (int64_t nt : {16, 17, 40}) {
                std::vector<float> x((size_t)(nt * ne0));
                for (auto& v : x) v = nd(rng);
                std::vector<uint8_t> act(arb * (size_t)nt);
                for (int64_t i = 0; i < nt; ++i) ks->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
                const int64_t r0 = 3, ysd = nrows + 2;
                std::vector<float> y0((size_t)(nt * ysd), -7.0f);
                ks->run(w.data(), wrb, ne0, r0, nrows, act.data(), arb, nt, y0.data(), ysd);
                for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon}) {
                    const Isa hw = cpu::detected_isa();
                    if (!(hw == isa || (isa == Isa::avx2 && hw == Isa::avx512))) continue;
                    const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, isa);
                    if (!k) continue;
                    std::vector<float> yv((size_t)(nt * ysd), -7.0f);
                    k->run(w.data(), wrb, ne0, r0, nrows, act.data(), arb, nt, yv.data(), ysd);
                    for (size_t i = 0; i < yv.size(); ++i)
                        ASSERT_EQ(f32_to_bits(yv[i]), f32_to_bits(y0[i]))
                            << t->name << " " << cpu::isa_name(isa) << " ne0=" << ne0 << " nt=" << nt << " token "
                            << i / ysd << " row " << i % ysd;
                }
            }
        }
    }
}

// Calls of up to 15 tokens (kInvariantTokens, the batch-invariant ops' cap): a token's result must
// not depend on how many tokens share its call -- 15 tokens in calls of 1, 2, 3, 4 or 7 give the
// bits of one call of 15 (every ISA here).
static void expect_tile_size_keeps_bits(uint32_t type, std::initializer_list<int64_t> ne0s) {
    {
        const TypeTraits* t = find_type(type);
        std::mt19937 rng(7 + type);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        const int64_t nrows = 6, nt = 15;
        for (int64_t ne0 : ne0s) {
            const std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
            for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
                const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, isa);
                const Isa hw = cpu::detected_isa();
                const bool runs_here = isa == Isa::scalar || isa == hw || (isa == Isa::avx2 && hw == Isa::avx512);
                if (!k || !runs_here) continue;
                const size_t wrb = row_bytes(*t, ne0), arb = k->act->row_bytes(ne0);
                std::vector<float> x((size_t)(nt * ne0));
                for (auto& v : x) v = nd(rng);
                std::vector<uint8_t> act(arb * (size_t)nt);
                for (int64_t i = 0; i < nt; ++i) k->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
                std::vector<float> all((size_t)(nt * nrows));
                k->run(w.data(), wrb, ne0, 0, nrows, act.data(), arb, nt, all.data(), nrows);
                for (int64_t part : {1, 2, 3, 4, 7}) {
                    std::vector<float> y((size_t)(nt * nrows), -1.0f);
                    for (int64_t t0 = 0; t0 < nt; t0 += part) {
                        const int64_t n = std::min(part, nt - t0);
                        k->run(w.data(), wrb, ne0, 0, nrows, act.data() + arb * t0, arb, n, y.data() + t0 * nrows, nrows);
                    }
                    for (size_t i = 0; i < y.size(); ++i)
                        ASSERT_EQ(f32_to_bits(y[i]), f32_to_bits(all[i]))
                            << t->name << " " << cpu::isa_name(isa) << " ne0=" << ne0 << " tiles of " << part
                            << ": token " << i / nrows << " row " << i % nrows;
                }
            }
        }
    }
}

// Trellis types: the SIMD kernels take a different form for 1-3 tokens (the generator's state
// dotted straight with rearranged activations) than for larger tiles (blocks decoded to bytes
// first); both must give the same integer lane sums and float operations, so the same bits.
TEST(QuantGtiKernelKt, TileSizeDoesNotChangeBits) {
    for (uint32_t type : {(uint32_t)T_IQ1_KT, (uint32_t)T_IQ2_KT, (uint32_t)T_IQ3_KT, (uint32_t)T_IQ4_KT})
        expect_tile_size_keeps_bits(type, {256, 1024});
}

// The grid i-quants below kGridConvMinTokens: single tokens of IQ1_S / IQ1_M take their own dot
// (grid_row_iq1_token) and pass 1 decodes blocks in pairs on AVX-512 VBMI (an odd last block
// alone: 3 blocks), tiles of 2-4 tokens the shared one -- the same integer lanes and float
// operations either way.
TEST(QuantGtiKernelGrid, TileSizeDoesNotChangeBits) {
    for (uint32_t type : {(uint32_t)T_IQ1_S, (uint32_t)T_IQ1_M, (uint32_t)T_IQ2_XXS, (uint32_t)T_IQ2_XS, (uint32_t)T_IQ2_S,
                          (uint32_t)T_IQ3_XXS, (uint32_t)T_IQ3_S})
        expect_tile_size_keeps_bits(type, {256, 768, 1024});
}

// Types multiplied in exact integers per activation block at every batch size (the reference's
// numerics): IQ1_S_R4 / IQ1_M_R4 (per 128 columns), Q8_K_R8 / Q8_K_R16 (per 256), Q8_KV /
// Q8_KV_R8 (per row). Every ISA keeps the scalar kernel's integer lanes and float operations,
// whichever form it takes (IQ1 on AVX-512: codes formed per tile below 8 tokens, prepared |c| m
// bytes from 8; the 8-bit types on VNNI: q + 128 and an activation-sum correction), so every ISA
// and every split of the tokens into calls gives the scalar kernel's bits.
TEST(QuantGtiKernelExactR, EveryIsaAndSplitMatchesScalarBits) {
    for (uint32_t type : {(uint32_t)T_IQ1_S_R4, (uint32_t)T_IQ1_M_R4, (uint32_t)T_Q8_K_R8, (uint32_t)T_Q8_K_R16,
                          (uint32_t)T_Q8_KV, (uint32_t)T_Q8_KV_R8}) {
        const TypeTraits* t = find_type(type);
        std::mt19937 rng(11 + type);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        const cpu::MatmulKernel* ks = cpu::find_matmul_exact(type, Isa::scalar);
        ASSERT_NE(ks, nullptr);
        const bool k128 = type == T_IQ1_S_R4 || type == T_IQ1_M_R4, kv = type == T_Q8_KV || type == T_Q8_KV_R8;
        for (int64_t ne0 : {k128 ? 128 : kv ? 96 : 256, k128 ? 640 : 768}) {
            const int64_t nrows = std::max<int64_t>(3 * t->interleave, 5), nt = 21;
            const std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
            const size_t wrb = row_bytes(*t, ne0), arb = ks->act->row_bytes(ne0);
            std::vector<float> x((size_t)(nt * ne0));
            for (auto& v : x) v = nd(rng);
            std::vector<uint8_t> act(arb * (size_t)nt);
            for (int64_t i = 0; i < nt; ++i) ks->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
            std::vector<float> y0((size_t)(nt * nrows));
            ks->run(w.data(), wrb, ne0, 0, nrows, act.data(), arb, nt, y0.data(), nrows);
            for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
                const Isa hw = cpu::detected_isa();
                const bool runs_here = isa == Isa::scalar || isa == hw || (isa == Isa::avx2 && hw == Isa::avx512);
                const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, isa);
                if (!k || !runs_here) continue;
                ASSERT_EQ(k->act->id, ks->act->id);
                for (int64_t part : {1, 2, 3, 5, 8, 9, 21}) {
                    std::vector<float> y((size_t)(nt * nrows), -1.0f);
                    for (int64_t t0 = 0; t0 < nt; t0 += part) {
                        const int64_t n = std::min(part, nt - t0);
                        k->run(w.data(), wrb, ne0, 0, nrows, act.data() + arb * t0, arb, n, y.data() + t0 * nrows, nrows);
                    }
                    for (size_t i = 0; i < y.size(); ++i)
                        ASSERT_EQ(f32_to_bits(y[i]), f32_to_bits(y0[i]))
                            << t->name << " " << cpu::isa_name(isa) << " ne0=" << ne0 << " calls of " << part
                            << ": token " << i / nrows << " row " << i % nrows;
                }
            }
        }
    }
}

// Grid i-quants in large batches (>= 32 tokens) are re-encoded like the reference's Q8_K_R8
// repack (interleaved_common.h grid_conv_row): modelled here from the dequantized weights, which
// are exact multiples of the block unit u = d * unit.
TEST(QuantGtiKernelGrid, LargeBatchesReencodeTo8Bits) {
    struct G { uint32_t type; float d0, unit; int bytes; };
    const G grids[] = {{T_IQ2_XXS, 1.0f / 124, 0.125f, 66}, {T_IQ2_XS, 1.0f / 124, 0.125f, 74},
                       {T_IQ2_S, 1.0f / 124, 0.125f, 82},   {T_IQ3_XXS, 1.0f / 124, 0.25f, 98},
                       {T_IQ3_S, 1.0f / 127, 1.0f, 110},    {T_IQ1_S, 1.0f / 126, 0.125f, 50},
                       {T_IQ1_M, 1.0f / 126, 0.125f, 56}};
    // 3 rows: a short panel; 19 rows x 45 tokens: a full 16-row panel and a short one, token
    // tiles of 8, 4 and 1 (the AVX-512 panel GEMM).
    for (const G& gd : grids)
      for (auto [nrows, nt] : {std::pair<int64_t, int64_t>{3, 36}, {19, 45}}) {
        const TypeTraits* t = find_type(gd.type);
        std::mt19937 rng(7 + gd.type);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        const int64_t ne0 = 512;
        std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
        const size_t wrb = row_bytes(*t, ne0);
        // sane block scales (random bytes could be huge, inf or NaN)
        std::uniform_real_distribution<float> ud(1e-3f, 1e-2f);
        for (int64_t r = 0; r < nrows; ++r)
            for (int64_t b = 0; b < ne0 / 256; ++b) {
                uint8_t* blk = w.data() + wrb * r + gd.bytes * b;
                const uint16_t h = f32_to_f16(ud(rng));
                if (gd.type == T_IQ1_M) {  // fp16 bits in the top nibbles of the four scale words
                    for (int i = 0; i < 4; ++i) {
                        uint16_t sc;
                        std::memcpy(&sc, blk + 48 + 2 * i, 2);
                        sc = (uint16_t)((sc & 0x0FFF) | (((h >> (4 * i)) & 15) << 12));
                        std::memcpy(blk + 48 + 2 * i, &sc, 2);
                    }
                } else {
                    std::memcpy(blk, &h, 2);
                }
            }
        std::vector<float> x((size_t)(nt * ne0)), wf((size_t)(nrows * ne0));
        for (auto& v : x) v = nd(rng);
        for (int64_t r = 0; r < nrows; ++r) t->dequant(w.data() + wrb * r, wf.data() + r * ne0, ne0);
        // model: re-encoded weights, per 256-block
        std::vector<double> wq((size_t)(nrows * ne0));
        for (int64_t r = 0; r < nrows; ++r)
            for (int64_t b = 0; b < ne0 / 256; ++b) {
                const uint8_t* blk = w.data() + wrb * r + gd.bytes * b;
                uint16_t h;
                if (gd.type == T_IQ1_M) {
                    uint16_t sc[4];
                    std::memcpy(sc, blk + 48, 8);
                    h = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
                } else {
                    std::memcpy(&h, blk, 2);
                }
                const float u = f16_to_f32(h) * gd.unit;
                const float* y = wf.data() + r * ne0 + 256 * b;
                int P[256], mx = 0;
                for (int j = 0; j < 256; ++j) {
                    P[j] = u == 0.0f ? 0 : (int)std::lround((double)y[j] / u);
                    ASSERT_EQ((double)P[j] * u, (double)y[j]) << t->name << ": weight not a multiple of the unit";
                    mx = std::max(mx, std::abs(P[j]));
                }
                float dnew = (float)mx * gd.d0;
                const bool keep = dnew < 1.0f;
                if (keep) dnew = 1.0f;
                const float inv = 1.0f / dnew, scale = f16_to_f32(f32_to_f16(u * dnew));
                for (int j = 0; j < 256; ++j)
                    wq[(size_t)(r * ne0 + 256 * b + j)] = (double)scale * (keep ? P[j] : std::nearbyint((float)P[j] * inv));
            }
        std::vector<float> ys;
        for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
            if (isa == Isa::avx2 && !(cpu::detected_isa() == Isa::avx2 || cpu::detected_isa() == Isa::avx512)) continue;
            if (isa == Isa::avx512 && cpu::detected_isa() != Isa::avx512) continue;
            if (isa == Isa::neon && cpu::detected_isa() != Isa::neon) continue;
            const cpu::MatmulKernel* k = cpu::find_matmul_exact(gd.type, isa);
            ASSERT_NE(k, nullptr);
            const size_t arb = k->act->row_bytes(ne0);
            std::vector<uint8_t> act(arb * (size_t)nt);
            std::vector<float> xf((size_t)(nt * ne0));
            for (int64_t i = 0; i < nt; ++i) {
                k->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
                act_decoder(k->act->id)(act.data() + arb * i, xf.data() + i * ne0, ne0);
            }
            std::vector<float> y((size_t)(nt * nrows));
            k->run(w.data(), wrb, ne0, 0, nrows, act.data(), arb, nt, y.data(), nrows);
            bool differs = false;  // the re-encoding must matter somewhere
            for (int64_t i = 0; i < nt; ++i)
                for (int64_t r = 0; r < nrows; ++r) {
                    double ref = 0, direct = 0, mag = 0;
                    for (int64_t c = 0; c < ne0; ++c) {
                        ref += wq[(size_t)(r * ne0 + c)] * xf[i * ne0 + c];
                        direct += (double)wf[r * ne0 + c] * xf[i * ne0 + c];
                        mag += std::fabs((double)wf[r * ne0 + c] * xf[i * ne0 + c]);
                    }
                    ASSERT_NEAR(y[i * nrows + r], ref, 2e-5 * mag + 1e-30) << t->name << " " << cpu::isa_name(isa);
                    differs = differs || std::fabs(ref - direct) > 1e-4 * mag;
                }
            EXPECT_TRUE(differs) << t->name;
        }
      }
}

// BF16_R16 on AVX-512 runs two 16-row groups per pass (32 rows x 8 / 4 / 1 tokens) and a lone
// group after them; every output keeps its own accumulator chain, so a call over 5 groups and 13
// tokens must give, bit for bit, what one group and one token at a time give (a wrong group
// offset, stride or token tail fails it).
TEST(QuantGtiKernelBf16R16, GroupPairsMatchSingleGroupBits) {
    const cpu::MatmulKernel* k = cpu::find_matmul_exact(T_BF16_R16, Isa::avx512);
    if (!k || cpu::detected_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512 BF16_R16 kernel on this CPU";
    const TypeTraits* t = find_type(T_BF16_R16);
    ASSERT_NE(t, nullptr);
    std::mt19937 rng(77);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t ne0 = 320, groups = 5, nrows = 16 * groups, nt = 13;
    const std::vector<uint8_t> w = random_weights(*t, ne0, nrows, rng);
    const size_t wrb = row_bytes(*t, ne0), arb = k->act->row_bytes(ne0);
    std::vector<float> x((size_t)(nt * ne0));
    for (auto& v : x) v = nd(rng);
    std::vector<uint8_t> act(arb * (size_t)nt);
    for (int64_t i = 0; i < nt; ++i) k->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
    const int64_t ys = nrows + 5;
    std::vector<float> all((size_t)(nt * ys), -1.0f), one((size_t)(nt * ys), -1.0f);
    k->run(w.data(), wrb, ne0, 0, nrows, act.data(), arb, nt, all.data(), ys);
    for (int64_t g = 0; g < groups; ++g)
        for (int64_t i = 0; i < nt; ++i)
            k->run(w.data(), wrb, ne0, 16 * g, 16 * (g + 1), act.data() + arb * i, arb, 1, one.data() + i * ys, ys);
    for (int64_t i = 0; i < nt; ++i)
        for (int64_t r = 0; r < nrows; ++r)
            ASSERT_EQ(f32_to_bits(all[i * ys + r]), f32_to_bits(one[i * ys + r])) << "row " << r << " token " << i;
}
