// Blocks shared by the architectures: dense SwiGLU (architectures.md §5), the mixture of experts
// with optional shared experts (§7) and the output head.
#include "graph/builder.h"
#include "quant/type_traits.h"

namespace ikllm {

Tensor* dense_ffn(GraphBuilder& gb, const LayerWeights& l, Tensor* cur) {
    if (l.ffn_gate_b || l.ffn_up_b) {
        Tensor* g = gb.mul_mat(l.ffn_gate, cur, l.ffn_gate_b);
        Tensor* u = gb.mul_mat(l.ffn_up, cur, l.ffn_up_b);
        return gb.mul_mat(l.ffn_down, gb.swiglu(g, u), l.ffn_down_b);
    }
    // Fused: one pass over the gate and up rows, never materialising both products.
    return gb.mul_mat(l.ffn_down, gb.mul_mat_swiglu(l.ffn_gate, l.ffn_up, cur), l.ffn_down_b);
}

Tensor* moe_ffn_block(GraphBuilder& gb, const Model& m, const LayerWeights& l, Tensor* cur, const BatchView& b) {
    MoeParams p = m.hp.moe;
    p.n_used = m.hp.n_expert_used;
    p.ser_max = b.ser_max;
    p.ser_frac = b.ser_frac;
    // F16 expert weights: the reference rounds the expert inputs to f16 (architectures.md §9).
    p.round_f16 = l.ffn_gate_exps->type == quant::T_F16;
    Tensor* router = gb.mul_mat(l.ffn_gate_inp, cur);  // [n_expert, T]
    Tensor* ids = nullptr;
    Tensor* weights = gb.moe_route(router, l.exp_probs_b, p, &ids);
    Tensor* out = gb.moe_ffn(cur, ids, weights, l.ffn_gate_exps, l.ffn_up_exps, l.ffn_down_exps, p);
    if (l.ffn_gate_shexp) {
        Tensor* sh = gb.mul_mat(l.ffn_down_shexp, gb.mul_mat_swiglu(l.ffn_gate_shexp, l.ffn_up_shexp, cur));
        out = gb.add(out, sh);
    }
    return out;
}

void output_head(GraphBuilder& gb, const Model& m, const BatchView& b, Tensor* x) {
    if (b.hidden) {
        // Embeddings mode: normalise every row into the session's buffer; the LM head reads the
        // wanted rows from there (the norm is per row, so the logits are the same as below).
        Tensor* h = gb.rms_norm(x, m.output_norm, m.hp.eps, gb.wrap(b.hidden, m.hp.n_embd, b.n_tokens));
        if (b.n_out == 0) return;
        Tensor* out = gb.gather_rows(h, b.out_rows, b.n_out);
        gb.mul_mat(m.output, out, nullptr, gb.wrap(b.logits, m.hp.n_vocab, b.n_out));
        return;
    }
    if (b.n_out == 0) return;
    Tensor* out = gb.gather_rows(x, b.out_rows, b.n_out);  // [n_embd, n_out]
    out = gb.rms_norm(out, m.output_norm, m.hp.eps);
    gb.mul_mat(m.output, out, nullptr, gb.wrap(b.logits, m.hp.n_vocab, b.n_out));  // [n_vocab, n_out]
}

}  // namespace ikllm
