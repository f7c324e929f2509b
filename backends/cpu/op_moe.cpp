// Mixture-of-experts ops on CPU (docs: architectures.md §7).
// moe_route: per token, gating (softmax / sigmoid), top-k selection (optionally on biased
//   scores), weight normalisation and scaling, smart expert reduction.
// moe_ffn: tokens are grouped by expert so each selected expert's weights are streamed once per
//   batch; gate and up run in one pass with the SwiGLU applied per row chunk; the expert outputs
//   are combined with the routing weights in selection order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "cpu_ops.h"
#include "kernels/vec_kernels.h"
#include "matmul_rows.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

void op_moe_route(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& logits = *op.src[0];  // [n_expert, T]
    const Tensor* bias = op.src[1];     // [n_expert] or null: added for selection only
    const Tensor& wout = *op.dst;       // [k, T] f32
    const Tensor& ids = *op.aux;        // [k, T] i32
    const MoeParams& p = op.moe;
    const int64_t n_exp = logits.ne[0], T = logits.ne[1], k = p.n_used;
    // Per-thread work space (probabilities, selection scores, index lists), sized before the pass.
    std::vector<std::vector<int32_t>>& ints = scratch.moe.route_ints;
    if (ints.size() < (size_t)pool.n_threads()) ints.resize((size_t)pool.n_threads());
    for (int th = 0; th < pool.n_threads(); ++th) {
        scratch.thread_floats(th, (size_t)(2 * n_exp));
        if (ints[(size_t)th].size() < (size_t)(n_exp + k)) ints[(size_t)th].resize((size_t)(n_exp + k));
    }
    pool.parallel_for(T, [&](int64_t t, int thread) {
        const float* z = logits.row<float>(t);
        float* prob = scratch.per_thread[(size_t)thread].data();
        float* sel = prob + n_exp;
        int32_t* order = ints[(size_t)thread].data();
        int32_t* by_w = order + n_exp;
        if (p.gating == MoeGating::softmax) {
            float mx = z[0];
            for (int64_t e = 1; e < n_exp; ++e) mx = std::max(mx, z[e]);
            double sum = 0;
            for (int64_t e = 0; e < n_exp; ++e) sum += prob[e] = std::exp(z[e] - mx);
            const float inv = (float)(1.0 / sum);
            for (int64_t e = 0; e < n_exp; ++e) prob[e] *= inv;
        } else {
            for (int64_t e = 0; e < n_exp; ++e) prob[e] = 1.0f / (1.0f + std::exp(-z[e]));
        }
        const float* b = bias ? static_cast<const float*>(bias->data) : nullptr;
        for (int64_t e = 0; e < n_exp; ++e) sel[e] = b ? prob[e] + b[e] : prob[e];
        // top-k by selection score, ties to the lower index (stable)
        std::iota(order, order + n_exp, 0);
        std::partial_sort(order, order + k, order + n_exp, [&](int32_t a, int32_t c) {
            return sel[a] > sel[c] || (sel[a] == sel[c] && a < c);
        });
        float* w = wout.row<float>(t);
        int32_t* id = ids.row<int32_t>(t);
        float total = 0;
        for (int64_t j = 0; j < k; ++j) {
            id[j] = order[j];
            w[j] = prob[order[j]];
            total += w[j];
        }
        if (p.norm)
            for (int64_t j = 0; j < k; ++j) w[j] /= total;
        if (std::fabs(p.scale - 1.0f) > 1e-5f)
            for (int64_t j = 0; j < k; ++j) w[j] *= p.scale;
        if (p.ser_max > 0) {
            // Smart expert reduction: keep the top expert, then at most ser_max in weight order,
            // each only if its weight is at least ser_frac of the top one; the kept weights are
            // rescaled to the sum of all k so the layer's output scale is preserved.
            std::iota(by_w, by_w + k, 0);
            std::stable_sort(by_w, by_w + k, [&](int32_t a, int32_t c) { return w[a] > w[c]; });
            const float top = w[by_w[0]];
            float all = 0, kept = 0;
            for (int64_t j = 0; j < k; ++j) all += w[j];
            for (int64_t r = 0; r < k; ++r) {
                const int64_t j = by_w[r];
                if (r > 0 && (r >= p.ser_max || w[j] < p.ser_frac * top)) id[j] = -1;
                else kept += w[j];
            }
            const float f = kept > 0 ? all / kept : 1.0f;
            for (int64_t j = 0; j < k; ++j) w[j] = id[j] < 0 ? 0.0f : w[j] * f;
        }
    });
}

