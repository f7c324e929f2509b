// Flash-style attention on CPU: for each (token, KV head) the query heads sharing that KV head
// walk the visible cache cells once with an online softmax, so K/V rows are read once per KV
// head and no n_q x n_kv score matrix is ever stored.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu_ops.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

namespace {
inline void load_row(const Tensor& cache, int64_t head, int64_t cell, int64_t n, float* out) {
    const uint8_t* p = static_cast<const uint8_t*>(cache.data) + head * cache.nb[1] + cell * cache.nb[2];
    if (cache.type == quant::T_F16) {
        const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
        for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(h[i]);
    } else {
        quant::kv_decode_row(cache.type, p, out, n);
    }
}

inline bool cell_visible(const KvView& kv, int64_t c, int32_t seq, int32_t pos) {
    if (kv.cell_pos[c] < 0 || kv.cell_pos[c] > pos) return false;
    return (kv.cell_seqs[c * kv.seq_words + seq / 64] >> (seq % 64)) & 1u;
}
}  // namespace

void op_attention(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& q = *op.src[0];   // [d_k, n_head, T]
    const Tensor& kc = *op.src[1];  // [d_k, n_head_kv, cells]
    const Tensor& vc = *op.src[2];  // [d_v, n_head_kv, cells]
    const Tensor& out = *op.dst;    // [d_v * n_head, T]
    const int64_t d_k = q.ne[0], n_head = q.ne[1], T = q.ne[2];
    const int64_t d_v = vc.ne[0], n_head_kv = kc.ne[1];
    const int64_t group = n_head / n_head_kv;
    const float scale = op.f[0];
    const KvView& kv = op.kv;

    const size_t per_thread = (size_t)(d_k + d_v + group * (d_v + 3));
    for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, per_thread);

    pool.parallel_for(T * n_head_kv, [&](int64_t task, int thread) {
        const int64_t t = task / n_head_kv, g = task % n_head_kv;
        const int32_t pos = op.i32[t];
        const int32_t seq = op.seq_ids[t];
        float* ws = scratch.per_thread[thread].data();
        float* krow = ws;
        float* vrow = krow + d_k;
        float* acc = vrow + d_v;          // [group][d_v]
        float* mx = acc + group * d_v;    // running max per head
        float* sum = mx + group;          // running denominator per head
        float* sc = sum + group;          // scores of this cell per head
        for (int64_t h = 0; h < group; ++h) {
            mx[h] = -std::numeric_limits<float>::infinity();
            sum[h] = 0;
        }
        std::memset(acc, 0, sizeof(float) * group * d_v);
        for (int64_t c = 0; c < kv.n_cells; ++c) {
            if (!cell_visible(kv, c, seq, pos)) continue;
            load_row(kc, g, c, d_k, krow);
            load_row(vc, g, c, d_v, vrow);
            for (int64_t hh = 0; hh < group; ++hh) {
                const float* qh = q.row<float>(g * group + hh, t);
                float s = 0;
                for (int64_t i = 0; i < d_k; ++i) s += qh[i] * krow[i];
                s *= scale;
                sc[0] = s;
                float* a = acc + hh * d_v;
                if (s > mx[hh]) {
                    const float r = std::exp(mx[hh] - s);  // rescale the old accumulator
                    for (int64_t i = 0; i < d_v; ++i) a[i] = a[i] * r + vrow[i];
                    sum[hh] = sum[hh] * r + 1.0f;
                    mx[hh] = s;
                } else {
                    const float w = std::exp(s - mx[hh]);
                    for (int64_t i = 0; i < d_v; ++i) a[i] += w * vrow[i];
                    sum[hh] += w;
                }
            }
        }
        for (int64_t hh = 0; hh < group; ++hh) {
            float* o = out.row<float>(t) + (g * group + hh) * d_v;
            const float inv = sum[hh] > 0 ? 1.0f / sum[hh] : 0.0f;
            for (int64_t i = 0; i < d_v; ++i) o[i] = acc[hh * d_v + i] * inv;
        }
    });
}

}  // namespace ikllm::cpu
