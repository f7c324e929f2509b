// Matrix product driver: encode the activations once (in parallel over tokens), then split
// the weight rows over threads; each thread runs the type's kernel on its row range.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "cpu_ops.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

void op_mul_mat(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& w = *op.src[0];  // [K, N] weights
    const Tensor& x = *op.src[1];  // [K, T] f32
    const Tensor* bias = op.src[2];
    const Tensor& y = *op.dst;     // [N, T] f32
    const int64_t K = w.ne[0], N = w.ne[1], T = x.ne[1];
    const quant::TypeTraits* tt = quant::find_type(w.type);
    const MatmulKernel* k = find_matmul(w.type, best_isa());
    if (!tt || !k) fail(Status::unsupported, std::string("no CPU matmul kernel for the type of ") + w.name);

    const size_t act_row = k->act->row_bytes(K);
    if (scratch.act.size() < act_row * T) scratch.act.resize(act_row * T);
    uint8_t* act = scratch.act.data();
    pool.parallel_for(T, [&](int64_t t, int) { k->act->encode_row(x.row<float>(t), act + act_row * t, K); });

    const size_t w_row = quant::row_bytes(*tt, K);
    const int64_t group = tt->interleave;
    const int64_t n_groups = N / group;
    // Enough chunks to balance threads, each a whole number of row groups.
    const int64_t target = std::max<int64_t>(1, (int64_t)pool.n_threads() * 4);
    const int64_t groups_per_chunk = std::max<int64_t>(1, (n_groups + target - 1) / target);
    const int64_t n_chunks = (n_groups + groups_per_chunk - 1) / groups_per_chunk;
    const int64_t y_stride = (int64_t)(y.nb[1] / sizeof(float));
    float* yd = static_cast<float*>(y.data);
    const uint8_t* wd = static_cast<const uint8_t*>(w.data);
    pool.parallel_for(n_chunks, [&](int64_t c, int) {
        const int64_t r0 = c * groups_per_chunk * group;
        const int64_t r1 = std::min(N, r0 + groups_per_chunk * group);
        k->run(wd, w_row, K, r0, r1, act, act_row, T, yd, y_stride);
        if (bias) {
            const float* b = static_cast<const float*>(bias->data);
            for (int64_t t = 0; t < T; ++t)
                for (int64_t r = r0; r < r1; ++r) yd[t * y_stride + r] += b[r];
        }
    });
}

}  // namespace ikllm::cpu
