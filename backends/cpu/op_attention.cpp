// Flash-style attention on CPU. A task is (a block of query tokens of one sequence, a chunk of
// its cache cells, a run of KV heads, a subgroup of the query heads sharing them): the chunk's
// cells are walked in tiles; each K/V row of a tile is decoded once per task and used by every
// query of the task (GQA: once per KV head, not per query head; MLA: the one latent row serves
// all heads, as keys and as values). Scores exist only for one tile, softmax is online (running
// max and sum per query, rescaled once per tile), so no n_q x n_kv matrix is ever stored. Long
// lists of cells are cut into chunks of kChunk cells whose softmax states are merged in order
// afterwards (split-K, "flash decoding"): a token step then spreads over the threads with every
// task reading each cell's rows once, however few KV heads the model has.
//
// Batch invariance: a query's result depends only on its own sequence's cached (position, K, V)
// rows, not on what else is in the batch or the cache, nor on the thread count. The cells of a
// block's sequence are listed in position order, chunked and tiled from the start of that list,
// so every query sees the same tiles and chunks (a prefix of the list, by causality; chunks it
// sees nothing of are skipped) in the same order whether it is decoded alone, in a prompt batch,
// or beside other sequences, in whatever physical cells they landed.
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
constexpr int64_t kTile = 32;                      // cache cells per tile
constexpr int64_t kChunk = 16 * kTile;             // cells per softmax chunk
constexpr int64_t kTokBlock = 4;                   // query tokens per task (fewer under a scratch bound)
constexpr double kPartialBudget = 64.0 * 1048576;  // bytes of chunk states per wave of blocks
constexpr int64_t kAccFloats = 1 << 16;            // a task's accumulators (L2): more heads split

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
    // MLA: the values are the first d_v elements of the key rows (decoded once, used twice).
    const bool latent = vc.data == kc.data && vc.type == kc.type && vc.nb[1] == kc.nb[1] && vc.nb[2] == kc.nb[2] && d_v <= d_k;

    // Work split: token blocks x chunks x runs of KV heads x query-head subgroups, enough tasks
    // for every thread, as few re-reads of a cell as that allows: first all KV heads in one
    // task (the heads of a cell are adjacent: one contiguous run per cell), then fewer, then
    // query-head subgroups. A scratch bound (op.f[1] MiB for all threads) shrinks the queries
    // per task: first the head subgroups, then the token blocks, down to one query (a K/V tile
    // pair is the floor). Results do not depend on the split.
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
    std::vector<int64_t> n_chunks((size_t)n_tb);
    int64_t total_chunks = 0;
    for (int64_t b = 0; b < n_tb; ++b) {
        const int64_t n = blocks.cells_begin[b + 1] - blocks.cells_begin[b];
        total_chunks += n_chunks[b] = std::max<int64_t>(1, (n + kChunk - 1) / kChunk);
    }
    int64_t kvh = n_head_kv, n_sub = sub_floor;
    const auto queries = [&] { return tb * ((group + n_sub - 1) / n_sub); };
    const auto tasks = [&] { return total_chunks * ((n_head_kv + kvh - 1) / kvh) * n_sub; };
    for (;;) {
        const bool too_big = !fits(kvh, queries()) || kvh * queries() * d_v > kAccFloats;
        if (!too_big && tasks() >= 2 * pool.n_threads()) break;
        if (kvh > 1) kvh = (kvh + 1) / 2;
        else if (n_sub < group) n_sub *= 2;
        else break;
    }
    n_sub = std::min(n_sub, group);
    const int64_t n_kvg = (n_head_kv + kvh - 1) / kvh;
    const int64_t hs = (group + n_sub - 1) / n_sub;  // query heads per task and KV head
    const int64_t nq = tb * hs;                      // queries per task and KV head
    const size_t per_thread = std::max(scratch_floats(d_k, d_v, kvh, nq), (size_t)d_v);
    for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, per_thread);

    // Chunk states of blocks with several chunks, per (chunk, token, head): max, sum and the
    // unnormalized output row. Blocks go in waves whose states fit kPartialBudget (or the
    // scratch bound).
    const size_t state = (size_t)d_v + 2;
    const double part_budget = limit > 0 ? std::min(kPartialBudget, limit) : kPartialBudget;
    std::vector<size_t> part_at((size_t)n_tb, 0);
    struct Task { int64_t block, chunk; };
    std::vector<Task> wave;
    int64_t b_next = 0;
    while (b_next < n_tb) {
        const int64_t wave_begin = b_next;
        size_t floats = 0;
        wave.clear();
        for (; b_next < n_tb; ++b_next) {
            const size_t need = n_chunks[b_next] > 1
                                    ? (size_t)n_chunks[b_next] * (size_t)(blocks.t1[b_next] - blocks.t0[b_next]) * n_head * state
                                    : 0;
            if (b_next > wave_begin && (double)(floats + need) * sizeof(float) > part_budget) break;
            part_at[b_next] = floats;
            floats += need;
            for (int64_t ch = 0; ch < n_chunks[b_next]; ++ch) wave.push_back({b_next, ch});
        }
        if (scratch.floats.size() < floats) scratch.floats.resize(floats);
        float* parts = scratch.floats.data();

        pool.parallel_for((int64_t)wave.size() * n_kvg * n_sub, [&](int64_t task, int thread) {
            const int64_t sub = task % n_sub, gg = (task / n_sub) % n_kvg;
            const Task& tk = wave[(size_t)(task / (n_sub * n_kvg))];
            const int64_t blk = tk.block;
            const int64_t g0 = gg * kvh, ng = std::min(n_head_kv, g0 + kvh) - g0;
            const int64_t t0 = blocks.t0[blk], t1 = blocks.t1[blk];
            const int32_t* cells = blocks.cells.data() + blocks.cells_begin[blk] + tk.chunk * kChunk;
            const int64_t n_cells = std::min(kChunk, blocks.cells_begin[blk + 1] - blocks.cells_begin[blk] - tk.chunk * kChunk);
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
                    if (!latent) prefetch_lines(v_row(g0, cells[j]), (size_t)vc.nb[1] * (size_t)ng);
                }
                // The cells are in position order: a tile whose last cell no query of the block
                // precedes needs no mask (every tile of a token step).
                const bool tile_visible = kv.cell_pos[cells[c0 + nc - 1]] <= min_pos;
                for (int64_t g = g0; g < g0 + ng; ++g) {
                    float* acc = acc0 + (g - g0) * nq * d_v;
                    float* mx = mx0 + (g - g0) * nq;
                    float* sum = sum0 + (g - g0) * nq;
                    const uint8_t* rows[kTile];
                    for (int64_t j = 0; j < nc; ++j) rows[j] = k_row(g, cells[c0 + j]);
                    K.load_rows(kc.type, rows, nc, kb, d_k);
                    if (!latent) {
                        for (int64_t j = 0; j < nc; ++j) rows[j] = v_row(g, cells[c0 + j]);
                        K.load_rows(vc.type, rows, nc, vb, d_v);
                    }
                    // Scores of the queries of this KV head against the tile (its K rows stay
                    // in L1), up to 16 query rows per call.
                    for (int64_t qi0 = 0; qi0 < nqt; qi0 += 16) {
                        const float* qa[16];
                        const int nqc = (int)std::min<int64_t>(16, nqt - qi0);
                        for (int i = 0; i < nqc; ++i) {
                            const int64_t qi = qi0 + i;
                            qa[i] = q.row<float>(g * group + h0 + qi % nh, t0 + qi / nh);
                        }
                        K.scores(qa, nqc, kb, nc, d_k, scale, sc + qi0 * kTile, kTile);
                    }
                    // Causal mask and online-softmax bookkeeping per query; s[] becomes the
                    // tile's weights p (0 for masked cells), then one blocked P x V pass.
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
                    if (latent) K.pv_tile(acc, d_v, rescale, sc, kTile, (int)nqt, kb, d_k, nc, d_v);
                    else K.pv_tile(acc, d_v, rescale, sc, kTile, (int)nqt, vb, d_v, nc, d_v);
                }
            }
            // One chunk: the output; several: this chunk's state, merged below.
            const int64_t tn = t1 - t0;
            for (int64_t g = g0; g < g0 + ng; ++g)
                for (int64_t t = t0; t < t1; ++t)
                    for (int64_t hh = h0; hh < h1; ++hh) {
                        const int64_t qi = (t - t0) * nh + (hh - h0), head = g * group + hh;
                        const float* a = acc0 + ((g - g0) * nq + qi) * d_v;
                        const float sm = sum0[(g - g0) * nq + qi];
                        if (n_chunks[blk] == 1) {
                            float* o = out.row<float>(t) + head * d_v;
                            const float inv = sm > 0 ? 1.0f / sm : 0.0f;
                            for (int64_t i = 0; i < d_v; ++i) o[i] = a[i] * inv;
                        } else {
                            float* st = parts + part_at[blk] + ((size_t)(tk.chunk * tn + (t - t0)) * n_head + head) * state;
                            st[0] = mx0[(g - g0) * nq + qi];
                            st[1] = sm;
                            std::memcpy(st + 2, a, sizeof(float) * d_v);
                        }
                    }
        });

        // Merge the chunk states of each (token, head) in chunk order; chunks it saw nothing
        // of (sum 0) are skipped, so a query whose cells fit one chunk gets that chunk's
        // output exactly.
        std::vector<int64_t> multi;
        for (int64_t b = wave_begin; b < b_next; ++b)
            if (n_chunks[b] > 1) multi.push_back(b);
        if (multi.empty()) continue;
        pool.parallel_for((int64_t)multi.size() * kTokBlock * n_head, [&](int64_t item, int thread) {
            const int64_t blk = multi[(size_t)(item / (kTokBlock * n_head))];
            const int64_t t = blocks.t0[blk] + item / n_head % kTokBlock, head = item % n_head;
            if (t >= blocks.t1[blk]) return;
            const int64_t tn = blocks.t1[blk] - blocks.t0[blk];
            float* m_acc = scratch.per_thread[thread].data();  // d_v floats
            float M = -std::numeric_limits<float>::infinity(), S = 0;
            for (int64_t ch = 0; ch < n_chunks[blk]; ++ch) {
                const float* st = parts + part_at[blk] + ((size_t)(ch * tn + (t - blocks.t0[blk])) * n_head + head) * state;
                if (!(st[1] > 0)) continue;
                if (S == 0) {
                    M = st[0];
                    S = st[1];
                    std::memcpy(m_acc, st + 2, sizeof(float) * d_v);
                    continue;
                }
                const float m_new = std::max(M, st[0]);
                const float a = std::exp(M - m_new), c = std::exp(st[0] - m_new);
                S = S * a + st[1] * c;
                for (int64_t i = 0; i < d_v; ++i) m_acc[i] = m_acc[i] * a + st[2 + i] * c;
                M = m_new;
            }
            float* o = out.row<float>(t) + head * d_v;
            const float inv = S > 0 ? 1.0f / S : 0.0f;
            for (int64_t i = 0; i < d_v; ++i) o[i] = S > 0 ? m_acc[i] * inv : 0.0f;
        });
    }
}

}  // namespace ikllm::cpu
