// The CPU mul_mat op for every computable weight type, through the engine's thread split:
// results are identical for 1..4 threads, for odd token counts and row counts that do not
// divide evenly into chunks, and agree with the scalar reference kernel (IKLLM_ISA-independent:
// the scalar kernel is called directly).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_ops.h"
#include "matmul_rows.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"
#include "tensor_view.h"

using namespace ikllm;

namespace {

struct Case {
    int64_t ne0, rows, nt;
};

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// mul_mat (or, with swiglu, mul_mat_swiglu using w as both gate and up weights) through the op.
std::vector<float> run_op(const quant::TypeTraits& tt, const std::vector<uint8_t>& w, const std::vector<float>& x,
                          const Case& c, int threads, bool invariant = false, bool swiglu = false) {
    Tensor W, X, Y;
    W.type = tt.id;
    W.ne[0] = c.ne0;
    W.ne[1] = c.rows;
    W.nb[1] = quant::row_bytes(tt, c.ne0);
    W.data = const_cast<uint8_t*>(w.data());
    W.name = "w";
    X.type = quant::T_F32;
    X.ne[0] = c.ne0;
    X.ne[1] = c.nt;
    X.nb[0] = 4;
    X.nb[1] = 4 * c.ne0;
    X.data = const_cast<float*>(x.data());
    std::vector<float> y((size_t)(c.rows * c.nt), NAN);
    Y.type = quant::T_F32;
    Y.ne[0] = c.rows;
    Y.ne[1] = c.nt;
    Y.nb[0] = 4;
    Y.nb[1] = 4 * c.rows;
    Y.data = y.data();
    Op op;
    op.kind = swiglu ? OpKind::mul_mat_swiglu : OpKind::mul_mat;
    op.src[0] = &W;
    op.src[1] = &X;
    if (swiglu) op.src[2] = &W;
    op.batch_invariant = invariant;
    op.dst = &Y;
    cpu::ThreadPool pool(threads);
    cpu::Scratch scratch;
    if (swiglu) cpu::op_mul_mat_swiglu(op, pool, scratch);
    else cpu::op_mul_mat(op, pool, scratch);
    return y;
}

std::vector<float> run_scalar(const quant::TypeTraits& tt, const std::vector<uint8_t>& w, const std::vector<float>& x,
                              const Case& c) {
    const cpu::MatmulKernel* k = cpu::find_matmul(tt.id, cpu::Isa::scalar);
    const size_t arb = k->act->row_bytes(c.ne0);
    std::vector<uint8_t> act(arb * (size_t)c.nt);
    for (int64_t t = 0; t < c.nt; ++t) k->act->encode_row(x.data() + t * c.ne0, act.data() + t * arb, c.ne0);
    std::vector<float> y((size_t)(c.rows * c.nt));
    k->run(w.data(), quant::row_bytes(tt, c.ne0), c.ne0, 0, c.rows, act.data(), arb, c.nt, y.data(), c.rows);
    return y;
}

TEST(CpuMatmulThreads, EveryTypeAnyThreadCountMatchesScalar) {
    size_t n = 0;
    const quant::TypeTraits* all = quant::all_types(&n);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f);
    int tested = 0;
    for (size_t i = 0; i < n; ++i) {
        const quant::TypeTraits& tt = all[i];
        if (!tt.quantize || tt.is_activation_only || !cpu::find_matmul(tt.id, cpu::best_isa())) continue;
        const int64_t il = tt.interleave;
        // 2 blocks per row (or 512 columns for 256-blocks); rows: 13 groups (odd, uneven over threads)
        const Case c{std::max<int64_t>(512, 2 * tt.block_elems), 13 * il, 67};  // 67 tokens: two token blocks
        std::vector<float> wf((size_t)(c.ne0 * c.rows)), x((size_t)(c.ne0 * c.nt));
        for (auto& v : wf) v = nd(rng) * 0.1f;
        for (auto& v : x) v = nd(rng);
        const size_t rb = quant::row_bytes(tt, c.ne0);
        std::vector<uint8_t> w(rb * (size_t)c.rows);
        for (int64_t r = 0; r < c.rows; r += il) tt.quantize(wf.data() + r * c.ne0, w.data() + r * rb, c.ne0, nullptr);
        const std::vector<float> ref = run_scalar(tt, w, x, c);
        const std::vector<float> y1 = run_op(tt, w, x, c, 1);
        for (int threads : {2, 3, 4}) {
            const std::vector<float> yt = run_op(tt, w, x, c, threads);
            for (size_t j = 0; j < yt.size(); ++j)
                ASSERT_EQ(y1[j], yt[j]) << tt.name << " threads " << threads << " element " << j;
        }
        // A prompt batch on the AMX tile unit has bf16 numerics of its own (checked against double
        // precision in quant_amx_matmul_test): the op must give exactly the kernel's results.
        const cpu::MatmulKernel* kb = cpu::find_batch_matmul(tt.id, cpu::best_isa(), c.nt);
        if (kb == cpu::find_amx_matmul(tt.id)) {
            const size_t arb = kb->act->row_bytes(c.ne0);
            std::vector<uint8_t> act(arb * (size_t)c.nt);
            for (int64_t t = 0; t < c.nt; ++t) kb->act->encode_row(x.data() + t * c.ne0, act.data() + t * arb, c.ne0);
            std::vector<float> yk((size_t)(c.rows * c.nt));
            kb->run(w.data(), rb, c.ne0, 0, c.rows, act.data(), arb, c.nt, yk.data(), c.rows);
            for (size_t j = 0; j < yk.size(); ++j) ASSERT_EQ(y1[j], yk[j]) << tt.name << " (amx) element " << j;
            ++tested;
            continue;
        }
        // Against the scalar kernel: tolerance scaled by the magnitudes involved.
        double num = 0, den = 0;
        for (size_t j = 0; j < ref.size(); ++j) {
            ASSERT_TRUE(std::isfinite(y1[j])) << tt.name;
            num += (y1[j] - ref[j]) * (y1[j] - ref[j]);
            den += ref[j] * ref[j];
        }
        EXPECT_LT(std::sqrt(num / std::max(den, 1e-30)), 2e-3) << tt.name << " (" << cpu::isa_name(cpu::best_isa()) << ")";
        ++tested;
    }
    EXPECT_GT(tested, 60);
}

}  // namespace

