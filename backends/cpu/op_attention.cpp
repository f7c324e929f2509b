// Flash-style attention on CPU. A task is (a block of query tokens of one sequence, one KV head,
// a subgroup of the query heads sharing it): the sequence's cache cells are walked in tiles; each K/V row of a
// tile is decoded once per task and used by every query of the task (GQA: once per KV head, not
// per query head; MLA: the one latent row serves all heads). Scores exist only for one tile,
// softmax is online (running max and sum per query, rescaled once per tile), so no
// n_q x n_kv matrix is ever stored and scratch memory is independent of the context length.
//
// Batch invariance: a query's result depends only on its own sequence's cached (position, K, V)
// rows, not on what else is in the batch or the cache. The cells of a block's sequence are
// listed in position order and tiled from the start of that list, so every query sees the same
// tiles (a prefix of the list, by causality) in the same order whether it is decoded alone, in
// a prompt batch, or beside other sequences, in whatever physical cells they landed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cpu_ops.h"
#include "kernels/attn_kernels.h"
#include "kernels/vec_kernels.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

namespace {
constexpr int64_t kTile = 32;      // cache cells per tile
constexpr int64_t kTokBlock = 4;   // query tokens per task (fewer under a scratch bound)

// Query blocks: runs of up to kTokBlock consecutive tokens of one sequence, each with the cells
// its queries may see (its sequence's cells up to the block's largest position), by position.
struct QueryBlocks {
    std::vector<int64_t> t0, t1, cells_begin;  // per block; cells_begin has one extra entry
    std::vector<int32_t> cells;
};
QueryBlocks plan_blocks(const Op& op, int64_t T, int64_t tok_block) {
    const KvView& kv = op.kv;
    QueryBlocks b;
    std::vector<std::pair<int32_t, int32_t>> by_pos;
    for (int64_t t = 0; t < T;) {
        const int32_t seq = op.seq_ids[t];
        int64_t e = t + 1;
        while (e < T && e - t < tok_block && op.seq_ids[e] == seq) ++e;
        int32_t max_pos = 0;
        for (int64_t i = t; i < e; ++i) max_pos = std::max(max_pos, op.i32[i]);
        by_pos.clear();
        for (int64_t c = 0; c < kv.n_cells; ++c)
            if (kv_cell_in_seq(kv, c, seq) && kv.cell_pos[c] <= max_pos) by_pos.emplace_back(kv.cell_pos[c], (int32_t)c);
        if (!std::is_sorted(by_pos.begin(), by_pos.end())) std::sort(by_pos.begin(), by_pos.end());  // rare: reused cells
        b.t0.push_back(t);
        b.t1.push_back(e);
        b.cells_begin.push_back((int64_t)b.cells.size());
        for (auto& pc : by_pos) b.cells.push_back(pc.second);
        t = e;
    }
    b.cells_begin.push_back((int64_t)b.cells.size());
    return b;
}

inline void prefetch_lines(const uint8_t* p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
}

// max(s[0..n)) for n >= 1, in four lanes (a chain of n dependent maxima is the slow part).
inline float max_of(const float* s, int64_t n) {
    float m[4] = {s[0], s[0], s[0], s[0]};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (int l = 0; l < 4; ++l) m[l] = std::max(m[l], s[j + l]);
    for (; j < n; ++j) m[0] = std::max(m[0], s[j]);
    return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

// Floats of one thread's work space: a K and a V tile, the tile's scores, and per query the
// output accumulator plus running max and sum.
size_t scratch_floats(int64_t d_k, int64_t d_v, int64_t nq) {
    return (size_t)(kTile * (d_k + d_v) + kTile * nq + nq * (d_v + 3));
}
}  // namespace

void op_attention(const Op& op, ThreadPool& pool, Scratch& scratch) {
    if (op_attention_amx(op, pool, scratch)) return;  // prompt batches on the tile unit
    const Tensor& q = *op.src[0];   // [d_k, n_head, T]
    const Tensor& kc = *op.src[1];  // [d_k, n_head_kv, cells]
    const Tensor& vc = *op.src[2];  // [d_v, n_head_kv, cells]
    const Tensor& out = *op.dst;    // [d_v * n_head, T]
    const int64_t d_k = q.ne[0], n_head = q.ne[1], T = q.ne[2];
    const int64_t d_v = vc.ne[0], n_head_kv = kc.ne[1];
    const int64_t group = n_head / n_head_kv;
    const float scale = op.f[0];
    const KvView& kv = op.kv;
    const AttnKernels& K = attn_kernels(best_isa());
    const VecKernels& VK = vec_kernels();

    // Work split: token blocks x KV heads x head subgroups, enough tasks for every thread. A
    // scratch bound (op.f[1] MiB for all threads) shrinks the queries per task: first the head
    // subgroups, then the token blocks, down to one query (a K/V tile pair is the floor).
    // Results do not depend on the split (every query walks the same tiles in the same order).
    const double limit = (double)op.f[1] * 1048576.0;
    const auto fits = [&](int64_t queries) {
        return limit <= 0 || (double)scratch_floats(d_k, d_v, queries) * sizeof(float) * pool.n_threads() <= limit;
    };
    int64_t tb = std::min<int64_t>(kTokBlock, T);
    int64_t sub_floor = 1;
    while (sub_floor < group && !fits(tb * ((group + sub_floor - 1) / sub_floor))) sub_floor *= 2;
    sub_floor = std::min(sub_floor, group);
    while (tb > 1 && !fits(tb * ((group + sub_floor - 1) / sub_floor))) tb = (tb + 1) / 2;
    const QueryBlocks blocks = plan_blocks(op, T, tb);
    const int64_t n_tb = (int64_t)blocks.t0.size();
    int64_t n_sub = sub_floor;
    while (n_tb * n_head_kv * n_sub < 2 * pool.n_threads() && n_sub < group) n_sub *= 2;
    n_sub = std::min(n_sub, group);
    const int64_t hs = (group + n_sub - 1) / n_sub;  // query heads per task
    const int64_t nq = tb * hs;                      // queries per task
    const size_t per_thread = scratch_floats(d_k, d_v, nq);
    for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, per_thread);

