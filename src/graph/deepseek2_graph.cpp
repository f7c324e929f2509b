// deepseek2 (DeepSeek V2-Lite, V2, V2.5, V3, R1): multi-head latent attention in the absorbed
// form over a latent KV cache, dense leading layers, routed + shared experts
// (docs: architectures.md §8).
#include "graph/builder.h"

namespace ikllm {

namespace {
// Absorbed MLA (§8.5). Cache row per token: [c = RMSNorm(latent) (r_kv) | k_rope (n_rot)];
// query per head [q~ = wk_b^T q_nope (r_kv) | q_rope (n_rot)]; values = the latent c.
Tensor* mla_block(GraphBuilder& gb, const Model& m, const LayerWeights& l, Tensor* u, const BatchView& b,
                  KvCache& kv, int layer) {
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
    Tensor* x = gb.get_rows(m.tok_embd, b.tokens, b.n_tokens);
    for (int il = 0; il < hp.n_layer; ++il) {
        const LayerWeights& l = m.layers[il];
        Tensor* h = gb.add(x, mla_block(gb, m, l, gb.rms_norm(x, l.attn_norm, hp.eps), b, kv, il));
        Tensor* w = gb.rms_norm(h, l.ffn_norm, hp.eps);
        x = gb.add(h, l.is_moe() ? moe_ffn_block(gb, m, l, w, b) : dense_ffn(gb, l, w));
    }
    output_head(gb, m, b, x);
}

}  // namespace ikllm