namespace {
// Batch invariance (session option batch_invariant): every kernel, on every ISA, computes a token
// of a call of up to kInvariantTokens tokens exactly as it computes that token alone, and the
// ops built on them keep their calls that small. Checked for every computable type with a
// 100-token batch (4 calls) against single-token products.
TEST(CpuMatmulThreads, BatchInvariantOpsMatchSingleTokens) {
    size_t n = 0;
    const quant::TypeTraits* all = quant::all_types(&n);
    std::mt19937 rng(9);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<cpu::Isa> isas{cpu::Isa::scalar};
    if (cpu::detected_isa() == cpu::Isa::avx2 || cpu::detected_isa() == cpu::Isa::avx512) isas.push_back(cpu::Isa::avx2);
    if (cpu::detected_isa() == cpu::Isa::avx512) isas.push_back(cpu::Isa::avx512);
    int tested = 0;
    for (size_t i = 0; i < n; ++i) {
        const quant::TypeTraits& tt = all[i];
        if (!tt.quantize || tt.is_activation_only || !cpu::find_matmul(tt.id, cpu::best_isa())) continue;
        const int64_t il = tt.interleave;
        const int64_t ne0 = std::max<int64_t>(512, 2 * tt.block_elems), rows = 2 * std::max<int64_t>(il, 16), T = 100;
        std::vector<float> wf((size_t)(ne0 * rows)), x((size_t)(ne0 * T));
        for (auto& v : wf) v = nd(rng) * 0.1f;
        for (auto& v : x) v = nd(rng);
        const size_t rb = quant::row_bytes(tt, ne0);
        std::vector<uint8_t> w(rb * (size_t)rows);
        for (int64_t r = 0; r < rows; r += il) tt.quantize(wf.data() + r * ne0, w.data() + r * rb, ne0, nullptr);
        for (cpu::Isa isa : isas) {
            const cpu::MatmulKernel* k = cpu::find_matmul(tt.id, isa);
            ASSERT_NE(k, nullptr) << tt.name;
            const size_t arb = k->act->row_bytes(ne0);
            std::vector<uint8_t> act(arb * (size_t)T);
            for (int64_t t = 0; t < T; ++t) k->act->encode_row(x.data() + t * ne0, act.data() + t * arb, ne0);
            std::vector<float> batch((size_t)(rows * T)), one((size_t)rows);
            cpu::run_rows(*k, w.data(), rb, ne0, 0, rows, act.data(), arb, T, batch.data(), rows, cpu::kInvariantTokens);
            for (int64_t t = 0; t < T; ++t) {
                k->run(w.data(), rb, ne0, 0, rows, act.data() + t * arb, arb, 1, one.data(), rows);
                for (int64_t r = 0; r < rows; ++r)
                    ASSERT_EQ(f32_bits(one[(size_t)r]), f32_bits(batch[(size_t)(t * rows + r)]))
                        << tt.name << " " << cpu::isa_name(k->isa) << " token " << t << " row " << r;
            }
        }
        ++tested;
    }
    EXPECT_GT(tested, 60);
}

// The same through the ops (best ISA, 2 threads): a 100-token mul_mat and mul_mat_swiglu with
// batch_invariant set give each token the bits of a 1-token op; without it the batch forms differ.
TEST(CpuMatmulThreads, BatchInvariantFlagThroughOps) {
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const char* name : {"q4_0", "q4_K", "q6_K", "iq4_xs", "iq4_k"}) {
        const quant::TypeTraits* tt = quant::find_type_by_name(name);
        ASSERT_NE(tt, nullptr) << name;
        const Case c{1024, 64, 100};
        std::vector<float> wf((size_t)(c.ne0 * c.rows)), x((size_t)(c.ne0 * c.nt));
        for (auto& v : wf) v = nd(rng) * 0.1f;
        for (auto& v : x) v = nd(rng);
        const size_t rb = quant::row_bytes(*tt, c.ne0);
        std::vector<uint8_t> w(rb * (size_t)c.rows);
        for (int64_t r = 0; r < c.rows; r += tt->interleave) tt->quantize(wf.data() + r * c.ne0, w.data() + r * rb, c.ne0, nullptr);
        const std::vector<float> inv = run_op(*tt, w, x, c, 2, true);
        const std::vector<float> swi = run_op(*tt, w, x, c, 2, true, true);
        for (int64_t t = 0; t < c.nt; ++t) {
            const std::vector<float> xt(x.begin() + t * c.ne0, x.begin() + (t + 1) * c.ne0);
            const std::vector<float> one = run_op(*tt, w, xt, Case{c.ne0, c.rows, 1}, 2, true);
            const std::vector<float> one_swi = run_op(*tt, w, xt, Case{c.ne0, c.rows, 1}, 2, true, true);
            for (int64_t r = 0; r < c.rows; ++r) {
                ASSERT_EQ(f32_bits(one[(size_t)r]), f32_bits(inv[(size_t)(t * c.rows + r)])) << name << " token " << t;
                ASSERT_EQ(f32_bits(one_swi[(size_t)r]), f32_bits(swi[(size_t)(t * c.rows + r)])) << name << " swiglu token " << t;
            }
        }
    }
}
// Per-head products (deepseek2's absorbed MLA) write each head's rows straight into a strided
// destination view: every head equals a plain mul_mat of that head's matrix, bit for bit, and the
// view's padding is untouched. 80 tokens (the prompt-batch kernels where the CPU has them) and 7.
TEST(CpuMatmulThreads, PerHeadProductsEqualPerHeadMulMat) {
    std::mt19937 rng(12);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const char* name : {"q8_0", "iq4_k", "f16"}) {
        const quant::TypeTraits* tt = quant::find_type_by_name(name);
        ASSERT_NE(tt, nullptr) << name;
        for (int64_t T : {80, 7}) {
            const int64_t K = 256, N = 48, H = 3, pad = 5;  // dst rows: N + pad floats per head
            const size_t rb = quant::row_bytes(*tt, K);
            std::vector<uint8_t> w(rb * (size_t)(N * H));
            std::vector<float> wf((size_t)(K * N * H)), x((size_t)(K * H * T));
            for (auto& v : wf) v = nd(rng) * 0.1f;
            for (auto& v : x) v = nd(rng);
            for (int64_t r = 0; r < N * H; ++r) tt->quantize(wf.data() + r * K, w.data() + r * rb, K, nullptr);
            Tensor W = tensor_view(w.data(), tt->id, K, N, H, rb, rb * N);
            Tensor X = tensor_view(x.data(), quant::T_F32, K, H, T, 4 * K, 4 * K * H);
            std::vector<float> y((size_t)((N + pad) * H * T), -7.f);
            Tensor Y = tensor_view(y.data(), quant::T_F32, N, H, T, 4 * (N + pad), 4 * (N + pad) * H);
            Op op;
            op.kind = OpKind::mul_mat_heads;
            op.src[0] = &W;
            op.src[1] = &X;
            op.dst = &Y;
            cpu::ThreadPool pool(2);
            cpu::Scratch scratch;
            cpu::op_mul_mat_heads(op, pool, scratch);
            for (int64_t h = 0; h < H; ++h) {
                std::vector<uint8_t> wh(w.begin() + (size_t)(h * N) * rb, w.begin() + (size_t)((h + 1) * N) * rb);
                std::vector<float> xh((size_t)(K * T));
                for (int64_t t = 0; t < T; ++t)
                    std::copy(x.begin() + (t * H + h) * K, x.begin() + (t * H + h + 1) * K, xh.begin() + t * K);
                const std::vector<float> ref = run_op(*tt, wh, xh, Case{K, N, T}, 2);
                for (int64_t t = 0; t < T; ++t) {
                    const float* row = y.data() + (t * H + h) * (N + pad);
                    for (int64_t r = 0; r < N; ++r)
                        ASSERT_EQ(f32_bits(row[r]), f32_bits(ref[(size_t)(t * N + r)])) << name << " T " << T << " head " << h;
                    for (int64_t r = N; r < N + pad; ++r) ASSERT_EQ(row[r], -7.f) << name << " padding";
                }
            }
        }
    }
}
}  // namespace