    pool.parallel_for(n_tb * n_head_kv * n_sub, [&](int64_t task, int thread) {
        const int64_t sub = task % n_sub, g = (task / n_sub) % n_head_kv, blk = task / (n_sub * n_head_kv);
        const int64_t t0 = blocks.t0[blk], t1 = blocks.t1[blk];
        const int32_t* cells = blocks.cells.data() + blocks.cells_begin[blk];
        const int64_t n_cells = blocks.cells_begin[blk + 1] - blocks.cells_begin[blk];
        const int64_t h0 = sub * hs, h1 = std::min(group, h0 + hs);
        const int64_t nh = h1 - h0;
        float* ws = scratch.per_thread[thread].data();
        float* kb = ws;                        // [kTile][d_k]
        float* vb = kb + kTile * d_k;          // [kTile][d_v]
        float* sc = vb + kTile * d_v;          // [kTile][nq]
        float* acc = sc + kTile * nq;          // [nq][d_v]
        float* mx = acc + nq * d_v;            // [nq]
        float* sum = mx + nq;                  // [nq]
        float* rescale = sum + nq;             // [nq] per tile
        for (int64_t i = 0; i < nq; ++i) {
            mx[i] = -std::numeric_limits<float>::infinity();
            sum[i] = 0;
        }
        std::memset(acc, 0, sizeof(float) * nq * d_v);
        int32_t min_pos = op.i32[t0];
        for (int64_t t = t0; t < t1; ++t) min_pos = std::min(min_pos, op.i32[t]);
        const size_t k_bytes = (size_t)kc.nb[1], v_bytes = (size_t)vc.nb[1];  // one head's row
        for (int64_t c0 = 0; c0 < n_cells; c0 += kTile) {
            const int64_t nc = std::min(kTile, n_cells - c0);
            // The next tile's rows: a head's rows are one cache cell (all heads) apart, a stride
            // the hardware prefetchers follow poorly, so decoding waited on every row.
            for (int64_t j = c0 + kTile; j < std::min(n_cells, c0 + 2 * kTile); ++j) {
                const int64_t c = cells[j];
                prefetch_lines(static_cast<const uint8_t*>(kc.data) + g * kc.nb[1] + c * kc.nb[2], k_bytes);
                prefetch_lines(static_cast<const uint8_t*>(vc.data) + g * vc.nb[1] + c * vc.nb[2], v_bytes);
            }
            for (int64_t j = 0; j < nc; ++j) {
                const int64_t c = cells[c0 + j];
                const uint8_t* kp = static_cast<const uint8_t*>(kc.data) + g * kc.nb[1] + c * kc.nb[2];
                const uint8_t* vp = static_cast<const uint8_t*>(vc.data) + g * vc.nb[1] + c * vc.nb[2];
                K.load_row(kc.type, kp, kb + j * d_k, d_k);
                K.load_row(vc.type, vp, vb + j * d_v, d_v);
            }
            // Scores of the task's queries against the tile (its K rows stay in L1), up to 16
            // query rows per call.
            const int64_t nqt = (t1 - t0) * nh;
            for (int64_t qi0 = 0; qi0 < nqt; qi0 += 16) {
                const float* qa[16];
                const int nqc = (int)std::min<int64_t>(16, nqt - qi0);
                for (int i = 0; i < nqc; ++i) {
                    const int64_t qi = qi0 + i;
                    qa[i] = q.row<float>(g * group + h0 + qi % nh, t0 + qi / nh);
                }
                K.scores(qa, nqc, kb, nc, d_k, scale, sc + qi0 * kTile, kTile);
            }
            // Causal mask and online-softmax bookkeeping per query; s[] becomes the tile's weights
            // p (0 for masked cells), then one blocked P x V pass for all the task's queries.
            // The cells are in position order: a tile whose last cell no query of the block
            // precedes needs no mask (every tile of a token step).
            const bool tile_visible = kv.cell_pos[cells[c0 + nc - 1]] <= min_pos;
            for (int64_t t = t0; t < t1; ++t) {
                const int32_t pos = op.i32[t];
                for (int64_t hh = h0; hh < h1; ++hh) {
                    const int64_t qi = (t - t0) * nh + (hh - h0);
                    float* s = sc + qi * kTile;
                    float tmax = -std::numeric_limits<float>::infinity();
                    if (tile_visible) {
                        tmax = max_of(s, nc);
                    } else {
                        for (int64_t j = 0; j < nc; ++j) {
                            if (kv.cell_pos[cells[c0 + j]] > pos) {  // causal: later cells of the list
                                s[j] = -std::numeric_limits<float>::infinity();
                                continue;
                            }
                            tmax = std::max(tmax, s[j]);
                        }
                    }
                    if (tmax == -std::numeric_limits<float>::infinity()) {  // nothing visible: unchanged
                        rescale[qi] = 1.0f;
                        for (int64_t j = 0; j < nc; ++j) s[j] = 0.0f;
                        continue;
                    }
                    const float m_new = std::max(mx[qi], tmax);
                    rescale[qi] = std::exp(mx[qi] - m_new);  // 0 on the first visible tile
                    sum[qi] *= rescale[qi];
                    mx[qi] = m_new;
                    sum[qi] += VK.exp_shift_sum(s, nc, m_new);
                }
            }
            K.pv_tile(acc, d_v, rescale, sc, kTile, (int)((t1 - t0) * nh), vb, nc, d_v);
        }
        for (int64_t t = t0; t < t1; ++t)
            for (int64_t hh = h0; hh < h1; ++hh) {
                const int64_t qi = (t - t0) * nh + (hh - h0);
                float* o = out.row<float>(t) + (g * group + hh) * d_v;
                const float inv = sum[qi] > 0 ? 1.0f / sum[qi] : 0.0f;
                for (int64_t i = 0; i < d_v; ++i) o[i] = acc[qi * d_v + i] * inv;
            }
    });
}

}  // namespace ikllm::cpu
