// bf16 attention for prompt batches (kernels/attn_amx.h, op_attention_amx), on the tile unit and
// on AVX512-BF16 vector products:
//  - each kernel equals double-precision softmax attention over the bf16-rounded q, k, v within
//    the rounding of the bf16 weights P, for head sizes of llama (64, 128), DeepSeek's MLA
//    (576 / 512) and its decompressed form (192 / 128), key counts that are not multiples of
//    the 32-key groups and cross the 256-key softmax chunks (the running max moves between
//    chunks), 1..32 rows with different visible prefixes (0 visible gives 0);
//  - the op takes the tile path only for single-sequence batches of kAmxMinTokens tokens or more
//    outside batch-invariant sessions, and there agrees with the fp32 flash-attention path
//    (taken with batch_invariant) for GQA with an f16 cache and for MLA with a q8_0 latent cache
//    stored in shuffled cells beside another sequence's cells.
// The kernel test runs each implementation the machine has; the op tests run the one the op picks
// (the tile unit where granted). Skipped (with a message) where the CPU has neither.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cpu_ops.h"
#include "kernels/attn_amx.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"
#include "attention_setup.h"

using namespace ikllm;
using ikllm_test::AttnCase;
using ikllm_test::AttnSetup;
using ikllm_test::setup;

namespace {

#define REQUIRE_BF16_ATTENTION()                                                                    \
    do {                                                                                            \
        if (!cpu::amx_attention() && !cpu::avx512_bf16_attention())                                 \
            GTEST_SKIP() << "neither the AMX-BF16 tile unit nor AVX512-BF16 on this machine";       \
    } while (0)

float bf16_round(float x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&x, &b, 4);
    return x;
}

// Relative RMS difference of a against b.
double rel_rms(const float* a, const double* b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void check_kernel(const cpu::AmxAttention* A, int64_t d_k, int64_t d_v, int64_t n, int nr, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int64_t n_pad = (n + 31) / 32 * 32;
    std::vector<float> k(n * d_k), v(n * d_v), q(nr * d_k);
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < d_k; ++i) k[j * d_k + i] = nd(rng) + 0.002f * (float)j;  // later keys score higher
    for (auto& x : v) x = nd(rng);
    for (auto& x : q) x = nd(rng) + 0.5f;
    std::vector<uint16_t> kp(A->key_elems(n_pad, d_k)), vp(A->value_elems(n_pad, d_v));
    for (int64_t g = 0; g * 32 < n; ++g) {
        const int rows = (int)std::min<int64_t>(32, n - 32 * g);
        A->pack_keys(k.data() + 32 * g * d_k, rows, d_k, kp.data() + g * A->key_elems(32, d_k));
        A->pack_values(v.data() + 32 * g * d_v, rows, d_v, vp.data() + g * A->value_elems(32, d_v));
    }
    std::vector<int64_t> nv(nr);
    std::uniform_int_distribution<int64_t> ud(0, n);
    for (int r = 0; r < nr; ++r) nv[r] = r == 0 ? n : r == 1 ? 0 : ud(rng);
    std::vector<float> out(nr * d_v, 7.0f);
    std::vector<const float*> qr(nr);
    std::vector<float*> orow(nr);
    for (int r = 0; r < nr; ++r) {
        qr[r] = q.data() + r * d_k;
        orow[r] = out.data() + r * d_v;
    }
    A->attend(qr.data(), nv.data(), nr, scale, kp.data(), vp.data(), d_k, d_v, orow.data());
    for (int r = 0; r < nr; ++r) {
        std::vector<double> ref(d_v, 0.0);
        if (nv[r] > 0) {
            std::vector<double> s(nv[r]);
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < nv[r]; ++j) {
                double d = 0;
                for (int64_t i = 0; i < d_k; ++i) d += (double)bf16_round(q[r * d_k + i]) * bf16_round(k[j * d_k + i]);
                s[j] = scale * d;
                mx = std::max(mx, s[j]);
            }
            for (int64_t j = 0; j < nv[r]; ++j) sum += (s[j] = std::exp(s[j] - mx));
            for (int64_t j = 0; j < nv[r]; ++j)
                for (int64_t i = 0; i < d_v; ++i) ref[i] += s[j] / sum * bf16_round(v[j * d_v + i]);
        }
        const double err = rel_rms(out.data() + r * d_v, ref.data(), d_v);
        // P is rounded to bf16 (relative 2^-9 per weight, normalized by the sum of the rounded
        // weights); everything else accumulates in fp32.
        EXPECT_LT(err, nv[r] == 0 ? 1e-30 : 4e-3) << "d_k " << d_k << " d_v " << d_v << " n " << n << " row " << r
                                                  << " visible " << nv[r];
    }
}