namespace {
// A group of products of one input (op_mul_mat_group: a layer's Q, K and V) gives each product
// exactly the bits of its own mul_mat, with weights of types that want different activation
// formats, a bias on one of them, and 1 / 3 / 67 tokens on 1-3 threads.
TEST(CpuMatmulThreads, GroupedProductsMatchSingleOps) {
    std::mt19937 rng(13);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int64_t K = 512;
    const char* names[] = {"q4_K", "f32", "q6_K", "q4_0"};
    const int64_t rows[] = {96, 16, 40, 64};
    std::vector<std::vector<uint8_t>> w(4);
    std::vector<Tensor> W(4);
    std::vector<float> bias((size_t)rows[2]);
    for (auto& v : bias) v = nd(rng);
    Tensor B;
    B.type = quant::T_F32;
    B.ne[0] = rows[2];
    B.nb[0] = 4;
    B.nb[1] = 4 * rows[2];
    B.data = bias.data();
    for (int i = 0; i < 4; ++i) {
        const quant::TypeTraits* tt = quant::find_type_by_name(names[i]);
        ASSERT_NE(tt, nullptr) << names[i];
        std::vector<float> wf((size_t)(K * rows[i]));
        for (auto& v : wf) v = nd(rng) * 0.1f;
        const size_t rb = quant::row_bytes(*tt, K);
        w[i].resize(rb * (size_t)rows[i]);
        for (int64_t r = 0; r < rows[i]; r += tt->interleave) tt->quantize(wf.data() + r * K, w[i].data() + r * rb, K, nullptr);
        W[i].type = tt->id;
        W[i].ne[0] = K;
        W[i].ne[1] = rows[i];
        W[i].nb[1] = rb;
        W[i].data = w[i].data();
        W[i].name = names[i];
    }
    for (int64_t T : {1, 3, 67}) {
        std::vector<float> x((size_t)(K * T));
        for (auto& v : x) v = nd(rng);
        Tensor X;
        X.type = quant::T_F32;
        X.ne[0] = K;
        X.ne[1] = T;
        X.nb[0] = 4;
        X.nb[1] = 4 * K;
        X.data = x.data();
        for (int threads : {1, 2, 3}) {
            std::vector<std::vector<float>> single(4), grouped(4);
            std::vector<Tensor> Y(4);
            Op ops[4];
            for (int i = 0; i < 4; ++i) {
                single[i].assign((size_t)(rows[i] * T), NAN);
                grouped[i].assign((size_t)(rows[i] * T), NAN);
                Y[i].type = quant::T_F32;
                Y[i].ne[0] = rows[i];
                Y[i].ne[1] = T;
                Y[i].nb[0] = 4;
                Y[i].nb[1] = 4 * rows[i];
                ops[i].kind = OpKind::mul_mat;
                ops[i].src[0] = &W[i];
                ops[i].src[1] = &X;
                ops[i].src[2] = i == 2 ? &B : nullptr;
                ops[i].dst = &Y[i];
            }
            cpu::ThreadPool pool(threads);
            cpu::Scratch scratch;
            for (int i = 0; i < 4; ++i) {
                Y[i].data = single[i].data();
                cpu::op_mul_mat(ops[i], pool, scratch);
                Y[i].data = grouped[i].data();
            }
            cpu::op_mul_mat_group(ops, 4, pool, scratch);
            for (int i = 0; i < 4; ++i)
                for (size_t j = 0; j < single[i].size(); ++j)
                    ASSERT_EQ(f32_bits(single[i][j]), f32_bits(grouped[i][j]))
                        << names[i] << " T " << T << " threads " << threads << " element " << j;
        }
    }
}
}  // namespace

