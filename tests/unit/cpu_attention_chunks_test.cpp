// The fp32 flash-attention op over long cell lists (cut into softmax chunks that are merged
// afterwards) and for every work split it picks:
//  - each query equals double-precision softmax attention over the decoded cache rows, for GQA
//    (f16 cache, 3 chunks), a batch straddling a chunk boundary (its first queries see nothing of
//    the last chunk) and MLA (q8_0 latent rows as keys and values);
//  - bit for bit the same outputs with 1, 2 or 3 threads, decoding each token alone, and under a
//    scratch bound small enough to split the work differently and merge in several waves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "attention_setup.h"
#include "cpu_ops.h"

using namespace ikllm;
using ikllm_test::AttnCase;
using ikllm_test::AttnSetup;

namespace {

std::vector<float> run(Op op, int threads, float scratch_mib = 0.0f) {
    cpu::ThreadPool pool(threads);
    cpu::Scratch scratch;
    op.batch_invariant = true;  // the fp32 kernels, whatever the batch size
    op.f[1] = scratch_mib;
    std::fill((float*)op.dst->data, (float*)op.dst->data + op.dst->ne[0] * op.dst->ne[1], 0.0f);
    cpu::op_attention(op, pool, scratch);
    const float* o = static_cast<const float*>(op.dst->data);
    return std::vector<float>(o, o + op.dst->ne[0] * op.dst->ne[1]);
}

// Softmax attention in double over the decoded rows of sequence 0's cells at or before pos.
std::vector<double> reference(const AttnCase& c, const AttnSetup& s, int64_t t, int64_t h) {
    const int64_t g = h / (c.n_head / c.n_head_kv);
    const size_t krb = quant::kv_row_bytes(c.cache_type, c.d_k), vrb = quant::kv_row_bytes(c.cache_type, c.d_v);
    std::vector<float> k(c.d_k), v(c.d_v);
    std::vector<double> w, acc(c.d_v, 0.0);
    std::vector<std::vector<float>> vals;
    double mx = -INFINITY;
    const float* qr = s.q.data() + (t * c.n_head + h) * c.d_k;
    for (size_t cell = 0; cell < s.cell_pos.size(); ++cell) {
        if (s.seqs[cell] != 1 || s.cell_pos[cell] > s.pos[t]) continue;
        quant::kv_decode_row(c.cache_type, s.kcache.data() + (cell * c.n_head_kv + g) * krb, k.data(), c.d_k);
        if (c.latent) std::copy(k.begin(), k.begin() + c.d_v, v.begin());
        else quant::kv_decode_row(c.cache_type, s.vcache.data() + (cell * c.n_head_kv + g) * vrb, v.data(), c.d_v);
        double d = 0;
        for (int64_t i = 0; i < c.d_k; ++i) d += (double)qr[i] * k[i];
        w.push_back(d * s.op.f[0]);
        vals.push_back(v);
        mx = std::max(mx, w.back());
    }
    double sum = 0;
    for (auto& x : w) sum += (x = std::exp(x - mx));
    for (size_t j = 0; j < w.size(); ++j)
        for (int64_t i = 0; i < c.d_v; ++i) acc[i] += w[j] / sum * vals[j][i];
    return acc;
}

void check(const AttnCase& c) {
    SCOPED_TRACE("d_k " + std::to_string(c.d_k) + " heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) +
                 " T " + std::to_string(c.T) + " cells " + std::to_string(c.n_seq0));
    AttnSetup s;
    ikllm_test::setup(c, s, (uint32_t)(c.n_seq0 + c.T));
    const std::vector<float> out = run(s.op, 2);
    const int64_t w = c.d_v * c.n_head;
    for (int64_t t = 0; t < c.T; ++t)
        for (int64_t h = 0; h < c.n_head; ++h) {
            const std::vector<double> ref = reference(c, s, t, h);
            double err = 0, mag = 0;
            for (int64_t i = 0; i < c.d_v; ++i) {
                const double d = out[t * w + h * c.d_v + i] - ref[i];
                err += d * d;
                mag += ref[i] * ref[i];
            }
            ASSERT_LT(std::sqrt(err / mag), 2e-5) << "token " << t << " head " << h;
        }
    for (int threads : {1, 3}) EXPECT_EQ(0, std::memcmp(run(s.op, threads).data(), out.data(), out.size() * 4)) << threads << " threads";
    // A bound of a few tiles' scratch: one query per task, chunk states merged block by block.
    EXPECT_EQ(0, std::memcmp(run(s.op, 2, 0.05f).data(), out.data(), out.size() * 4)) << "under a scratch bound";
    // Each token decoded alone.
    for (int64_t t = 0; t < c.T; ++t) {
        Tensor q1 = tensor_view(s.q.data() + t * c.d_k * c.n_head, quant::T_F32, c.d_k, c.n_head, 1, 4 * c.d_k, 4 * c.d_k * c.n_head);
        std::vector<float> o1(w);
        Tensor out1 = tensor_view(o1.data(), quant::T_F32, w, 1, 1, 4 * w, 4 * w);
        Op op = s.op;
        op.src[0] = &q1;
        op.dst = &out1;
        op.i32 = &s.pos[t];
        op.seq_ids = &s.seq_ids[t];
        op.n_i32 = 1;
        EXPECT_EQ(0, std::memcmp(run(op, 2).data(), out.data() + t * w, 4 * w)) << "token " << t << " decoded alone";
    }
}

TEST(AttentionChunks, GqaF16OverThreeChunks) { check({64, 64, 8, 2, 6, 1300, quant::T_F16, false}); }

TEST(AttentionChunks, BatchAcrossAChunkBoundary) { check({64, 64, 4, 4, 4, 514, quant::T_F16, false}); }

TEST(AttentionChunks, MlaLatentQ8) { check({576, 512, 16, 1, 2, 1100, quant::T_Q8_0, true}); }

TEST(AttentionChunks, OneChunkF32) { check({128, 128, 4, 2, 3, 300, quant::T_F32, false}); }

}  // namespace
