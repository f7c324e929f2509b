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
};

// Helpers to make activation tensors in the arena.
class GraphBuilder {
public:
    GraphBuilder(Graph& g, Arena& a) : g_(g), a_(a) {}
    Tensor* f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1);
    // A view of t's memory with a new shape (contiguous float data).
    Tensor* reshape(Tensor* t, int64_t ne0, int64_t ne1, int64_t ne2 = 1);
    Tensor* wrap(float* data, int64_t ne0, int64_t ne1);

    Tensor* get_rows(Tensor* table, const int32_t* ids, int32_t n);
    Tensor* rms_norm(Tensor* x, Tensor* gain, float eps);
    Tensor* mul_mat(Tensor* w, Tensor* x, Tensor* bias = nullptr, Tensor* dst = nullptr);
    Tensor* add(Tensor* a, Tensor* b);
    Tensor* swiglu(Tensor* gate, Tensor* up);
    void rope(Tensor* x, const int32_t* positions, const RopeParams& p);
    void kv_store(Tensor* src, Tensor* cache, const int32_t* cells, int32_t n);
    Tensor* attention(Tensor* q, Tensor* k_cache, Tensor* v_cache, const BatchView& b, const KvView& kv, float scale);
    Tensor* gather_rows(Tensor* x, const int32_t* rows, int32_t n);

    Graph& graph() { return g_; }

private:
    Graph& g_;
    Arena& a_;
};

void build_llama_family(Graph& g, Arena& a, const Model& m, const BatchView& b, KvCache& kv);

}  // namespace ikllm
