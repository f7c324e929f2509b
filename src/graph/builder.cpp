#include "graph/builder.h"

#include <algorithm>

#include "core/error.h"
#include "quant/type_traits.h"

namespace ikllm {

Tensor* GraphBuilder::wrap(float* data, int64_t ne0, int64_t ne1) {
    Tensor* t = g_.new_tensor();
    t->type = quant::T_F32;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->nb[0] = 4;
    t->nb[1] = 4 * ne0;
    t->nb[2] = t->nb[1] * ne1;
    t->nb[3] = t->nb[2];
    t->data = data;
    return t;
}

Tensor* GraphBuilder::f32(int64_t ne0, int64_t ne1, int64_t ne2) {
    float* d = static_cast<float*>(a_.alloc(sizeof(float) * ne0 * ne1 * ne2));
    Tensor* t = wrap(d, ne0, ne1 * ne2);
    return reshape(t, ne0, ne1, ne2);
}

Tensor* GraphBuilder::batch_f32(int64_t ne0, int64_t ne1, int64_t ne2) {
    float* d = static_cast<float*>(a_.alloc_batch(sizeof(float) * ne0 * ne1 * ne2));
    Tensor* t = wrap(d, ne0, ne1 * ne2);
    return reshape(t, ne0, ne1, ne2);
}

void GraphBuilder::begin_layer(int il) {
    const int pool = 1 + (il & 1);
    const bool reuse = il >= 2 && a_.reuses_layers();
    if (reuse)
        a_.for_each_block_of(pool, [&](const void* p, size_t n) { g_.recycled.push_back({g_.ops.size(), p, n}); });
    a_.use_pool(pool, reuse);
}

const int32_t* GraphBuilder::iota(int32_t n) {
    int32_t* ids = static_cast<int32_t*>(a_.alloc_batch(sizeof(int32_t) * (size_t)std::max(n, 1)));
    for (int32_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
}

Tensor* GraphBuilder::reshape(Tensor* src, int64_t ne0, int64_t ne1, int64_t ne2) {
    if (ne0 * ne1 * ne2 != src->n_elements()) fail(Status::internal, "reshape: element count mismatch");
    Tensor* t = g_.new_tensor();
    *t = *src;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->ne[3] = 1;
    t->nb[0] = 4;
    t->nb[1] = 4 * ne0;
    t->nb[2] = t->nb[1] * ne1;
    t->nb[3] = t->nb[2] * ne2;
    return t;
}

Tensor* GraphBuilder::get_rows(Tensor* table, const int32_t* ids, int32_t n, Tensor* dst) {
    Op& op = g_.add(OpKind::get_rows);
    op.src[0] = table;
    op.i32 = ids;
    op.n_i32 = n;
    op.dst = dst ? dst : f32(table->ne[0], n);
    return op.dst;
}

Tensor* GraphBuilder::rms_norm(Tensor* x, Tensor* gain, float eps, Tensor* dst) {
    Op& op = g_.add(OpKind::rms_norm);
    op.src[0] = x;
    op.src[1] = gain;
    op.f[0] = eps;
    op.dst = dst ? dst : f32(x->ne[0], x->ne[1], x->ne[2]);
    return op.dst;
}

Tensor* GraphBuilder::mul_mat(Tensor* w, Tensor* x, Tensor* bias, Tensor* dst) {
    Op& op = g_.add(OpKind::mul_mat);
    op.src[0] = w;
    op.src[1] = x;
    op.src[2] = bias;
    op.dst = dst ? dst : f32(w->ne[1], x->ne[1]);
    return op.dst;
}

Tensor* GraphBuilder::add(Tensor* a, Tensor* b) {
    Op& op = g_.add(OpKind::add);
    op.src[0] = a;
    op.src[1] = b;
    op.dst = f32(a->ne[0], a->ne[1], a->ne[2]);
    return op.dst;
}

Tensor* GraphBuilder::swiglu(Tensor* gate, Tensor* up) {
    Op& op = g_.add(OpKind::swiglu);
    op.src[0] = gate;
    op.src[1] = up;
    op.dst = f32(gate->ne[0], gate->ne[1], gate->ne[2]);
    return op.dst;
}

void GraphBuilder::rope(Tensor* x, const int32_t* positions, const RopeParams& p) {
    Op& op = g_.add(OpKind::rope);
    op.dst = x;
    op.i32 = positions;
    op.n_i32 = x->ne[2];
    op.rope = p;
}

void GraphBuilder::kv_store(Tensor* src, Tensor* cache, const int32_t* cells, int32_t n) {
    Op& op = g_.add(OpKind::kv_store);
    op.src[0] = src;
    // The cache as rows of one cell each.
    Tensor* rows = g_.new_tensor();
    *rows = *cache;
    rows->ne[0] = cache->ne[0] * cache->ne[1];
    rows->ne[1] = cache->ne[2];
    rows->ne[2] = 1;
    rows->nb[1] = cache->nb[2];
    op.dst = rows;
    op.i32 = cells;
    op.n_i32 = n;
}

Tensor* GraphBuilder::attention(Tensor* q, Tensor* k_cache, Tensor* v_cache, const BatchView& b, const KvView& kv,
                                float scale) {
    Op& op = g_.add(OpKind::attention);
    op.src[0] = q;
    op.src[1] = k_cache;
    op.src[2] = v_cache;
    op.i32 = b.positions;
    op.n_i32 = b.n_tokens;
    op.seq_ids = b.seq_ids;
    op.kv = kv;
    op.f[0] = scale;
    op.f[1] = b.attn_scratch_mib;
    op.dst = f32(v_cache->ne[0] * q->ne[1], q->ne[2]);
    return op.dst;
}

Tensor* GraphBuilder::gather_rows(Tensor* x, const int32_t* rows, int32_t n) {
    Op& op = g_.add(OpKind::gather_rows);
    op.src[0] = x;
    op.i32 = rows;
    op.n_i32 = n;
    op.dst = f32(x->ne[0], n);
    return op.dst;
}

Tensor* GraphBuilder::mul_mat_swiglu(Tensor* w_gate, Tensor* w_up, Tensor* x) {
    Op& op = g_.add(OpKind::mul_mat_swiglu);
    op.src[0] = w_gate;
    op.src[1] = x;
    op.src[2] = w_up;
    op.dst = f32(w_gate->ne[1], x->ne[1]);
    return op.dst;
}

Tensor* GraphBuilder::moe_route(Tensor* logits, Tensor* sel_bias, const MoeParams& p, Tensor** ids) {
    Op& op = g_.add(OpKind::moe_route);
    op.src[0] = logits;
    op.src[1] = sel_bias;
    op.moe = p;
    op.dst = f32(p.n_used, logits->ne[1]);
    Tensor* id = f32(p.n_used, logits->ne[1]);  // same size; reinterpreted as int32
    id->type = quant::T_I32;
    op.aux = id;
    *ids = id;
    return op.dst;
}

Tensor* GraphBuilder::moe_ffn(Tensor* x, Tensor* ids, Tensor* weights, Tensor* gate, Tensor* up, Tensor* down,
                              const MoeParams& p) {
    Op& op = g_.add(OpKind::moe_ffn);
    op.src[0] = x;
    op.src[1] = ids;
    op.src[2] = weights;
    op.ex[0] = gate;
    op.ex[1] = up;
    op.ex[2] = down;
    op.moe = p;
    op.dst = f32(x->ne[0], x->ne[1]);
    return op.dst;
}

Tensor* GraphBuilder::view(Tensor* t, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t offset) {
    Tensor* v = g_.new_tensor();
    *v = *t;
    v->ne[0] = ne0;
    v->ne[1] = ne1;
    v->ne[2] = ne2;
    v->ne[3] = 1;
    v->nb[1] = nb1;
    v->nb[2] = nb2;
    v->nb[3] = nb2 * ne2;
    v->data = static_cast<uint8_t*>(t->data) + offset;
    return v;
}

void GraphBuilder::copy(Tensor* src, Tensor* dst) {
    Op& op = g_.add(OpKind::copy);
    op.src[0] = src;
    op.dst = dst;
}

Tensor* GraphBuilder::mul_mat_heads(Tensor* w, Tensor* x, Tensor* dst) {
    Op& op = g_.add(OpKind::mul_mat_heads);
    op.src[0] = w;
    op.src[1] = x;
    op.dst = dst ? dst : f32(w->ne[1], x->ne[1], x->ne[2]);
    return op.dst;
}

}  // namespace ikllm
