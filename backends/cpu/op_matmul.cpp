// Matrix product driver: encode the activations once (in parallel over tokens), then split
// the weight rows over threads; each thread runs the type's kernel on its row range.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu_ops.h"
#include "matmul_rows.h"
#include "kernels/prefetch.h"
#include "kernels/matmul.h"
#include "kernels/vec_kernels.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

namespace {
// Token blocks of about 64: each block keeps its activations cached while a chunk of weight rows
// is reused. Blocks are balanced so that a batch of >= 32 tokens never leaves a small block:
// some kernels (like the reference) switch numerics at 32 tokens per call.
struct TokenBlocks {
    int64_t size;
    explicit TokenBlocks(int64_t T) {
        const int64_t n = std::max<int64_t>(1, (T + 63) / 64);
        size = (T + n - 1) / n;
    }
};
}

const MatmulKernel& kernel_for(const Tensor& w) {
    const MatmulKernel* k = find_matmul(w.type, best_isa());
    if (!k) fail(Status::unsupported, std::string("no CPU matmul kernel for the type of ") + w.name);
    return *k;
}

const MatmulKernel& kernel_for(const Tensor& w, const Op& op, int64_t nt) {
    // Batch-invariant ops keep the kernels whose per-token numerics do not depend on the batch.
    const MatmulKernel* k = op.batch_invariant ? find_matmul(w.type, best_isa()) : find_batch_matmul(w.type, best_isa(), nt);
    if (!k) fail(Status::unsupported, std::string("no CPU matmul kernel for the type of ") + w.name);
    return *k;
}

void run_rows(const MatmulKernel& k, const uint8_t* w, size_t row_bytes, int64_t ne0, int64_t r0, int64_t r1,
              const uint8_t* act, size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride, int64_t max_tokens) {
    const int64_t tb = balanced_block(nt, max_tokens);
    if (nt <= RowChunks::kGuidedMaxTokens) prefetch_stream_start(w + (size_t)r0 * row_bytes, (size_t)(r1 - r0) * row_bytes);
    for (int64_t t0 = 0; t0 < nt; t0 += tb)
        k.run(w + (size_t)r0 * row_bytes, row_bytes, ne0, 0, r1 - r0, act + act_row_bytes * (size_t)t0, act_row_bytes,
              std::min(tb, nt - t0), y + t0 * y_stride, y_stride);
}

namespace {
// Token block of one kernel call: the whole batch for kernels that want it, else cache-sized
// blocks; batch-invariant ops stay at or below kInvariantTokens.
int64_t call_tokens(const Op& op, bool whole_batch, int64_t T) {
    if (op.batch_invariant) return balanced_block(T, kInvariantTokens);
    return whole_batch ? T : TokenBlocks(T).size;
}
}  // namespace

int64_t row_unit(const MatmulKernel& k, const quant::TypeTraits& tt) {
    return k.whole_batch ? 16 : std::max<int64_t>(1, tt.interleave);
}

int64_t chunks_per_thread(const MatmulKernel& k) {
    // The AMX kernels repack the whole batch's activations in every call: fewer, larger calls.
    return &k == find_amx_matmul(k.weight_type) ? 1 : 4;
}

int64_t chunk_rows(int64_t rows, int64_t unit, int n_threads, int64_t per_thread) {
    const int64_t target = std::max<int64_t>(1, (int64_t)n_threads * per_thread);
    int64_t c = (rows + target - 1) / target;
    c = (c + unit - 1) / unit * unit;
    return std::max(c, unit);
}