void check_kernels(const cpu::AmxAttention* A) {
    for (auto [dk, dv] : {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {192, 128}, {576, 512}})
        for (int64_t n : {1, 31, 300, 600})
            for (int nr : {1, 7, 9, 32}) check_kernel(A, dk, dv, n, nr, 1.0f / std::sqrt((float)dk), (uint32_t)(dk + n + nr));
    check_kernel(A, 128, 128, 700, 32, 0.5f, 5);  // sharp softmax: the running max moves chunk to chunk
}

TEST(AmxAttention, KernelMatchesDoubleReference) {
    if (!cpu::amx_attention()) GTEST_SKIP() << "no AMX-BF16 tile unit on this machine";
    check_kernels(cpu::amx_attention());
}

TEST(Bf16VectorAttention, KernelMatchesDoubleReference) {
    if (!cpu::avx512_bf16_attention()) GTEST_SKIP() << "no AVX512-BF16 on this machine (or IKLLM_BF16_ATTENTION=0)";
    check_kernels(cpu::avx512_bf16_attention());
}

void check_op(const AttnCase& c) {
    cpu::ThreadPool pool(2);
    cpu::Scratch scratch;
    AttnSetup s;
    setup(c, s, (uint32_t)(c.d_k * 7 + c.T));
    ASSERT_TRUE(cpu::op_attention_amx(s.op, pool, scratch)) << c.d_k;
    const std::vector<float> amx = s.out;
    std::fill(s.out.begin(), s.out.end(), 0.0f);
    s.op.batch_invariant = true;  // the fp32 flash-attention kernels
    ASSERT_FALSE(cpu::op_attention_amx(s.op, pool, scratch));
    cpu::op_attention(s.op, pool, scratch);
    std::vector<double> ref(s.out.begin(), s.out.end());
    for (int64_t t = 0; t < c.T; ++t) {
        const int64_t w = c.d_v * c.n_head;
        EXPECT_LT(rel_rms(amx.data() + t * w, ref.data() + t * w, w), 1e-2) << "d_k " << c.d_k << " token " << t;
    }
    // (Q and K are rounded to bf16 as well here: ~4e-3 at most.) Default options run the tile path
    // inside op_attention too.
    s.op.batch_invariant = false;
    std::vector<float> again(s.out.size());
    cpu::op_attention(s.op, pool, scratch);
    EXPECT_EQ(0, std::memcmp(s.out.data(), amx.data(), amx.size() * 4));
}

TEST(AmxAttention, OpMatchesFlashAttentionGqaF16) {
    REQUIRE_BF16_ATTENTION();
    check_op({64, 64, 8, 2, 70, 100, quant::T_F16, false});
    check_op({128, 128, 4, 4, 64, 64, quant::T_F16, false});
}

TEST(AmxAttention, OpMatchesFlashAttentionMlaQ8) {
    REQUIRE_BF16_ATTENTION();
    check_op({576, 512, 16, 1, 65, 300, quant::T_Q8_0, true});
}

TEST(AmxAttention, OpDeclinesWhereItDoesNotApply) {
    REQUIRE_BF16_ATTENTION();
    cpu::ThreadPool pool(2);
    cpu::Scratch scratch;
    AttnSetup s;
    setup({64, 64, 4, 2, 63, 100, quant::T_F16, false}, s, 3);
    EXPECT_FALSE(cpu::op_attention_amx(s.op, pool, scratch)) << "below kAmxMinTokens";
    setup({80, 64, 4, 2, 70, 100, quant::T_F16, false}, s, 3);
    EXPECT_FALSE(cpu::op_attention_amx(s.op, pool, scratch)) << "d_k not a multiple of 32";
    setup({64, 64, 4, 2, 70, 100, quant::T_F16, false}, s, 3);
    s.seq_ids[5] = 1;
    EXPECT_FALSE(cpu::op_attention_amx(s.op, pool, scratch)) << "two sequences";
    s.seq_ids[5] = 0;
    s.op.f[1] = 0.01f;  // scratch bound of 10 KiB
    EXPECT_FALSE(cpu::op_attention_amx(s.op, pool, scratch)) << "packed keys over the scratch bound";
}

}  // namespace
