// Builds the op list of one micro-batch. Each architecture family is one function that reads
// top to bottom like the model's equations (docs: architectures.md); shared blocks are helpers.
#pragma once
#include <cstdint>

#include "graph/arena.h"
#include "model/model.h"
#include "ops.h"
#include "session/kv_cache.h"

namespace ikllm {

// One micro-batch as the graph sees it. Arrays have n_tokens entries except out_rows (n_out).
struct BatchView {
    int32_t n_tokens = 0;
    const int32_t* tokens = nullptr;
    const int32_t* positions = nullptr;
    const int32_t* seq_ids = nullptr;
    const int32_t* cells = nullptr;     // KV cell of each token
    int32_t n_out = 0;
    const int32_t* out_rows = nullptr;  // token indices whose logits are wanted
    float* logits = nullptr;            // [n_out, n_vocab] destination
    float* hidden = nullptr;            // [n_tokens, n_embd] destination of every token's final-norm row, or null
    int32_t ser_max = 0;                // smart expert reduction (session option; 0 = off)
    float ser_frac = 0.0f;
    float attn_scratch_mib = 0.0f;       // bound on attention scratch memory (session option; 0 = none)
    bool batch_invariant = false;        // session option: per-token results independent of the batch
    int32_t mla_expand_min_batch = 0;    // MLA: batches this large expand the latents (0 = never)
};

// Helpers to make activation tensors in the arena.
class GraphBuilder {
public:
    GraphBuilder(Graph& g, Arena& a) : g_(g), a_(a) {}
    Tensor* f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1);
    // The same in memory that lives through the whole batch (buffers shared by the layers).
    Tensor* batch_f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1);
    // 0, 1, ..., n-1 in the arena (row ids of get_rows; written now, so batch-lived).
    const int32_t* iota(int32_t n);
    // Layer `il` starts (il = n_layer for the output head): its activations go to the layer pool
    // of layer il - 2, whose contents no later op reads (a layer reads only the previous layer's
    // output). Call before adding the layer's first op.
    void begin_layer(int il);
    // A view of t's memory with a new shape (contiguous float data).
    Tensor* reshape(Tensor* t, int64_t ne0, int64_t ne1, int64_t ne2 = 1);
    Tensor* wrap(float* data, int64_t ne0, int64_t ne1);

    Tensor* get_rows(Tensor* table, const int32_t* ids, int32_t n, Tensor* dst = nullptr);
    Tensor* rms_norm(Tensor* x, Tensor* gain, float eps, Tensor* dst = nullptr);
    Tensor* mul_mat(Tensor* w, Tensor* x, Tensor* bias = nullptr, Tensor* dst = nullptr);
    Tensor* add(Tensor* a, Tensor* b);
    Tensor* swiglu(Tensor* gate, Tensor* up);
    void rope(Tensor* x, const int32_t* positions, const RopeParams& p);
    void kv_store(Tensor* src, Tensor* cache, const int32_t* cells, int32_t n);
    Tensor* attention(Tensor* q, Tensor* k_cache, Tensor* v_cache, const BatchView& b, const KvView& kv, float scale);
    Tensor* gather_rows(Tensor* x, const int32_t* rows, int32_t n);
    // silu(w_gate . x) * (w_up . x) in one pass.
    Tensor* mul_mat_swiglu(Tensor* w_gate, Tensor* w_up, Tensor* x);
    // Routing: returns weights [k, T]; *ids receives the expert ids [k, T].
    Tensor* moe_route(Tensor* router_logits, Tensor* sel_bias, const MoeParams& p, Tensor** ids);
    // Routed experts; up == null when gate is a merged gate_up tensor.
    Tensor* moe_ffn(Tensor* x, Tensor* ids, Tensor* weights, Tensor* gate, Tensor* up, Tensor* down,
                    const MoeParams& p);
    // A strided view into t: shape ne, byte strides nb, starting `offset` bytes in.
    Tensor* view(Tensor* t, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset);
    void copy(Tensor* src, Tensor* dst);
    // Per-head products with 3-D weights [K, N, H]: x [K, H, T] -> dst [N, H, T] (dst may be a view).
    Tensor* mul_mat_heads(Tensor* w, Tensor* x, Tensor* dst = nullptr);

    Graph& graph() { return g_; }

private:
    Graph& g_;
    Arena& a_;
};

void build_llama_family(Graph& g, Arena& a, const Model& m, const BatchView& b, KvCache& kv);
void build_deepseek2(Graph& g, Arena& a, const Model& m, const BatchView& b, KvCache& kv);

// Shared blocks (graph/shared_blocks.cpp).
// Dense SwiGLU FFN (fused gate/up when there are no biases).
Tensor* dense_ffn(GraphBuilder& gb, const LayerWeights& l, Tensor* cur);
// Routed experts of a MoE layer (+ shared experts when the layer has them).
Tensor* moe_ffn_block(GraphBuilder& gb, const Model& m, const LayerWeights& l, Tensor* cur, const BatchView& b);
// Final norm and LM head for the tokens whose logits are wanted, into b.logits; with b.hidden,
// the final norm of every token is kept there too.
void output_head(GraphBuilder& gb, const Model& m, const BatchView& b, Tensor* x);

}  // namespace ikllm