RowChunks::RowChunks(int64_t rows, int64_t unit, int n_threads, int64_t per_thread, int64_t tokens, size_t row_bytes) {
    const int64_t units = (rows + unit - 1) / unit;
    const int64_t p = std::max(1, n_threads);
    if (tokens > kGuidedMaxTokens || p == 1) {
        const int64_t per = (chunk_rows(rows, unit, n_threads, per_thread) + unit - 1) / unit;
        int64_t uniform_n = (units + per - 1) / per;
        const int64_t step = uniform_n > kMax ? (units + kMax - 1) / kMax : per;
        for (int64_t u = 0; u < units && n_ < kMax; u += step, ++n_) {
            start_[n_] = u * unit;
            size_[n_] = std::min(rows, (u + step) * unit) - u * unit;
        }
    } else {
        // Guided sizes in hand-out order; chunk n-1 (handed out first) holds the first rows.
        const int64_t min_units = std::max<int64_t>(1, (kGuidedMinBytes / (int64_t)std::max<size_t>(1, row_bytes) + unit - 1) / unit);
        int64_t sizes[kMax], k = 0, left = units;
        while (left > 0) {
            int64_t s = k == kMax - 1 ? left : std::max(min_units, (left + 2 * p - 1) / (2 * p));
            s = std::min(s, left);
            sizes[k++] = s;
            left -= s;
        }
        n_ = k;
        int64_t u = 0;
        for (int64_t i = 0; i < k; ++i) {
            const int64_t c = k - 1 - i;
            start_[c] = u * unit;
            size_[c] = std::min(rows, (u + sizes[i]) * unit) - u * unit;
            u += sizes[i];
        }
    }
    for (int64_t c = 0; c < n_; ++c) max_ = std::max(max_, size_[c]);
}

void round_to_f16(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = f16_to_f32(f32_to_f16(x[i]));
}

void op_mul_mat_swiglu(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& wg = *op.src[0];  // [K, N]
    const Tensor& x = *op.src[1];   // [K, T] f32
    const Tensor& wu = *op.src[2];  // [K, N]
    const Tensor& y = *op.dst;      // [N, T]
    const int64_t K = wg.ne[0], N = wg.ne[1], T = x.ne[1];
    const MatmulKernel& kg = kernel_for(wg, op, T);
    const MatmulKernel& ku = kernel_for(wu, op, T);
    const bool same_act = kg.act->id == ku.act->id;
    const size_t arg = kg.act->row_bytes(K), aru = ku.act->row_bytes(K);
    const size_t need = arg * T + (same_act ? 0 : aru * T);
    if (scratch.act.size() < need) scratch.act.resize(need);
    uint8_t* act_g = scratch.act.data();
    uint8_t* act_u = same_act ? act_g : act_g + arg * T;
    pool.parallel_for(T, [&](int64_t t, int) {
        kg.act->encode_row(x.row<float>(t), act_g + arg * t, K);
        if (!same_act) ku.act->encode_row(x.row<float>(t), act_u + aru * t, K);
    });
    const quant::TypeTraits* tg = quant::find_type(wg.type);
    const quant::TypeTraits* tu = quant::find_type(wu.type);
    const int64_t unit = std::max(row_unit(kg, *tg), row_unit(ku, *tu));
    const RowChunks chunks(N, unit, pool.n_threads(), std::min(chunks_per_thread(kg), chunks_per_thread(ku)), T,
                           wg.nb[1] + wu.nb[1]);
    for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, (size_t)(2 * chunks.max_rows() * T));
    const int64_t y_stride = (int64_t)(y.nb[1] / sizeof(float));
    float* yd = static_cast<float*>(y.data);
    pool.parallel_for(chunks.count(), [&](int64_t c, int thread) {
        const int64_t r0 = chunks.r0(c), r1 = chunks.r1(c), n = r1 - r0;
        float* g = scratch.per_thread[thread].data();
        float* u = g + n * T;
        const int64_t tb = call_tokens(op, kg.whole_batch && ku.whole_batch, T);
        for (int64_t t0 = 0; t0 < T; t0 += tb) {
            const int64_t nt = std::min(tb, T - t0);
            run_rows(kg, static_cast<const uint8_t*>(wg.data), wg.nb[1], K, r0, r1, act_g + arg * t0, arg, nt, g + t0 * n, n);
            run_rows(ku, static_cast<const uint8_t*>(wu.data), wu.nb[1], K, r0, r1, act_u + aru * t0, aru, nt, u + t0 * n, n);
        }
        for (int64_t t = 0; t < T; ++t) vec_kernels().silu_mul(g + t * n, u + t * n, yd + t * y_stride + r0, n);
    });
}

