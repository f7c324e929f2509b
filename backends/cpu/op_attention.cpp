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

// Floats of one thread's work space: a K and a V tile, the tile's scores and rescale factors,
// and per KV head of the task and query the output accumulator, running max and sum.
size_t scratch_floats(int64_t d_k, int64_t d_v, int64_t heads, int64_t nq) {
    return (size_t)(kTile * (d_k + d_v) + kTile * nq + nq + heads * nq * (d_v + 2));
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

    // Work split: token blocks x runs of KV heads x query-head subgroups, enough tasks for every
    // thread. A task walks its cells once for all its KV heads (the heads of a cell are
    // adjacent: one contiguous run per cell instead of one row per cache cell, which the
    // memory system streams much better). A scratch bound (op.f[1] MiB for all threads) shrinks
    // the queries per task: first the KV heads per task, then the head subgroups, then the
    // token blocks, down to one query (a K/V tile pair is the floor). Results do not depend on
    // the split (every query walks the same tiles in the same order).
    const double limit = (double)op.f[1] * 1048576.0;
    const auto fits = [&](int64_t heads, int64_t queries) {
        return limit <= 0 || (double)scratch_floats(d_k, d_v, heads, queries) * sizeof(float) * pool.n_threads() <= limit;
    };
    int64_t tb = std::min<int64_t>(kTokBlock, T);
    int64_t sub_floor = 1;
    while (sub_floor < group && !fits(1, tb * ((group + sub_floor - 1) / sub_floor))) sub_floor *= 2;
    sub_floor = std::min(sub_floor, group);
    while (tb > 1 && !fits(1, tb * ((group + sub_floor - 1) / sub_floor))) tb = (tb + 1) / 2;
    const QueryBlocks blocks = plan_blocks(op, T, tb);
    const int64_t n_tb = (int64_t)blocks.t0.size();
    // KV heads per task: halved from all of them while there are fewer than 2 tasks per thread.
    int64_t kvh = n_head_kv;
    while (kvh > 1 && (n_tb * ((n_head_kv + kvh - 1) / kvh) < 2 * pool.n_threads() ||
                       !fits(kvh, tb * ((group + sub_floor - 1) / sub_floor))))
        kvh = (kvh + 1) / 2;
    const int64_t n_kvg = (n_head_kv + kvh - 1) / kvh;
    int64_t n_sub = sub_floor;
    while (n_tb * n_kvg * n_sub < 2 * pool.n_threads() && n_sub < group) n_sub *= 2;
    n_sub = std::min(n_sub, group);
    const int64_t hs = (group + n_sub - 1) / n_sub;  // query heads per task and KV head
    const int64_t nq = tb * hs;                      // queries per task and KV head
    const size_t per_thread = scratch_floats(d_k, d_v, kvh, nq);
    for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, per_thread);

    pool.parallel_for(n_tb * n_kvg * n_sub, [&](int64_t task, int thread) {
        const int64_t sub = task % n_sub, gg = (task / n_sub) % n_kvg, blk = task / (n_sub * n_kvg);
        const int64_t g0 = gg * kvh, ng = std::min(n_head_kv, g0 + kvh) - g0;
        const int64_t t0 = blocks.t0[blk], t1 = blocks.t1[blk];
        const int32_t* cells = blocks.cells.data() + blocks.cells_begin[blk];
        const int64_t n_cells = blocks.cells_begin[blk + 1] - blocks.cells_begin[blk];
        const int64_t h0 = sub * hs, h1 = std::min(group, h0 + hs);
        const int64_t nh = h1 - h0;
        float* ws = scratch.per_thread[thread].data();
        float* kb = ws;                        // [kTile][d_k]
        float* vb = kb + kTile * d_k;          // [kTile][d_v]
        float* sc = vb + kTile * d_v;          // [kTile][nq]
        float* rescale = sc + kTile * nq;      // [nq] per tile and KV head
        float* acc0 = rescale + nq;            // per KV head of the task: [nq][d_v]
        float* mx0 = acc0 + ng * nq * d_v;     // per KV head: [nq]
        float* sum0 = mx0 + ng * nq;           // per KV head: [nq]
        for (int64_t i = 0; i < ng * nq; ++i) {
            mx0[i] = -std::numeric_limits<float>::infinity();
            sum0[i] = 0;
        }
        std::memset(acc0, 0, sizeof(float) * ng * nq * d_v);
        int32_t min_pos = op.i32[t0];
        for (int64_t t = t0; t < t1; ++t) min_pos = std::min(min_pos, op.i32[t]);
        const auto k_row = [&](int64_t g, int64_t c) { return static_cast<const uint8_t*>(kc.data) + g * kc.nb[1] + c * kc.nb[2]; };
        const auto v_row = [&](int64_t g, int64_t c) { return static_cast<const uint8_t*>(vc.data) + g * vc.nb[1] + c * vc.nb[2]; };
        const int64_t nqt = (t1 - t0) * nh;
        for (int64_t c0 = 0; c0 < n_cells; c0 += kTile) {
            const int64_t nc = std::min(kTile, n_cells - c0);
            // The next tile's rows of the task's heads, fetched while this one is computed.
            for (int64_t j = c0 + kTile; j < std::min(n_cells, c0 + 2 * kTile); ++j) {
                prefetch_lines(k_row(g0, cells[j]), (size_t)kc.nb[1] * (size_t)ng);
                if (vc.data != kc.data) prefetch_lines(v_row(g0, cells[j]), (size_t)vc.nb[1] * (size_t)ng);
            }
            // The cells are in position order: a tile whose last cell no query of the block
            // precedes needs no mask (every tile of a token step).
            const bool tile_visible = kv.cell_pos[cells[c0 + nc - 1]] <= min_pos;
            for (int64_t g = g0; g < g0 + ng; ++g) {
                float* acc = acc0 + (g - g0) * nq * d_v;
                float* mx = mx0 + (g - g0) * nq;
                float* sum = sum0 + (g - g0) * nq;
                for (int64_t j = 0; j < nc; ++j) {
                    K.load_row(kc.type, k_row(g, cells[c0 + j]), kb + j * d_k, d_k);
                    K.load_row(vc.type, v_row(g, cells[c0 + j]), vb + j * d_v, d_v);
                }
                // Scores of the queries of this KV head against the tile (its K rows stay in
                // L1), up to 16 query rows per call.
                for (int64_t qi0 = 0; qi0 < nqt; qi0 += 16) {
                    const float* qa[16];
                    const int nqc = (int)std::min<int64_t>(16, nqt - qi0);
                    for (int i = 0; i < nqc; ++i) {
                        const int64_t qi = qi0 + i;
                        qa[i] = q.row<float>(g * group + h0 + qi % nh, t0 + qi / nh);
                    }
                    K.scores(qa, nqc, kb, nc, d_k, scale, sc + qi0 * kTile, kTile);
                }
                // Causal mask and online-softmax bookkeeping per query; s[] becomes the tile's
                // weights p (0 for masked cells), then one blocked P x V pass for all queries.
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
                K.pv_tile(acc, d_v, rescale, sc, kTile, (int)nqt, vb, nc, d_v);
            }
        }
        for (int64_t g = g0; g < g0 + ng; ++g)
            for (int64_t t = t0; t < t1; ++t)
                for (int64_t hh = h0; hh < h1; ++hh) {
                    const int64_t qi = (t - t0) * nh + (hh - h0);
                    const float* a = acc0 + ((g - g0) * nq + qi) * d_v;
                    const float sm = sum0[(g - g0) * nq + qi];
                    float* o = out.row<float>(t) + (g * group + hh) * d_v;
                    const float inv = sm > 0 ? 1.0f / sm : 0.0f;
                    for (int64_t i = 0; i < d_v; ++i) o[i] = a[i] * inv;
                }
    });
}

}  // namespace ikllm::cpu