namespace {
// Token count that selects the prompt-batch kernels (find_batch_matmul) for the experts.
constexpr int64_t kBigBatch = INT64_MAX;
// Largest packed token block of one expert task (beyond it: the encoded path, token blocks).
constexpr size_t kMaxPackedBytes = 8u << 20;
using ExpertWork = MoeScratch::Work;
}  // namespace

void op_moe_ffn(const Op& op, ThreadPool& pool, Scratch& scratch) {
    const Tensor& x = *op.src[0];      // [E, T]
    const Tensor& ids = *op.src[1];    // [k, T] i32
    const Tensor& wts = *op.src[2];    // [k, T] f32
    const Tensor& y = *op.dst;         // [E, T]
    const Tensor& wg = *op.ex[0];      // [E, n_ff, n_expert] or merged [E, 2*n_ff, n_expert]
    const Tensor* wu = op.ex[1];       // [E, n_ff, n_expert] or null when merged
    const Tensor& wd = *op.ex[2];      // [n_ff, E, n_expert]
    const bool merged = wu == nullptr;
    const int64_t E = x.ne[0], T = x.ne[1], k = ids.ne[0];
    const int64_t n_ff = wd.ne[0], n_exp = wd.ne[2];
    const bool round16 = op.moe.round_f16;

    // 1. Group (token, slot) pairs by expert.
    MoeScratch& ms = scratch.moe;
    std::vector<int64_t>& count = ms.count;
    count.assign((size_t)n_exp, 0);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int32_t e = ids.row<int32_t>(t)[j];
            if (e >= n_exp) fail(Status::internal, "moe_ffn: expert id out of range");
            if (e >= 0) ++count[(size_t)e];
        }
    std::vector<ExpertWork>& work = ms.work;
    work.clear();
    std::vector<int64_t>& start = ms.start;
    start.assign((size_t)n_exp, 0);
    int64_t total = 0;
    for (int64_t e = 0; e < n_exp; ++e) {
        start[(size_t)e] = total;
        if (count[(size_t)e]) work.push_back({(int32_t)e, total, count[(size_t)e]});
        total += count[(size_t)e];
    }
    std::vector<int64_t>& tok = ms.tok;
    std::vector<int64_t>& slot_of = ms.slot_of;
    tok.assign((size_t)total, 0);
    slot_of.assign((size_t)(T * k), -1);
    {
        std::vector<int64_t>& fill = ms.fill;
        fill = start;
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < k; ++j) {
                const int32_t e = ids.row<int32_t>(t)[j];
                if (e < 0) continue;
                const int64_t s = fill[(size_t)e]++;
                tok[(size_t)s] = t;
                slot_of[(size_t)(t * k + j)] = s;
            }
    }

    // 2. Kernels: in a prompt batch (kAmxMinTokens tokens or more), experts with at least the
    //    prompt-batch kernel's min_tokens tokens take it (AMX), the others the standard ones; each pair's input row is encoded
    //    for its expert's kernel, grouped by expert.
    const MatmulKernel& kg = kernel_for(wg);
    const MatmulKernel& ku = merged ? kg : kernel_for(*wu);
    const MatmulKernel& kd = kernel_for(wd);
    if (kg.act->id != ku.act->id) fail(Status::unsupported, "moe_ffn: gate and up experts need one activation format");
    // Only prompt batches of kAmxMinTokens or more switch numerics, as for dense products.
    const int64_t batch = T >= kAmxMinTokens ? kBigBatch : T;
    const MatmulKernel& kg_b = kernel_for(wg, op, batch);
    const MatmulKernel& ku_b = merged ? kg_b : kernel_for(*wu, op, batch);
    const MatmulKernel& kd_b = kernel_for(wd, op, batch);
    const bool big_gu = &kg_b != &kg && kg_b.act->id == ku_b.act->id;
    const bool big_d = &kd_b != &kd;
    // per pair: its expert runs the batch kernels for gate/up (bit 0), for down (bit 1)
    std::vector<uint8_t>& big = ms.big;
    big.assign((size_t)total, 0);
    for (const ExpertWork& w : work) {
        const uint8_t f = (uint8_t)((w.n >= std::max(kg_b.min_tokens, ku_b.min_tokens) ? 1 : 0) | (w.n >= kd_b.min_tokens ? 2 : 0));
        std::fill(big.begin() + w.first, big.begin() + w.first + w.n, f);
    }
    // Prompt-batch experts take their float rows packed once per task (amx_pack_rows): gate and
    // up share one packing, and no separately encoded copy of the inputs is written.
    int64_t max_n = 0;
    for (auto& w : work) max_n = std::max(max_n, w.n);
    const bool pk_gu = big_gu && !round16 && kg_b.run_packed && ku_b.run_packed &&
                       amx_packed_bytes(E, max_n) <= kMaxPackedBytes;
    const bool pk_d = big_d && !round16 && kd_b.run_packed && amx_packed_bytes(n_ff, max_n) <= kMaxPackedBytes;
    const size_t ar = kg.act->row_bytes(E), dr = kd.act->row_bytes(n_ff);
    const size_t ar_b = big_gu ? kg_b.act->row_bytes(E) : 0, dr_b = big_d ? kd_b.act->row_bytes(n_ff) : 0;
    if (scratch.act.size() < (ar + ar_b) * (size_t)total) scratch.act.resize((ar + ar_b) * (size_t)total);
    if (scratch.act2.size() < (dr + dr_b) * (size_t)total) scratch.act2.resize((dr + dr_b) * (size_t)total);
    uint8_t* act = scratch.act.data();
    uint8_t* act_b = act + ar * (size_t)total;
    uint8_t* act_d = scratch.act2.data();
    uint8_t* act_db = act_d + dr * (size_t)total;
    // hidden [total][n_ff] then expert outputs [total][E]
    const size_t need = (size_t)total * (size_t)(n_ff + E);
    if (scratch.floats.size() < need) scratch.floats.resize(need);
    float* hidden = scratch.floats.data();
    float* eout = hidden + (size_t)total * n_ff;
    // Each token's input row is encoded once per format its experts need and copied to its
    // pairs' slots (it was encoded once per pair: k times the same row; ~5 % of deepseek2's pp512).
    const size_t enc_floats = (ar + ar_b + 63) / 4 + 16;
    for (int t = 0; t < pool.n_threads(); ++t)
        scratch.thread_floats(t, (size_t)std::max<int64_t>(E, n_ff) + enc_floats);
    pool.parallel_for(T, [&](int64_t t, int thread) {
        const float* in = x.row<float>(t);
        float* space = scratch.per_thread[thread].data();
        if (round16) {
            std::memcpy(space, in, sizeof(float) * E);
            round_to_f16(space, E);
            in = space;
        }
        uint8_t* enc = reinterpret_cast<uint8_t*>(space + std::max<int64_t>(E, n_ff));
        uint8_t* enc_b = enc + ar;
        bool have = false, have_b = false;
        for (int64_t j = 0; j < k; ++j) {
            const int64_t s = slot_of[(size_t)(t * k + j)];
            if (s < 0) continue;
            if (big_gu && (big[(size_t)s] & 1)) {
                if (pk_gu) continue;
                if (!have_b) kg_b.act->encode_row(in, enc_b, E), have_b = true;
                std::memcpy(act_b + ar_b * s, enc_b, ar_b);
            } else {
                if (!have) kg.act->encode_row(in, enc, E), have = true;
                std::memcpy(act + ar * s, enc, ar);
            }
        }
    });
    std::vector<const float*>& rows_in = ms.rows_in;  // per pair: its input row
    std::vector<const float*>& rows_h = ms.rows_h;    // per pair: its hidden row
    if (pk_gu) {
        rows_in.resize((size_t)total);
        for (int64_t s = 0; s < total; ++s) rows_in[(size_t)s] = x.row<float>(tok[(size_t)s]);
    }
    if (pk_d) {
        rows_h.resize((size_t)total);
        for (int64_t s = 0; s < total; ++s) rows_h[(size_t)s] = hidden + (size_t)s * n_ff;
    }
    // per-thread float space: [gate | up] rows of a task, then (64-byte aligned) packed tokens
    const size_t pk_floats = (std::max(pk_gu ? amx_packed_bytes(E, max_n) : 0, pk_d ? amx_packed_bytes(n_ff, max_n) : 0) + 64) / 4;
    auto packed_space = [&](int thread, size_t offset_floats) {
        const uintptr_t p = reinterpret_cast<uintptr_t>(scratch.per_thread[thread].data() + offset_floats);
        return reinterpret_cast<void*>((p + 63) & ~(uintptr_t)63);
    };

    // Token generation (each expert has the same few tokens and the experts share out evenly over
    // the threads): whole experts as tasks, gate/up, SwiGLU, encoding and down in one pass; two
    // fewer pool barriers per layer, and each expert's three matrices stream as three long runs
    // instead of a dozen short ones.
    if (!big_gu && !big_d && work.size() >= (size_t)pool.n_threads() && work.size() % (size_t)pool.n_threads() == 0 &&
        std::all_of(work.begin(), work.end(), [&](const ExpertWork& w) { return w.n == work[0].n; })) {
        for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, (size_t)(2 * n_ff * max_n));
        pool.parallel_for((int64_t)work.size(), [&](int64_t task, int thread) {
            const ExpertWork& w = work[(size_t)task];
            float* g = scratch.per_thread[thread].data();
            float* u = g + n_ff * w.n;
            const uint8_t* a = act + ar * w.first;
            const uint8_t* gbase = static_cast<const uint8_t*>(wg.data) + (size_t)w.expert * wg.nb[2];
            run_rows(kg, gbase, wg.nb[1], E, 0, n_ff, a, ar, w.n, g, n_ff, max_call_tokens(op));
            if (merged) run_rows(kg, gbase, wg.nb[1], E, n_ff, 2 * n_ff, a, ar, w.n, u, n_ff, max_call_tokens(op));
            else
                run_rows(ku, static_cast<const uint8_t*>(wu->data) + (size_t)w.expert * wu->nb[2], wu->nb[1], E, 0, n_ff, a, ar,
                         w.n, u, n_ff, max_call_tokens(op));
            for (int64_t t = 0; t < w.n; ++t) {
                float* h = hidden + (size_t)(w.first + t) * n_ff;
                vec_kernels().silu_mul(g + t * n_ff, u + t * n_ff, h, n_ff);
                if (round16) round_to_f16(h, n_ff);
                kd.act->encode_row(h, act_d + dr * (w.first + t), n_ff);
            }
            run_rows(kd, static_cast<const uint8_t*>(wd.data) + (size_t)w.expert * wd.nb[2], wd.nb[1], n_ff, 0, E,
                     act_d + dr * w.first, dr, w.n, eout + (size_t)w.first * E, E, max_call_tokens(op));
        });
    } else {
        // 3. Gate and up (+ SwiGLU) for every expert, row chunks as tasks.
        int64_t unit_gu = std::max(row_unit(kg, *quant::find_type(wg.type)),
                                   merged ? 1 : row_unit(ku, *quant::find_type(wu->type)));
        if (big_gu) unit_gu = std::max({unit_gu, row_unit(kg_b, *quant::find_type(wg.type)),
                                        merged ? 1 : row_unit(ku_b, *quant::find_type(wu->type))});
        // (With AMX experts, whole experts per task: the tile kernel repacks its tokens in every call.)
        const int64_t chunk = chunk_rows(n_ff, unit_gu, std::max<int>(1, pool.n_threads() / (int)std::max<size_t>(1, work.size())),
                                         big_gu ? chunks_per_thread(kg_b) : 4);
        const int64_t per_exp = (n_ff + chunk - 1) / chunk;
        const size_t gu_floats = (size_t)std::max<int64_t>(std::max<int64_t>(E, n_ff), 2 * chunk * max_n);
        for (int t = 0; t < pool.n_threads(); ++t) scratch.thread_floats(t, gu_floats + pk_floats);
        pool.parallel_for((int64_t)work.size() * per_exp, [&](int64_t task, int thread) {
            const ExpertWork& w = work[(size_t)(task / per_exp)];
            const bool b = big_gu && (big[(size_t)w.first] & 1);
            const MatmulKernel& g_k = b ? kg_b : kg;
            const MatmulKernel& u_k = b ? ku_b : ku;
            const size_t arw = b ? ar_b : ar;
            const int64_t r0 = (task % per_exp) * chunk, r1 = std::min(n_ff, r0 + chunk), n = r1 - r0;
            float* g = scratch.per_thread[thread].data();
            float* u = g + n * w.n;
            const uint8_t* a = (b ? act_b : act) + arw * w.first;
            const uint8_t* gbase = static_cast<const uint8_t*>(wg.data) + (size_t)w.expert * wg.nb[2];
            if (b && pk_gu) {
                void* pk = packed_space(thread, gu_floats);
                amx_pack_rows(rows_in.data() + w.first, E, w.n, pk);
                const uint8_t* ubase = merged ? gbase : static_cast<const uint8_t*>(wu->data) + (size_t)w.expert * wu->nb[2];
                const int64_t u0 = merged ? n_ff : 0;
                g_k.run_packed(gbase + (size_t)r0 * wg.nb[1], wg.nb[1], E, 0, n, pk, w.n, g, n);
                u_k.run_packed(ubase + (size_t)(u0 + r0) * (merged ? wg.nb[1] : wu->nb[1]), merged ? wg.nb[1] : wu->nb[1], E, 0, n,
                               pk, w.n, u, n);
                for (int64_t t = 0; t < w.n; ++t)
                    vec_kernels().silu_mul(g + t * n, u + t * n, hidden + (size_t)(w.first + t) * n_ff + r0, n);
                return;
            }
            run_rows(g_k, gbase, wg.nb[1], E, r0, r1, a, arw, w.n, g, n, max_call_tokens(op));
            if (merged) run_rows(g_k, gbase, wg.nb[1], E, n_ff + r0, n_ff + r1, a, arw, w.n, u, n, max_call_tokens(op));
            else
                run_rows(u_k, static_cast<const uint8_t*>(wu->data) + (size_t)w.expert * wu->nb[2], wu->nb[1], E, r0, r1, a,
                         arw, w.n, u, n, max_call_tokens(op));
            for (int64_t t = 0; t < w.n; ++t)
                vec_kernels().silu_mul(g + t * n, u + t * n, hidden + (size_t)(w.first + t) * n_ff + r0, n);
        });

        // 4. Encode the hidden rows for the down kernel.
        pool.parallel_for(total, [&](int64_t s, int) {
            float* h = hidden + (size_t)s * n_ff;
            if (round16) round_to_f16(h, n_ff);
            if (big_d && (big[(size_t)s] & 2)) {
                if (!pk_d) kd_b.act->encode_row(h, act_db + dr_b * s, n_ff);
            } else {
                kd.act->encode_row(h, act_d + dr * s, n_ff);
            }
        });

        // 5. Down projection per expert.
        int64_t unit_d = row_unit(kd, *quant::find_type(wd.type));
        if (big_d) unit_d = std::max(unit_d, row_unit(kd_b, *quant::find_type(wd.type)));
        const int64_t chunk_d = chunk_rows(E, unit_d, std::max<int>(1, pool.n_threads() / (int)std::max<size_t>(1, work.size())),
                                           big_d ? chunks_per_thread(kd_b) : 4);
        const int64_t per_exp_d = (E + chunk_d - 1) / chunk_d;
        pool.parallel_for((int64_t)work.size() * per_exp_d, [&](int64_t task, int thread) {
            const ExpertWork& w = work[(size_t)(task / per_exp_d)];
            const bool b = big_d && (big[(size_t)w.first] & 2);
            const int64_t r0 = (task % per_exp_d) * chunk_d, r1 = std::min(E, r0 + chunk_d);
            if (b && pk_d) {
                void* pk = packed_space(thread, 0);
                amx_pack_rows(rows_h.data() + w.first, n_ff, w.n, pk);
                kd_b.run_packed(static_cast<const uint8_t*>(wd.data) + (size_t)w.expert * wd.nb[2] + (size_t)r0 * wd.nb[1],
                                wd.nb[1], n_ff, 0, r1 - r0, pk, w.n, eout + (size_t)w.first * E + r0, E);
                return;
            }
            run_rows(b ? kd_b : kd, static_cast<const uint8_t*>(wd.data) + (size_t)w.expert * wd.nb[2], wd.nb[1], n_ff, r0,
                     r1, b ? act_db + dr_b * w.first : act_d + dr * w.first, b ? dr_b : dr, w.n,
                     eout + (size_t)w.first * E + r0, E, max_call_tokens(op));
        });

    }  // experts split into row chunks

    // 6. Weighted sum per token, in selection order.
    pool.parallel_for(T, [&](int64_t t, int) {
        float* out = y.row<float>(t);
        std::memset(out, 0, sizeof(float) * E);
        const float* wt = wts.row<float>(t);
        for (int64_t j = 0; j < k; ++j) {
            const int64_t s = slot_of[(size_t)(t * k + j)];
            if (s < 0) continue;
            const float* o = eout + (size_t)s * E;
            for (int64_t i = 0; i < E; ++i) out[i] += wt[j] * o[i];
        }
    });
}

}  // namespace ikllm::cpu
