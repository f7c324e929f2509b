// Load pipeline: GGUF index -> hyper-parameters -> architecture tensor schema (shapes
// checked, every file tensor consumed) -> weights bound to backend memory -> tokenizer.
#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "model/model.h"
#include "model/memory_placement.h"
#include "model/device_placement.h"
#include "model/repack_weights.h"
#include "quant/act_q8_0.h"
#include "quant/type_traits.h"
#include "tokenizer/tokenizer.h"

namespace ikllm {

Model::~Model() = default;

const Tensor* Model::find_weight(const std::string& name) const {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
}

bool type_geometry(uint32_t type, gguf::TypeGeometry* out) {
    const quant::TypeTraits* t = quant::find_type(type);
    if (!t || t->is_activation_only || quant::is_runtime_layout(type)) return false;
    *out = {t->name, t->block_elems, t->block_bytes, t->row_meta_bytes, t->interleave};
    return true;
}

namespace {

std::string shape_str(const int64_t* ne, int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// Binds file tensors to weight views, checking shapes and tracking which tensors are used.
class Binder {
public:
    Binder(Model& m, const ModelOptions&) : m_(m) {}

    Tensor* require(const std::string& name, std::initializer_list<int64_t> shape) { return bind(name, shape, true); }
    Tensor* optional(const std::string& name, std::initializer_list<int64_t> shape) { return bind(name, shape, false); }
    const gguf::TensorInfo* info(const std::string& name) const { return m_.file->find_tensor(name); }
    // Marks a tensor as used without binding it (read only to derive others).
    void consume(const std::string& name) { used_.insert(name); }

    // Every tensor in the file must belong to the architecture (as the reference requires).
    void check_all_used() const {
        for (const auto& ti : m_.file->tensors())
            if (!used_.count(ti.name))
                fail(Status::invalid_file, "tensor '" + ti.name + "' is not used by architecture " + m_.hp.arch_str +
                     " (unexpected tensor)");
    }

private:
    Tensor* bind(const std::string& name, std::initializer_list<int64_t> shape, bool required) {
        if (auto it = m_.by_name.find(name); it != m_.by_name.end()) return it->second;  // tied reuse
        const gguf::TensorInfo* ti = m_.file->find_tensor(name);
        if (!ti) {
            if (required) fail(Status::invalid_file, "missing tensor '" + name + "'");
            return nullptr;
        }
        int64_t want[4] = {1, 1, 1, 1};
        int n = 0;
        for (int64_t v : shape) want[n++] = v;
        for (int d = 0; d < 4; ++d)
            if (ti->ne[d] != want[d])
                fail(Status::invalid_file, "tensor '" + name + "' has shape " + shape_str(ti->ne, 4) + ", expected " +
                     shape_str(want, 4));
        const quant::TypeTraits* tt = quant::find_type(ti->type);
        if (!tt || !tt->dequant)
            fail(Status::unsupported, "tensor '" + name + "' has type " + (tt ? tt->name : std::to_string(ti->type)) +
                 " which this build cannot decode");
        auto t = std::make_unique<Tensor>();
        t->type = ti->type;
        for (int d = 0; d < 4; ++d) t->ne[d] = ti->ne[d];
        t->nb[0] = (size_t)tt->block_bytes;  // per block; float types: element size
        t->nb[1] = quant::row_bytes(*tt, ti->ne[0]);
        t->nb[2] = t->nb[1] * ti->ne[1];
        t->nb[3] = t->nb[2] * ti->ne[2];
        // Mapped, or already read into memory owned by the file (use_mmap = 0): no copy either way.
        t->data = const_cast<uint8_t*>(ti->data);
        t->name = ti->name.c_str();
        used_.insert(name);
        m_.n_params += (uint64_t)ti->n_elements();
        m_.weight_bytes += ti->nbytes;
        Tensor* raw = t.get();
        m_.by_name.emplace(name, raw);
        m_.weights.push_back(std::move(t));
        return raw;
    }

    Model& m_;
    std::set<std::string> used_;
};

// Matmul weights must have a CPU kernel; reports the tensor and its type otherwise.
void check_matmul_type(const Model& m, const Tensor* t) {
    if (t && !m.cpu->supports_weight_type(t->type)) {
        const quant::TypeTraits* tt = quant::find_type(t->type);
        fail(Status::unsupported, std::string("tensor '") + t->name + "' has type " + (tt ? tt->name : "?") +
             " which has no CPU matrix kernel in this build");
    }
}

// Router and routed experts of a MoE layer (qwen3moe, deepseek2): separate gate/up or merged.
void bind_experts(Model& m, Binder& b, LayerWeights& l, const std::string& p) {
    const HParams& hp = m.hp;
    const int64_t E = hp.n_embd, F = hp.n_ff_exp, X = hp.n_expert;
    if (F <= 0) fail(Status::invalid_file, "expert feed-forward length is 0");
    l.ffn_gate_inp = b.require(p + "ffn_gate_inp.weight", {E, X});
    if (b.info(p + "ffn_gate_up_exps.weight")) {
        l.ffn_gate_exps = b.require(p + "ffn_gate_up_exps.weight", {E, 2 * F, X});
    } else {
        l.ffn_gate_exps = b.require(p + "ffn_gate_exps.weight", {E, F, X});
        l.ffn_up_exps = b.require(p + "ffn_up_exps.weight", {E, F, X});
    }
    l.ffn_down_exps = b.require(p + "ffn_down_exps.weight", {F, E, X});
    for (Tensor* t : {l.ffn_gate_inp, l.ffn_gate_exps, l.ffn_up_exps, l.ffn_down_exps}) check_matmul_type(m, t);
    if (l.ffn_up_exps && l.ffn_up_exps->type != l.ffn_gate_exps->type)
        fail(Status::unsupported, "tensors '" + p + "ffn_gate_exps.weight' and ffn_up_exps have different types "
                                  "(unsupported)");
}

void bind_llama_family(Model& m, Binder& b) {
    const HParams& hp = m.hp;
    const int64_t E = hp.n_embd, V = hp.n_vocab, q_dim = (int64_t)hp.n_head * hp.d_k,
                  kv_dim = (int64_t)hp.n_head_kv * hp.d_k, v_dim = (int64_t)hp.n_head_kv * hp.d_v;
    m.tok_embd = b.require("token_embd.weight", {E, V});
    m.output_norm = b.require("output_norm.weight", {E});
    m.output = b.optional("output.weight", {E, V});
    if (!m.output) m.output = m.tok_embd;  // tied embeddings
    if (hp.arch == Arch::qwen2) b.optional("output.bias", {V});  // loaded, never used (reference quirk)
    if (hp.arch == Arch::llama) m.rope_freqs = b.optional("rope_freqs.weight", {E / hp.n_head / 2});
    const bool qwen3ish = hp.arch == Arch::qwen3 || hp.arch == Arch::qwen3moe;
    m.layers.resize(hp.n_layer);
    for (int i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = m.layers[i];
        l.attn_norm = b.require(p + "attn_norm.weight", {E});
        l.wq = b.require(p + "attn_q.weight", {E, q_dim});
        l.wk = b.require(p + "attn_k.weight", {E, kv_dim});
        l.wv = b.require(p + "attn_v.weight", {E, v_dim});
        l.wo = b.require(p + "attn_output.weight", {(int64_t)hp.n_head * hp.d_v, E});
        if (hp.arch == Arch::qwen2) {
            l.bq = b.require(p + "attn_q.bias", {q_dim});
            l.bk = b.require(p + "attn_k.bias", {kv_dim});
            l.bv = b.require(p + "attn_v.bias", {v_dim});
        } else if (hp.arch == Arch::llama) {
            l.bq = b.optional(p + "attn_q.bias", {q_dim});
            l.bk = b.optional(p + "attn_k.bias", {kv_dim});
            l.bv = b.optional(p + "attn_v.bias", {v_dim});
            l.bo = b.optional(p + "attn_output.bias", {E});
        }
        if (qwen3ish) {
            l.q_norm = b.require(p + "attn_q_norm.weight", {hp.d_k});
            l.k_norm = b.require(p + "attn_k_norm.weight", {hp.d_k});
        }
        l.ffn_norm = b.require(p + "ffn_norm.weight", {E});
        if (hp.n_expert == 0) {
            l.ffn_gate = b.require(p + "ffn_gate.weight", {E, hp.n_ff});
            l.ffn_up = b.require(p + "ffn_up.weight", {E, hp.n_ff});
            l.ffn_down = b.require(p + "ffn_down.weight", {hp.n_ff, E});
            if (hp.arch == Arch::llama) {
                l.ffn_gate_b = b.optional(p + "ffn_gate.bias", {hp.n_ff});
                l.ffn_up_b = b.optional(p + "ffn_up.bias", {hp.n_ff});
                l.ffn_down_b = b.optional(p + "ffn_down.bias", {E});
            }
        } else {
            bind_experts(m, b, l, p);
        }
        for (Tensor* t : {l.wq, l.wk, l.wv, l.wo, l.ffn_gate, l.ffn_up, l.ffn_down}) check_matmul_type(m, t);
    }
    check_matmul_type(m, m.output);
    for (Tensor* t : {m.output_norm, m.rope_freqs})
        if (t && t->type != quant::T_F32) fail(Status::unsupported, std::string("tensor '") + t->name + "' must be F32");
    for (auto& l : m.layers)
        for (Tensor* t : {l.attn_norm, l.ffn_norm, l.q_norm, l.k_norm, l.bq, l.bk, l.bv, l.bo, l.ffn_gate_b,
                          l.ffn_up_b, l.ffn_down_b})
            if (t && t->type != quant::T_F32)
                fail(Status::unsupported, std::string("tensor '") + t->name + "' must be F32");
}

// An owned weight tensor made at load time (derived MLA products).
Tensor* owned_tensor(Model& m, const std::string& name, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    const quant::TypeTraits& tt = *quant::find_type(type);
    auto t = std::make_unique<Tensor>();
    t->type = type;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->nb[0] = (size_t)tt.block_bytes;
    t->nb[1] = quant::row_bytes(tt, ne0);
    t->nb[2] = t->nb[1] * ne1;
    t->nb[3] = t->nb[2] * ne2;
    auto buf = m.cpu->alloc(t->nb[3]);
    t->data = buf->data();
    m.buffers.push_back(std::move(buf));
    m.derived_names.push_back(name);
    t->name = m.derived_names.back().c_str();
    Tensor* raw = t.get();
    m.weights.push_back(std::move(t));
    return raw;
}

// A 3-D view [ne0, ne1, ne2] of a bound tensor stored 2-D as [ne0, ne1 * ne2] (same bytes).
Tensor* as_3d(Model& m, Tensor* t, int64_t ne1, int64_t ne2) {
    auto v = std::make_unique<Tensor>(*t);
    v->ne[1] = ne1;
    v->ne[2] = ne2;
    v->ne[3] = 1;
    v->nb[2] = v->nb[1] * ne1;
    v->nb[3] = v->nb[2] * ne2;
    Tensor* raw = v.get();
    m.weights.push_back(std::move(v));
    return raw;
}

// wk_b / wv_b from attn_kv_b (architectures.md §8.6): wk_b[h][c][i] = W_kvb[h*(dn+dv) + i][c]
// in the kv_b type if that is a float type, else Q8_0; wv_b = exact copies of the v rows.
void derive_mla_products(Model& m, LayerWeights& l, const Tensor& kvb, const std::string& p) {
    const HParams& hp = m.hp;
    const int64_t H = hp.n_head, dn = hp.d_nope, dv = hp.d_v, rkv = hp.kv_lora_rank;
    const quant::TypeTraits& st = *quant::find_type(kvb.type);
    const bool is_float = kvb.type == quant::T_F32 || kvb.type == quant::T_F16 || kvb.type == quant::T_BF16;
    const uint32_t kt = is_float ? kvb.type : quant::T_Q8_0;
    if (rkv % st.block_elems != 0 || (!is_float && dn % 32 != 0))
        fail(Status::unsupported, "tensor '" + p + "attn_kv_b.weight': cannot derive attn_k_b for these sizes");
    const quant::TypeTraits& ktt = *quant::find_type(kt);
    l.wk_b = owned_tensor(m, p + "attn_k_b.weight(derived)", kt, dn, rkv, H);
    l.wv_b = owned_tensor(m, p + "attn_v_b.weight(derived)", kvb.type, rkv, dv, H);
    const uint8_t* src = static_cast<const uint8_t*>(kvb.data);
    std::vector<float> rows((size_t)(dn * rkv)), tr((size_t)(dn * rkv));
    std::vector<float> group((size_t)st.interleave * rkv);
    for (int64_t h = 0; h < H; ++h) {
        const int64_t base = h * (dn + dv);
        for (int64_t i = 0; i < dn; ++i) {  // decode the k rows of head h
            const int64_t r = base + i, g = r / st.interleave;
            st.dequant(src + (size_t)g * st.interleave * kvb.nb[1], group.data(), rkv);
            std::memcpy(rows.data() + i * rkv, group.data() + (r % st.interleave) * rkv, sizeof(float) * rkv);
        }
        for (int64_t c = 0; c < rkv; ++c)
            for (int64_t i = 0; i < dn; ++i) tr[(size_t)(c * dn + i)] = rows[(size_t)(i * rkv + c)];
        uint8_t* dst = static_cast<uint8_t*>(l.wk_b->data) + (size_t)h * l.wk_b->nb[2];
        // The reference converts with its run-time Q8_0 encoder (RNE of x * 127/amax), not the
        // weight-file routine (round half away of x / d); the rare ±1 code differences flip
        // attention scores enough to matter on small models.
        for (int64_t c = 0; c < rkv; ++c) {
            if (kt == quant::T_Q8_0) quant::act_q8_0_encode_row(tr.data() + c * dn, dst + (size_t)c * l.wk_b->nb[1], dn);
            else ktt.quantize(tr.data() + c * dn, dst + (size_t)c * l.wk_b->nb[1], dn, nullptr);
        }
        if (st.interleave != 1)
            fail(Status::unsupported, "tensor '" + p + "attn_kv_b.weight': row-interleaved type cannot be split");
        for (int64_t j = 0; j < dv; ++j)
            std::memcpy(static_cast<uint8_t*>(l.wv_b->data) + (size_t)h * l.wv_b->nb[2] + (size_t)j * l.wv_b->nb[1],
                        src + (size_t)(base + dn + j) * kvb.nb[1], kvb.nb[1]);
    }
}

// One row of a weight tensor viewed 2-D (rows of ne0), as floats; handles row-interleaved types.
void dequant_row(const Tensor& t, int64_t row, float* out, std::vector<float>& group) {
    const quant::TypeTraits& tt = *quant::find_type(t.type);
    const int64_t il = tt.interleave, g = row / il;
    group.resize((size_t)(il * t.ne[0]));
    tt.dequant(static_cast<const uint8_t*>(t.data) + (size_t)g * il * t.nb[1], group.data(), t.ne[0]);
    std::memcpy(out, group.data() + (row % il) * t.ne[0], sizeof(float) * t.ne[0]);
}

// attn_kv_b for files with only attn_k_b / attn_v_b (the split layout, §8.7), for the expanded
// MLA of prompt batches: per head the rows of transpose(wk_b) then those of wv_b, in their
// common float type, else Q8_0 (as the reference re-creates it for batches of >= 128 tokens).
// Only for layers whose products stay on the CPU (the GPU runs the absorbed form); costs
// H * (d_nope + d_v) * r_kv weights per layer (DeepSeek-V3 Q8_0: 17.8 MB).
void derive_kv_b(Model& m, LayerWeights& l, int layer) {
    const HParams& hp = m.hp;
    const int64_t H = hp.n_head, dn = hp.d_nope, dv = hp.d_v, rkv = hp.kv_lora_rank;
    const Tensor& kb = *l.wk_b;  // [dn, rkv, H]
    const Tensor& vb = *l.wv_b;  // [rkv, dv, H]
    const bool is_float = kb.type == vb.type && (kb.type == quant::T_F32 || kb.type == quant::T_F16 || kb.type == quant::T_BF16);
    const uint32_t type = is_float ? kb.type : quant::T_Q8_0;
    const quant::TypeTraits& tt = *quant::find_type(type);
    if (rkv % tt.block_elems != 0 || !m.cpu->supports_weight_type(type)) return;  // absorbed only
    Tensor* t = owned_tensor(m, "blk." + std::to_string(layer) + ".attn_kv_b.weight(derived)", type, rkv, H * (dn + dv), 1);
    std::vector<float> kr((size_t)(rkv * dn)), row((size_t)rkv), group;
    for (int64_t h = 0; h < H; ++h) {
        for (int64_t c = 0; c < rkv; ++c) dequant_row(kb, h * rkv + c, kr.data() + c * dn, group);
        for (int64_t i = 0; i < dn + dv; ++i) {
            uint8_t* dst = static_cast<uint8_t*>(t->data) + (size_t)(h * (dn + dv) + i) * t->nb[1];
            if (i >= dn && vb.type == type && quant::find_type(vb.type)->interleave == 1) {  // exact copy
                std::memcpy(dst, static_cast<const uint8_t*>(vb.data) + (size_t)(h * dv + i - dn) * vb.nb[1], t->nb[1]);
                continue;
            }
            if (i < dn)
                for (int64_t c = 0; c < rkv; ++c) row[(size_t)c] = kr[(size_t)(c * dn + i)];
            else
                dequant_row(vb, h * dv + i - dn, row.data(), group);
            if (type == quant::T_Q8_0) quant::act_q8_0_encode_row(row.data(), dst, rkv);
            else tt.quantize(row.data(), dst, rkv, nullptr);
        }
    }
    l.wkv_b = t;
    m.device_weight_bytes[0] += t->nb[3];  // made after placement: count it with the CPU's weights here
}

void bind_deepseek2(Model& m, Binder& b) {
    const HParams& hp = m.hp;
    const int64_t E = hp.n_embd, V = hp.n_vocab, H = hp.n_head, dk = hp.d_k, dn = hp.d_nope, dv = hp.d_v,
                  dr = hp.n_rot, rkv = hp.kv_lora_rank, rq = hp.q_lora_rank;
    m.tok_embd = b.require("token_embd.weight", {E, V});
    m.output_norm = b.require("output_norm.weight", {E});
    m.output = b.require("output.weight", {E, V});
    check_matmul_type(m, m.output);
    m.layers.resize(hp.n_layer);
    for (int i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = m.layers[i];
        l.attn_norm = b.require(p + "attn_norm.weight", {E});
        // "lite" is decided from the file itself: no q-LoRA rank and a plain attn_q (§8.1).
        if (rq > 0 && b.info(p + "attn_q_a.weight")) {
            l.wq_a = b.require(p + "attn_q_a.weight", {E, rq});
            l.q_a_norm = b.require(p + "attn_q_a_norm.weight", {rq});
            l.wq_b = b.require(p + "attn_q_b.weight", {rq, H * dk});
        } else if (b.info(p + "attn_q.weight")) {
            l.wq = b.require(p + "attn_q.weight", {E, H * dk});
        } else {
            fail(Status::invalid_file, "layer " + std::to_string(i) + " has neither attn_q nor attn_q_a");
        }
        l.wkv_a_mqa = b.require(p + "attn_kv_a_mqa.weight", {E, rkv + dr});
        l.kv_a_norm = b.require(p + "attn_kv_a_norm.weight", {rkv});
        const gguf::TensorInfo* kb = b.info(p + "attn_k_b.weight");
        if (kb && kb->n_dims == 3) {
            l.wk_b = b.require(p + "attn_k_b.weight", {dn, rkv, H});
            l.wv_b = b.require(p + "attn_v_b.weight", {rkv, dv, H});
        } else if (kb) {
            l.wk_b = as_3d(m, b.require(p + "attn_k_b.weight", {dn, H * rkv}), rkv, H);
            l.wv_b = as_3d(m, b.require(p + "attn_v_b.weight", {rkv, H * dv}), dv, H);
        }
        if (Tensor* kvb = b.optional(p + "attn_kv_b.weight", {rkv, H * (dn + dv)})) {
            if (!l.wk_b) derive_mla_products(m, l, *kvb, p);
            if (m.cpu->supports_weight_type(kvb->type)) l.wkv_b = kvb;
        } else if (!l.wk_b) {
            fail(Status::invalid_file, "layer " + std::to_string(i) + " has neither attn_kv_b nor attn_k_b/attn_v_b");
        }
        l.wo = b.require(p + "attn_output.weight", {H * dv, E});
        l.ffn_norm = b.require(p + "ffn_norm.weight", {E});
        if (i < hp.n_dense_lead || hp.n_expert == 0) {
            l.ffn_gate = b.require(p + "ffn_gate.weight", {E, hp.n_ff});
            l.ffn_up = b.require(p + "ffn_up.weight", {E, hp.n_ff});
            l.ffn_down = b.require(p + "ffn_down.weight", {hp.n_ff, E});
        } else {
            bind_experts(m, b, l, p);
            l.exp_probs_b = b.optional(p + "exp_probs_b.bias", {hp.n_expert});
            if (hp.n_expert_shared > 0) {
                const int64_t S = (int64_t)hp.n_ff_exp * hp.n_expert_shared;
                l.ffn_gate_shexp = b.require(p + "ffn_gate_shexp.weight", {E, S});
                l.ffn_up_shexp = b.require(p + "ffn_up_shexp.weight", {E, S});
                l.ffn_down_shexp = b.require(p + "ffn_down_shexp.weight", {S, E});
            }
        }
        for (Tensor* t : {l.wq, l.wq_a, l.wq_b, l.wkv_a_mqa, l.wk_b, l.wv_b, l.wo, l.ffn_gate, l.ffn_up, l.ffn_down,
                          l.ffn_gate_shexp, l.ffn_up_shexp, l.ffn_down_shexp})
            check_matmul_type(m, t);
        for (Tensor* t : {l.attn_norm, l.q_a_norm, l.kv_a_norm, l.ffn_norm, l.exp_probs_b})
            if (t && t->type != quant::T_F32) fail(Status::unsupported, std::string("tensor '") + t->name + "' must be F32");
    }
    if (m.output_norm->type != quant::T_F32) fail(Status::unsupported, "tensor 'output_norm.weight' must be F32");
}

// How the file's bytes are held (ModelOptions::use_mmap / huge_pages, -1 = auto). A read copy on
// transparent huge pages streams faster in token generation than a mapping on 4 KiB pages (one
// TLB miss per 4 KiB of weights; measured in docs/cpu-speed.md), but costs a full read at load
// and memory the kernel cannot drop, so auto keeps the mapping where its laziness matters.
struct Storage {
    bool map = true, huge = false;
    bool copy_cpu_weights = false;  // mapped for GPU placement / repack: the CPU's weights get a copy later
    std::string why;                // for the placement line
};
// `mapped`: the file opened as a mapping (use_mmap auto), whose header tells whether run-time
// repack will convert some tensor and how many bytes all parts of a split set hold.
Storage load_storage(const gguf::File* mapped, const ModelOptions& opts, const backend::Backend& cpu) {
    Storage st;
    if (opts.use_mmap >= 0) {
        st.map = opts.use_mmap != 0;
    } else {
        // Repacking converts a read copy in place where the interleaved rows take the same room;
        // only a type that grows (Q8_KV) keeps the mapping (its copy would double the memory).
        bool repack_grows_data = false;
        if (opts.repack > 0 && mapped)
            for (const gguf::TensorInfo& ti : mapped->tensors())
                repack_grows_data |= repack_applies(cpu, ti.type, opts.repack == 2) && repack_grows(cpu, ti.type, ti.ne[0]);
        const char* keep = opts.vocab_only                                             ? "vocab-only load"
                           : repack_grows_data                                        ? "repacked weights"
                           : opts.n_gpu_layers > 0 || !opts.tensor_placement.empty() ? "GPU placement"
                           : !opts.numa.empty()                                       ? "NUMA policy"
                                                                                      : nullptr;
        const uint64_t avail = cpu.capabilities().memory_available;
        if (keep) {
            st.why = std::string(" (use_mmap auto: ") + keep + ")";
            // What stays on the CPU (and, with repack, what is not converted, e.g. a Q6_K output)
            // is copied to huge pages after placement / repacking, as a read copy would be.
            st.copy_cpu_weights =
                (std::strcmp(keep, "GPU placement") == 0 || std::strcmp(keep, "repacked weights") == 0) && opts.huge_pages != 0;
        } else if (mapped && avail > 0 && mapped->total_file_bytes() <= avail / 4 * 3) {
            st.map = false;
            st.why = " (use_mmap auto: fits in available memory)";
        } else {
            st.why = " (use_mmap auto: larger than 3/4 of available memory)";
        }
    }
    st.huge = opts.huge_pages < 0 ? !st.map : opts.huge_pages != 0;
    return st;
}

}  // namespace

std::unique_ptr<Model> load_model(const std::string& path, const ModelOptions& opts, const ProgressFn& progress,
                                  const Logger& log, backend::Registry* registry) {
    std::unique_ptr<Model> m;
    // Between steps: cancellation, and a file that changed size under us (a mapping would fault).
    // A read copy takes most of a load: its bytes report progress in [0, 0.7] (and can cancel),
    // the steps after it are mapped into [0.7, 1].
    float lo = 0, span = 1;
    auto check_cancel = [&](float p) {
        if (progress && !progress(lo + span * p)) fail(Status::cancelled, "model load cancelled");
        if (m && m->file) m->file->check_unchanged();
    };
    check_cancel(0.0f);
    m = std::make_unique<Model>();
    m->cpu = backend::make_cpu_backend();
    // use_mmap auto decides from the header (sizes of all parts, what run-time repack converts):
    // map first (cheap: only the header pages are read), then read a copy if that is the choice.
    if (opts.use_mmap < 0 && !opts.vocab_only) m->file = gguf::File::open(path, &type_geometry, true, false);
    const Storage storage = load_storage(m->file.get(), opts, *m->cpu);
    if (!m->file || !storage.map) {
        m->file.reset();
        gguf::File::ReadProgress on_read;
        float shown = 0;  // monotonic: each part of a split set reports its own bytes
        if (!storage.map && progress)
            on_read = [&](uint64_t done, uint64_t total) {
                shown = std::max(shown, 0.7f * (float)((double)done / (double)total));
                if (!progress(shown)) fail(Status::cancelled, "model load cancelled");
            };
        m->file = gguf::File::open(path, &type_geometry, storage.map, storage.huge, on_read);
        if (!storage.map) lo = 0.7f, span = 0.3f;
    }
    check_cancel(0.1f);
    if (opts.vocab_only) {
        m->vocab_only = true;
        m->tokenizer = std::make_unique<tok::Tokenizer>(tok::load_vocab(*m->file));
        m->hp.arch_str = m->file->get_str_or("general.architecture", "");
        m->hp.n_vocab = m->tokenizer->n_vocab();
        check_cancel(1.0f);
        return m;
    }
    m->hp = read_hparams(*m->file);
    m->placement = apply_placement(*m->file, storage.map, PlacementOptions{storage.huge, opts.numa, opts.prefault}, storage.why);
    const gguf::TensorInfo* emb = m->file->find_tensor("token_embd.weight");
    if (!emb) fail(Status::invalid_file, "missing tensor 'token_embd.weight'");
    if (emb->ne[1] > INT32_MAX) fail(Status::invalid_file, "vocabulary too large");
    m->hp.n_vocab = (int32_t)emb->ne[1];

    m->tokenizer = std::make_unique<tok::Tokenizer>(tok::load_vocab(*m->file));
    if (m->tokenizer->n_vocab() != m->hp.n_vocab)
        fail(Status::invalid_file, "tokenizer has " + std::to_string(m->tokenizer->n_vocab()) +
             " tokens but token_embd.weight has " + std::to_string(m->hp.n_vocab) + " rows");
    check_cancel(0.2f);

    Binder binder(*m, opts);
    switch (m->hp.arch) {
        case Arch::llama:
        case Arch::qwen2:
        case Arch::qwen3:
        case Arch::qwen3moe: bind_llama_family(*m, binder); break;
        case Arch::deepseek2: bind_deepseek2(*m, binder); break;
    }
    binder.check_all_used();
    check_cancel(0.8f);
    place_weights(*m, opts, registry, log, check_cancel);
    // Run-time repack after placement: only the weights left on the CPU (a GPU runs plain types).
    // Auto repack converts only a read copy, in place: a mapping stays as it is. With GPU
    // placement the CPU's weights are copied out of the mapping first and auto repack converts
    // that copy (the experts of `-ot exps=CPU` run interleaved, as a CPU-only load's would).
    const bool repack_auto = opts.repack < 0;
    const bool copy_first = storage.copy_cpu_weights && repack_auto;
    auto copy_weights = [&] { m->placement += copy_cpu_weights(*m, [&](float f) { check_cancel(0.99f + 0.01f * f); }); };
    if (copy_first) copy_weights();
    if (opts.repack > 0 || (repack_auto && (!m->file->mapped() || m->cpu_weight_copy))) {
        std::vector<Tensor*> mm{m->output};
        for (auto& l : m->layers)
            for (Tensor* t : {l.wq, l.wk, l.wv, l.wo, l.ffn_gate, l.ffn_up, l.ffn_down, l.wq_a, l.wq_b, l.wkv_a_mqa,
                              l.ffn_gate_exps, l.ffn_up_exps, l.ffn_down_exps, l.ffn_gate_shexp, l.ffn_up_shexp,
                              l.ffn_down_shexp})
                mm.push_back(t);
        if (const int n = repack_weights(*m, mm, opts.repack == 2, repack_auto, log))
            m->placement += "; run-time repack: " + std::to_string(n) + " tensors" + (repack_auto ? " (auto)" : "");
    }
    if (m->hp.arch == Arch::deepseek2)
        for (size_t i = 0; i < m->layers.size(); ++i) {
            LayerWeights& l = m->layers[i];
            if (!l.wkv_b && l.wk_b && l.wv_b && l.wk_b->device == 0 && l.wv_b->device == 0) derive_kv_b(*m, l, (int)i);
        }
    if (m->hp.arch == Arch::deepseek2) repack_mla_heads(*m, opts.repack <= 0, log);
    if (storage.copy_cpu_weights && !copy_first) copy_weights();
    log.log(log_info, "loaded %s: %s, %d layers, %.1f M params, %.1f MiB", path.c_str(), m->hp.arch_str.c_str(),
            m->hp.n_layer, m->n_params / 1e6, m->weight_bytes / 1048576.0);
    check_cancel(1.0f);
    return m;
}

}  // namespace ikllm
