// The CPU mul_mat op for every computable weight type, through the engine's thread split:
// results are identical for 1..4 threads, for odd token counts and row counts that do not
// divide evenly into chunks, and agree with the scalar reference kernel (IKLLM_ISA-independent:
// the scalar kernel is called directly).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu_ops.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

using namespace ikllm;

namespace {

struct Case {
    int64_t ne0, rows, nt;
};

std::vector<float> run_op(const quant::TypeTraits& tt, const std::vector<uint8_t>& w, const std::vector<float>& x,
                          const Case& c, int threads) {
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
    op.kind = OpKind::mul_mat;
    op.src[0] = &W;
    op.src[1] = &X;
    op.dst = &Y;
    cpu::ThreadPool pool(threads);
    cpu::Scratch scratch;
    cpu::op_mul_mat(op, pool, scratch);
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
