// deepseek2 (DeepSeek V2-Lite, V2, V2.5, V3, R1): multi-head latent attention over a latent KV
// cache (absorbed form; expanded for prompt batches), dense leading layers, routed + shared
// experts (docs: architectures.md §8).
#include <algorithm>

#include "graph/builder.h"

namespace ikllm {

namespace {
// Upper bound on the expanded keys and values of one layer (below) when the session sets no
// attention scratch bound: past it (long contexts of wide models) the absorbed form runs.
constexpr double kExpandDefaultMiB = 1024.0;

// Expanded ("non-absorbed") MLA (§8.3; the reference's MLA mode 3 for batches of >= 128 tokens):
// the cached latents of every visible cell become per-head keys [k_nope | k_rope] and values
// through attn_kv_b, then ordinary attention with H KV heads. For a prompt (batch about as
// large as the cache) this costs about half the flops of the absorbed form, whose per-token
// wk_b / wv_b products and 576 / 512-wide attention dominate there. Only where the layer's
// cache and attn_kv_b are on the CPU (the GPU runs the absorbed form).
bool expand_mla(const Model& m, const LayerWeights& l, const BatchView& b, const KvCache& kv, int layer) {
    if (!l.wkv_b || b.batch_invariant || b.mla_expand_min_batch <= 0 || b.n_tokens < b.mla_expand_min_batch) return false;
    if (l.wkv_b->device != 0 || kv.k(layer)->device != 0) return false;
    const HParams& hp = m.hp;
    const double n = kv.view().n_cells, T = b.n_tokens, H = hp.n_head, rkv = hp.kv_lora_rank;
    const double per_cell = 4.0 * H * ((hp.d_nope + hp.d_v) + (hp.d_nope + hp.n_rot)) + 4.0 * (rkv + hp.n_rot);
    const double limit = (b.attn_scratch_mib > 0 ? b.attn_scratch_mib : kExpandDefaultMiB) * 1048576.0;
    if (per_cell * n > limit) return false;
    // Multiply-adds of both forms (a query sees on average the older cells and half the batch):
    // a small batch deep into a long context is cheaper absorbed (expanding costs per cell).
    const double seen = std::max(0.0, n - T) + T / 2, kv_b = H * rkv * (hp.d_nope + hp.d_v);
    const double absorbed = T * kv_b + T * seen * H * (2 * rkv + hp.n_rot);
    const double expanded = n * kv_b + T * seen * H * (hp.d_nope + hp.n_rot + hp.d_v);
    return expanded < absorbed;
}

// Memory of the expanded keys and values, shared by all layers of a batch (each layer's is dead
// once its attention ran; batch-lived, outside the layer pools): latents, attn_kv_b products, keys.
struct ExpandBuffers {
    Tensor *lat = nullptr, *kvb = nullptr, *k = nullptr;
    const int32_t* ids = nullptr;
};

// q: [d_k, H, T] (per head [q_nope | q_rope], rope applied). Returns [d_v * H, T].
Tensor* expanded_attention(GraphBuilder& gb, const Model& m, const LayerWeights& l, Tensor* q, const BatchView& b,
                           KvCache& kv, int layer, ExpandBuffers& eb) {
    const HParams& hp = m.hp;
    const int64_t H = hp.n_head, dn = hp.d_nope, dr = hp.n_rot, dv = hp.d_v, rkv = hp.kv_lora_rank;
    const KvView view = kv.view();
    const int32_t n = view.n_cells;
    if (!eb.lat) {
        eb.ids = gb.iota(n);
        // Shared by every expanding layer: batch-lived.
        eb.lat = gb.batch_f32(rkv + dr, n);
        eb.kvb = gb.batch_f32(H * (dn + dv), n);
        eb.k = gb.batch_f32(dn + dr, H, n);
    }
    Tensor* kc = kv.k(layer);  // [r_kv + n_rot, 1, cells]: [c | k_rope] per cell
    Tensor* rows = gb.view(kc, rkv + dr, n, 1, kc->nb[2], kc->nb[2] * (size_t)n, 0);
    Tensor* lat = gb.get_rows(rows, eb.ids, n, eb.lat);                                // [r_kv + n_rot, n] f32
    Tensor* kvb = gb.mul_mat(l.wkv_b, gb.view(lat, rkv, n, 1, lat->nb[1], lat->nb[1] * (size_t)n, 0), nullptr, eb.kvb);
    const size_t hs = sizeof(float) * (size_t)(dn + dv);                                // one head of kvb
    Tensor* k = eb.k;
    gb.copy(gb.view(kvb, dn, H, n, hs, hs * H, 0), gb.view(k, dn, H, n, k->nb[1], k->nb[2], 0));
    // The one rope key of a cell into every head (source head stride 0).
    gb.copy(gb.view(lat, dr, H, n, 0, lat->nb[1], sizeof(float) * rkv), gb.view(k, dr, H, n, k->nb[1], k->nb[2], sizeof(float) * dn));
    Tensor* v = gb.view(kvb, dv, H, n, hs, hs * H, sizeof(float) * dn);
    return gb.attention(q, k, v, b, view, hp.kq_scale);
}

// Absorbed MLA (§8.5). Cache row per token: [c = RMSNorm(latent) (r_kv) | k_rope (n_rot)];
// query per head [q~ = wk_b^T q_nope (r_kv) | q_rope (n_rot)]; values = the latent c.
Tensor* mla_block(GraphBuilder& gb, const Model& m, const LayerWeights& l, Tensor* u, const BatchView& b,
                  KvCache& kv, int layer, ExpandBuffers& eb) {
    const HParams& hp = m.hp;
    const int64_t T = b.n_tokens, H = hp.n_head, dk = hp.d_k, dn = hp.d_nope, dr = hp.n_rot, rkv = hp.kv_lora_rank;
    Tensor* q;
    if (l.wq_a) q = gb.mul_mat(l.wq_b, gb.rms_norm(gb.mul_mat(l.wq_a, u), l.q_a_norm, hp.eps));
    else q = gb.mul_mat(l.wq, u);
    q = gb.reshape(q, dk, H, T);                                                   // [d_k, H, T]
    Tensor* q_nope = gb.view(q, dn, H, T, q->nb[1], q->nb[2], 0);
    Tensor* q_rope = gb.view(q, dr, H, T, q->nb[1], q->nb[2], 4 * dn);
    gb.rope(q_rope, b.positions, hp.rope);

    Tensor* kvr = gb.mul_mat(l.wkv_a_mqa, u);                                     // [r_kv + n_rot, T]
    kvr = gb.reshape(kvr, rkv + dr, 1, T);
    Tensor* c = gb.view(kvr, rkv, 1, T, kvr->nb[1], kvr->nb[2], 0);
    gb.rms_norm(c, l.kv_a_norm, hp.eps, c);                                        // in place
    gb.rope(gb.view(kvr, dr, 1, T, kvr->nb[1], kvr->nb[2], 4 * rkv), b.positions, hp.rope);
    gb.kv_store(gb.reshape(kvr, rkv + dr, T, 1), kv.k(layer), b.cells, (int32_t)T);
    if (expand_mla(m, l, b, kv, layer))
        return gb.mul_mat(l.wo, expanded_attention(gb, m, l, q, b, kv, layer, eb));

    Tensor* qf = gb.f32(rkv + dr, H, T);                                           // [r_kv + n_rot, H, T]
    gb.mul_mat_heads(l.wk_b, q_nope, gb.view(qf, rkv, H, T, qf->nb[1], qf->nb[2], 0));
    gb.copy(q_rope, gb.view(qf, dr, H, T, qf->nb[1], qf->nb[2], 4 * rkv));
    Tensor* o = gb.attention(qf, kv.k(layer), kv.v(layer), b, kv.view(), hp.kq_scale);  // [r_kv * H, T]
    o = gb.mul_mat_heads(l.wv_b, gb.reshape(o, rkv, H, T));                        // [d_v, H, T]
    return gb.mul_mat(l.wo, gb.reshape(o, (int64_t)hp.d_v * H, T, 1));
}
}  // namespace

void build_deepseek2(Graph& g, Arena& a, const Model& m, const BatchView& b, KvCache& kv) {
    const HParams& hp = m.hp;
    GraphBuilder gb(g, a);
    ExpandBuffers eb;
    Tensor* x = gb.get_rows(m.tok_embd, b.tokens, b.n_tokens);
    for (int il = 0; il < hp.n_layer; ++il) {
        gb.begin_layer(il);
        const LayerWeights& l = m.layers[il];
        Tensor* h = gb.add(x, mla_block(gb, m, l, gb.rms_norm(x, l.attn_norm, hp.eps), b, kv, il, eb));
        Tensor* w = gb.rms_norm(h, l.ffn_norm, hp.eps);
        x = gb.add(h, l.is_moe() ? moe_ffn_block(gb, m, l, w, b) : dense_ffn(gb, l, w));
    }
    gb.begin_layer(hp.n_layer);
    output_head(gb, m, b, x);
}

}  // namespace ikllm