void op_mul_mat_heads(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& w = *op.src[0];  // [K, N, H]
    const Tensor& x = *op.src[1];  // [K, H, T] (strided view)
    const Tensor& y = *op.dst;     // [N, H, T] (strided view)
    const int64_t K = w.ne[0], N = w.ne[1], H = w.ne[2], T = x.ne[2];
    const MatmulKernel& k = kernel_for(w, op, T);
    const size_t ar = k.act->row_bytes(K);
    // Encoded activations grouped by head: [H][T] rows, so each head's tokens are contiguous.
    if (scratch.act.size() < ar * T * H) scratch.act.resize(ar * T * H);
    uint8_t* act = scratch.act.data();
    pool.parallel_for(T * H, [&](int64_t i, int) {
        const int64_t h = i % H, t = i / H;
        k.act->encode_row(x.row<float>(h, t), act + ar * (h * T + t), K);
    });
    const int64_t unit = row_unit(k, *quant::find_type(w.type));
    // Decode steps with enough heads to share out: whole heads per task (task overhead is a
    // sizeable part of the small per-head products, deepseek2: 512 x 128 Q8_0 per head).
    const int64_t chunk = T <= 8 && H >= 4 * (int64_t)pool.n_threads() ? N
                          : chunk_rows(N, unit, std::max(1, pool.n_threads() / (int)std::max<int64_t>(1, H)));
    const int64_t per_head = (N + chunk - 1) / chunk;
    // Straight into the strided view (a head's tokens are y.nb[2] apart): the output of these
    // products is large (deepseek2: 16 MiB per layer for 512 tokens), one pass over it is enough.
    const int64_t ys = (int64_t)(y.nb[2] / sizeof(float));
    pool.parallel_for(H * per_head, [&](int64_t task, int) {
        const int64_t h = task / per_head, c = task % per_head;
        const int64_t r0 = c * chunk, r1 = std::min(N, r0 + chunk);
        run_rows(k, static_cast<const uint8_t*>(w.data) + h * w.nb[2], w.nb[1], K, r0, r1, act + ar * h * T, ar, T,
                 y.row<float>(h, 0) + r0, ys, max_call_tokens(op));
    });
}

namespace {
// One mul_mat's kernel and row chunks (enough to balance the threads, each a whole number of
// the kernel's row groups).
struct MatmulPlan {
    const Op* op;
    const MatmulKernel* k;
    size_t act_row, w_row;
    const uint8_t* act;  // its encoded activations
    RowChunks chunks;
};

MatmulPlan plan_mul_mat(const Op& op, int n_threads) {
    const Tensor& w = *op.src[0];
    const int64_t K = w.ne[0], N = w.ne[1], T = op.src[1]->ne[1];
    const quant::TypeTraits* tt = quant::find_type(w.type);
    if (!tt) fail(Status::unsupported, std::string("no CPU matmul kernel for the type of ") + w.name);
    const MatmulKernel& k = kernel_for(w, op, T);
    const size_t w_row = quant::row_bytes(*tt, K);
    return MatmulPlan{&op, &k, k.act->row_bytes(K), w_row, nullptr,
                      RowChunks(N, row_unit(k, *tt), n_threads, chunks_per_thread(k), T, w_row)};
}

void run_mul_mat_chunk(const MatmulPlan& p, int64_t c) {
    const Op& op = *p.op;
    const Tensor& w = *op.src[0];
    const Tensor* bias = op.src[2];
    const Tensor& y = *op.dst;
    const int64_t K = w.ne[0], T = op.src[1]->ne[1];
    const int64_t r0 = p.chunks.r0(c), r1 = p.chunks.r1(c);
    const int64_t y_stride = (int64_t)(y.nb[1] / sizeof(float));
    float* yd = static_cast<float*>(y.data);
    // Token blocks keep the activations being reused within the cache while the chunk's
    // weight rows stay resident (a 512-token prompt's activations do not fit in L2).
    const int64_t tb = call_tokens(op, p.k->whole_batch, T);
    if (T <= RowChunks::kGuidedMaxTokens)
        prefetch_stream_start(static_cast<const uint8_t*>(w.data) + (size_t)r0 * p.w_row, (size_t)(r1 - r0) * p.w_row);
    for (int64_t t0 = 0; t0 < T; t0 += tb)
        p.k->run(static_cast<const uint8_t*>(w.data), p.w_row, K, r0, r1, p.act + p.act_row * t0, p.act_row,
                 std::min(tb, T - t0), yd + t0 * y_stride, y_stride);
    if (bias) {
        const float* b = static_cast<const float*>(bias->data);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t r = r0; r < r1; ++r) yd[t * y_stride + r] += b[r];
    }
}
}  // namespace