// The row chunks of a product cover every row once, in whole units; for a few tokens the chunks
// handed out later (lower index) are never larger than earlier ones, and none but the last one
// holds less than the minimum bytes of weights when there are enough rows.
TEST(CpuMatmulThreads, RowChunksCoverEveryRowOnce) {
    for (int64_t rows : {1, 7, 16, 100, 512, 2048, 8192, 131072})
        for (int64_t unit : {1, 4, 8, 16})
            for (int threads : {1, 2, 3, 8})
                for (int64_t tokens : {1, 4, 5, 512})
                    for (size_t row_bytes : {18u * 64, 144u * 8, 210u * 3}) {
                        SCOPED_TRACE(testing::Message() << "rows " << rows << " unit " << unit << " threads " << threads
                                                        << " tokens " << tokens << " row bytes " << row_bytes);
                        const cpu::RowChunks ch(rows, unit, threads, 4, tokens, row_bytes);
                        ASSERT_GE(ch.count(), 1);
                        ASSERT_LE(ch.count(), cpu::RowChunks::kMax);
                        std::vector<int> seen((size_t)rows, 0);
                        int64_t biggest = 0;
                        for (int64_t c = 0; c < ch.count(); ++c) {
                            ASSERT_LT(ch.r0(c), ch.r1(c));
                            ASSERT_EQ(ch.r0(c) % unit, 0);
                            ASSERT_LE(ch.r1(c), rows);
                            biggest = std::max(biggest, ch.r1(c) - ch.r0(c));
                            for (int64_t r = ch.r0(c); r < ch.r1(c); ++r) seen[(size_t)r]++;
                        }
                        EXPECT_EQ(biggest, ch.max_rows());
                        for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(seen[(size_t)r], 1) << "row " << r;
                        if (tokens > cpu::RowChunks::kGuidedMaxTokens || threads == 1) continue;
                        // hand-out order: highest index first; sizes never grow (the final one may be a remainder)
                        for (int64_t c = ch.count() - 1; c >= 2; --c)
                            EXPECT_GE(ch.r1(c) - ch.r0(c), ch.r1(c - 1) - ch.r0(c - 1)) << "chunk " << c;
                        const int64_t min_rows = (int64_t)(cpu::RowChunks::kGuidedMinBytes / row_bytes);
                        for (int64_t c = 1; c < ch.count(); ++c)
                            EXPECT_GE(ch.r1(c) - ch.r0(c), std::min<int64_t>(rows, min_rows)) << "chunk " << c;
                        EXPECT_GE(ch.count(), std::min<int64_t>(threads, (rows + unit - 1) / unit) > 1 && rows * (int64_t)row_bytes >= 4 * cpu::RowChunks::kGuidedMinBytes ? 2 : 1);
                    }
}
