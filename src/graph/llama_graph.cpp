// llama, qwen2, qwen3 (and the attention half of qwen3moe): docs/architectures.md §4-§6.
#include <cmath>

#include "graph/builder.h"

namespace ikllm {

namespace {
// Self-attention block; returns W_o . attn  [n_embd, T].
Tensor* attention_block(GraphBuilder& gb, const Model& m, const LayerWeights& l, Tensor* cur, const BatchView& b,
                        KvCache& kv, int layer) {
    const HParams& hp = m.hp;
    const int32_t T = b.n_tokens;
    Tensor* q = gb.mul_mat(l.wq, cur, l.bq);                       // [n_head*d_k, T]
    Tensor* k = gb.mul_mat(l.wk, cur, l.bk);                       // [n_head_kv*d_k, T]
    Tensor* v = gb.mul_mat(l.wv, cur, l.bv);                       // [n_head_kv*d_v, T]
    q = gb.reshape(q, hp.d_k, hp.n_head, T);                       // [d_k, n_head, T]
    k = gb.reshape(k, hp.d_k, hp.n_head_kv, T);                    // [d_k, n_head_kv, T]
    if (l.q_norm) q = gb.rms_norm(q, l.q_norm, hp.eps);            // QK-norm per head (qwen3)
    if (l.k_norm) k = gb.rms_norm(k, l.k_norm, hp.eps);
    RopeParams rp = hp.rope;
    if (m.rope_freqs) rp.freq_factors = static_cast<const float*>(m.rope_freqs->data);
    gb.rope(q, b.positions, rp);
    gb.rope(k, b.positions, rp);
    gb.kv_store(gb.reshape(k, (int64_t)hp.d_k * hp.n_head_kv, T), kv.k(layer), b.cells, T);
    gb.kv_store(v, kv.v(layer), b.cells, T);
    Tensor* o = gb.attention(q, kv.k(layer), kv.v(layer), b, kv.view(), 1.0f / std::sqrt((float)hp.d_k));
    return gb.mul_mat(l.wo, o, l.bo);                              // [n_embd, T]
}
}  // namespace

void build_llama_family(Graph& g, Arena& a, const Model& m, const BatchView& b, KvCache& kv) {
    const HParams& hp = m.hp;
    GraphBuilder gb(g, a);
    Tensor* x = gb.get_rows(m.tok_embd, b.tokens, b.n_tokens);    // [n_embd, T]
    for (int il = 0; il < hp.n_layer; ++il) {
        gb.begin_layer(il);
        const LayerWeights& l = m.layers[il];
        Tensor* h = gb.add(x, attention_block(gb, m, l, gb.rms_norm(x, l.attn_norm, hp.eps), b, kv, il));
        Tensor* w = gb.rms_norm(h, l.ffn_norm, hp.eps);
        x = gb.add(h, l.is_moe() ? moe_ffn_block(gb, m, l, w, b) : dense_ffn(gb, l, w));
    }
    gb.begin_layer(hp.n_layer);
    output_head(gb, m, b, x);
}

}  // namespace ikllm
