// Attention of a prompt batch in bf16 (kernels/attn_amx.h): on the AMX tile unit, or on AVX512-BF16
// vector products where the CPU has no tile unit. Taken by op_attention
// for batches of kAmxMinTokens tokens or more of one sequence, outside batch-invariant sessions,
// when the head sizes fit the tiles (multiples of 32) and the packed keys/values of one KV head
// stay within the op's scratch bound. Per KV head: the sequence's visible cells (by position) are
// decoded and packed once, in parallel; then tasks of up to 32 query rows (tokens x the query heads
// of that KV head) attend to them, each to the prefix of cells at or before its position.
#include <algorithm>
#include <utility>
#include <vector>

#include "cpu_ops.h"
#include "kernels/attn_amx.h"
#include "kernels/attn_kernels.h"

namespace ikllm::cpu {

namespace {
constexpr double kMaxKvPackedBytes = 256.0 * 1048576.0;  // per KV head, without an explicit bound

}  // namespace

bool op_attention_amx(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& q = *op.src[0];   // [d_k, n_head, T]
    const Tensor& kc = *op.src[1];  // [d_k, n_head_kv, cells]
    const Tensor& vc = *op.src[2];  // [d_v, n_head_kv, cells]
    const Tensor& out = *op.dst;    // [d_v * n_head, T]
    const int64_t d_k = q.ne[0], n_head = q.ne[1], T = q.ne[2];
    const int64_t d_v = vc.ne[0], n_head_kv = kc.ne[1];
    if (T < kAmxMinTokens || op.batch_invariant || best_isa() != Isa::avx512 || d_k % 32 || d_v % 32) return false;
    const AmxAttention* A = amx_attention();
    if (!A) A = avx512_bf16_attention();
    if (!A) return false;
    const int32_t seq = op.seq_ids[0];
    int32_t max_pos = op.i32[0];
    for (int64_t t = 0; t < T; ++t) {
        if (op.seq_ids[t] != seq) return false;  // several sequences: the per-block kernels
        max_pos = std::max(max_pos, op.i32[t]);
    }
    const KvView& kv = op.kv;
    std::vector<std::pair<int32_t, int32_t>> by_pos;  // (position, cell) visible to the batch
    for (int64_t c = 0; c < kv.n_cells; ++c)
        if (kv_cell_in_seq(kv, c, seq) && kv.cell_pos[c] <= max_pos) by_pos.emplace_back(kv.cell_pos[c], (int32_t)c);
    if (by_pos.empty()) return false;
    if (!std::is_sorted(by_pos.begin(), by_pos.end())) std::sort(by_pos.begin(), by_pos.end());
    const int64_t n = (int64_t)by_pos.size(), n_pad = (n + kAmxKeyGroup - 1) / kAmxKeyGroup * kAmxKeyGroup;
    const size_t k_elems = A->key_elems(n_pad, d_k), v_elems = A->value_elems(n_pad, d_v);
    const double bytes = (double)(k_elems + v_elems) * 2.0 + 64.0;
    const double limit = op.f[1] > 0 ? (double)op.f[1] * 1048576.0 : kMaxKvPackedBytes;
    if (bytes > limit) return false;

    // Keys visible to each token: the cells at or before its position (a prefix of by_pos).
    std::vector<int64_t> n_vis((size_t)T);
    for (int64_t t = 0; t < T; ++t)
        n_vis[t] = std::upper_bound(by_pos.begin(), by_pos.end(), std::make_pair(op.i32[t], INT32_MAX)) - by_pos.begin();

    if (scratch.act.size() < (size_t)bytes) scratch.act.resize((size_t)bytes);
    uint16_t* keys = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(scratch.act.data()) + 63) & ~(uintptr_t)63);
    uint16_t* values = keys + k_elems;
    const AttnKernels& K = attn_kernels(best_isa());
    const int64_t group = n_head / n_head_kv;
    const int64_t hs = std::min<int64_t>(group, kAmxAttnRows);  // query heads per task
    const int64_t n_sub = (group + hs - 1) / hs;
    const int64_t tb = kAmxAttnRows / hs;                       // tokens per task
    const int64_t n_tb = (T + tb - 1) / tb;
    const int64_t n_groups = n_pad / kAmxKeyGroup;
    const float scale = op.f[0];
    const int64_t d_max = std::max(d_k, d_v);
    for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, (size_t)(kAmxKeyGroup * d_max));

    for (int64_t g = 0; g < n_head_kv; ++g) {
        // Pack: tasks [0, n_groups) keys, [n_groups, 2 n_groups) values, 32 cells each.
        pool.parallel_for(2 * n_groups, [&](int64_t task, int thread) {
            const bool is_v = task >= n_groups;
            const int64_t grp = is_v ? task - n_groups : task;
            const Tensor& src = is_v ? vc : kc;
            const int64_t d = is_v ? d_v : d_k;
            float* rows = scratch.per_thread[thread].data();
            const int nr = (int)std::min<int64_t>(kAmxKeyGroup, n - grp * kAmxKeyGroup);
            for (int j = 0; j < nr; ++j) {
                const int64_t c = by_pos[grp * kAmxKeyGroup + j].second;
                K.load_row(src.type, static_cast<const uint8_t*>(src.data) + g * src.nb[1] + c * src.nb[2], rows + j * d, d);
            }
            if (is_v) A->pack_values(rows, nr, d_v, values + grp * A->value_elems(kAmxKeyGroup, d_v));
            else A->pack_keys(rows, nr, d_k, keys + grp * A->key_elems(kAmxKeyGroup, d_k));
        });
        // Attend: later tokens see more cells and are handed out first (tasks go from the top).
        pool.parallel_for(n_tb * n_sub, [&](int64_t task, int) {
            const int64_t sub = task % n_sub, blk = task / n_sub;
            const int64_t t0 = blk * tb, t1 = std::min(T, t0 + tb);
            const int64_t h0 = g * group + sub * hs, h1 = std::min(g * group + group, h0 + hs);
            const float* qr[kAmxAttnRows];
            float* orow[kAmxAttnRows];
            int64_t nv[kAmxAttnRows];
            int nr = 0;
            for (int64_t t = t0; t < t1; ++t)
                for (int64_t h = h0; h < h1; ++h, ++nr) {
                    qr[nr] = q.row<float>(h, t);
                    orow[nr] = out.row<float>(t) + h * d_v;
                    nv[nr] = n_vis[t];
                }
            A->attend(qr, nv, nr, scale, keys, values, d_k, d_v, orow);
        });
    }
    return true;
}

}  // namespace ikllm::cpu