void op_mul_mat(const Op& op, ThreadPool& pool, Scratch& scratch) { op_mul_mat_group(&op, 1, pool, scratch); }

void op_mul_mat_group(const Op* ops, size_t n, ThreadPool& pool, Scratch& scratch) {
    const Tensor& x = *ops[0].src[1];  // [K, T] f32, the input of every product
    const int64_t K = x.ne[0], T = x.ne[1];
    MatmulPlan plans[kMaxMatmulGroup];
    if (n < 1 || n > kMaxMatmulGroup) fail(Status::internal, "mul_mat group size");
    // The input encoded once per activation format the group's kernels want.
    const ActFormat* formats[kMaxMatmulGroup];
    size_t n_formats = 0, bytes = 0;
    size_t offset[kMaxMatmulGroup];
    for (size_t i = 0; i < n; ++i) {
        if (ops[i].src[1] != &x && (ops[i].src[1]->data != x.data || ops[i].src[1]->ne[0] != K || ops[i].src[1]->ne[1] != T))
            fail(Status::internal, "mul_mat group: the products do not share their input");
        plans[i] = plan_mul_mat(ops[i], pool.n_threads());
        size_t f = 0;
        while (f < n_formats && formats[f]->id != plans[i].k->act->id) ++f;
        if (f == n_formats) {
            formats[n_formats] = plans[i].k->act;
            offset[n_formats++] = bytes;
            bytes += plans[i].act_row * (size_t)T;
        }
    }
    if (scratch.act.size() < bytes) scratch.act.resize(bytes);
    uint8_t* act = scratch.act.data();
    pool.parallel_for(T * (int64_t)n_formats, [&](int64_t i, int) {
        const ActFormat& f = *formats[i % (int64_t)n_formats];
        const int64_t t = i / (int64_t)n_formats;
        const size_t row = f.row_bytes(K);
        f.encode_row(x.row<float>(t), act + offset[i % (int64_t)n_formats] + row * t, K);
    });
    int64_t total = 0;
    int64_t first[kMaxMatmulGroup + 1];
    for (size_t i = 0; i < n; ++i) {
        size_t f = 0;
        while (formats[f]->id != plans[i].k->act->id) ++f;
        plans[i].act = act + offset[f];
        first[i] = total;
        total += plans[i].chunks.count();
    }
    first[n] = total;
    // One pass over every product's chunks: a single pool barrier for the group.
    pool.parallel_for(total, [&](int64_t c, int) {
        size_t i = 0;
        while (c >= first[i + 1]) ++i;
        run_mul_mat_chunk(plans[i], c - first[i]);
    });
}

}  // namespace ikllm::cpu
