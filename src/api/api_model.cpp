// C boundary for models: load/free, metadata and tensor queries.
#include "api/api_internal.h"
#include "core/cancel_flag.h"
#include "quant/kv_codec.h"
#include "api/options.h"
#include "quant/type_traits.h"
#include "session/kv_cache.h"
#include "tokenizer/tokenizer.h"

using namespace ikllm;

const ikllm_model* ikllm::api::retain(const ikllm_model* m) {
    m->refs.fetch_add(1, std::memory_order_relaxed);
    return m;
}
void ikllm::api::release(const ikllm_model* m) {
    if (m->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    ikllm_lib* lib = m->lib;
    delete m;
    if (lib) release(lib);
}
void ikllm::api::release(ikllm_lib* lib) {
    if (lib->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete lib;
}

extern "C" {

ikllm_status ikllm_model_load(ikllm_lib* lib, const char* path, const ikllm_options* options,
                              ikllm_progress_fn progress, void* user, const volatile int32_t* cancel,
                              ikllm_model** out) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(lib, "lib is NULL");
        IKLLM_REQUIRE(path, "path is NULL");
        IKLLM_REQUIRE(out, "out_model is NULL");
        IKLLM_REQUIRE(!options || options->kind == IKLLM_OPTIONS_MODEL, "options are not model options");
        ProgressFn pf = [&](float p) {
            if (cancel_requested(cancel)) return false;
            if (progress && progress(user, p) != 0) return false;
            return true;
        };
        auto handle = std::make_unique<ikllm_model>();
        handle->m = load_model(path, api::model_options(options), pf, lib->log, &lib->backends);
        for (const std::string& line : handle->m->placement_report)
            handle->placement_report += (handle->placement_report.empty() ? "" : "\n") + line;
        lib->refs.fetch_add(1, std::memory_order_relaxed);
        handle->lib = lib;
        *out = handle.release();
    });
}

void ikllm_model_free(ikllm_model* model) {
    if (model) api::release(model);
}

const char* ikllm_model_architecture(const ikllm_model* m) { return m ? m->m->hp.arch_str.c_str() : ""; }
const char* ikllm_model_name(const ikllm_model* m) {
    if (!m) return "";
    const gguf::Value* v = m->m->file->find("general.name");
    return v && v->type == gguf::ValueType::string ? v->s.c_str() : "";
}
uint64_t ikllm_model_n_params(const ikllm_model* m) { return m ? m->m->n_params : 0; }
uint64_t ikllm_model_size_bytes(const ikllm_model* m) { return m ? m->m->weight_bytes : 0; }
int32_t ikllm_model_n_vocab(const ikllm_model* m) { return m ? m->m->hp.n_vocab : 0; }
int32_t ikllm_model_n_ctx_train(const ikllm_model* m) { return m ? m->m->hp.n_ctx_train : 0; }
int32_t ikllm_model_n_embd(const ikllm_model* m) { return m ? m->m->hp.n_embd : 0; }
int32_t ikllm_model_n_layer(const ikllm_model* m) { return m ? m->m->hp.n_layer : 0; }
const char* ikllm_model_placement(const ikllm_model* m) { return m ? m->m->placement.c_str() : ""; }

ikllm_status ikllm_model_kv_bytes_per_token(const ikllm_model* m, const char* kv_type, uint64_t* out) {
    return api::guard([&] {
        IKLLM_REQUIRE(m && kv_type && out, "NULL argument");
        bool ok = false;
        const uint32_t t = quant::kv_type_from_name(kv_type, &ok);
        IKLLM_REQUIRE(ok, "kv_type must be f16, bf16, q8_0 or f32");
        const HParams& hp = m->m->hp;
        if (hp.kv_lora_rank > 0)  // MLA: one latent + rope row per token and layer
            *out = (uint64_t)hp.n_layer * quant::kv_row_bytes(t, (int64_t)hp.kv_lora_rank + hp.n_rot);
        else
            *out = (uint64_t)hp.n_layer * hp.n_head_kv * (quant::kv_row_bytes(t, hp.d_k) + quant::kv_row_bytes(t, hp.d_v));
    });
}

int32_t ikllm_model_meta_count(const ikllm_model* m) { return m ? (int32_t)m->m->file->kvs().size() : 0; }
const char* ikllm_model_meta_key(const ikllm_model* m, int32_t i) {
    if (!m || i < 0 || i >= (int32_t)m->m->file->kvs().size()) return nullptr;
    return m->m->file->kvs()[i].first.c_str();
}
ikllm_status ikllm_model_meta_value(const ikllm_model* m, const char* key, uint32_t flags, char* buf,
                                    size_t buf_size, size_t* needed) {
    return api::guard([&] {
        IKLLM_REQUIRE(m && key, "NULL argument");
        const gguf::Value* v = m->m->file->find(key);
        if (!v) fail(Status::not_found, std::string("metadata key '") + key + "' not found");
        api::copy_out(v->to_string((flags & IKLLM_META_FULL) ? SIZE_MAX : 8), buf, buf_size, needed);
    });
}

int32_t ikllm_model_tensor_count(const ikllm_model* m) { return m ? (int32_t)m->m->file->tensors().size() : 0; }
ikllm_status ikllm_model_tensor_info(const ikllm_model* m, int32_t i, const char** name, int32_t* type, int64_t* ne4,
                                     uint64_t* bytes) {
    return api::guard([&] {
        IKLLM_REQUIRE(m, "model is NULL");
        const auto& ts = m->m->file->tensors();
        IKLLM_REQUIRE(i >= 0 && i < (int32_t)ts.size(), "tensor index out of range");
        const gguf::TensorInfo& t = ts[i];
        if (name) *name = t.name.c_str();
        if (type) *type = (int32_t)t.type;
        if (ne4)
            for (int d = 0; d < 4; ++d) ne4[d] = t.ne[d];
        if (bytes) *bytes = t.nbytes;
    });
}

const char* ikllm_type_name(int32_t type) {
    const quant::TypeTraits* t = type >= 0 ? quant::find_type((uint32_t)type) : nullptr;
    return t ? t->name : nullptr;
}

}  // extern "C"

extern "C" ikllm_status ikllm_model_tensor_dequantize(const ikllm_model* m, const char* name, float* out,
                                                      size_t capacity, size_t* needed) {
    return api::guard([&] {
        IKLLM_REQUIRE(m && name, "NULL argument");
        const gguf::TensorInfo* ti = m->m->file->find_tensor(name);
        if (!ti) fail(Status::not_found, std::string("tensor '") + name + "' not found");
        const quant::TypeTraits* tt = quant::find_type(ti->type);
        if (!tt || !tt->dequant)
            fail(Status::unsupported, std::string("tensor '") + name + "' has a type this build cannot decode");
        const size_t n = (size_t)ti->n_elements();
        if (needed) *needed = n;
        if (!out || capacity < n)
            fail(Status::buffer_too_small, "output needs " + std::to_string(n) + " floats");
        const size_t row = quant::row_bytes(*tt, ti->ne[0]);
        const int64_t group = tt->interleave, rows = ti->n_rows();
        for (int64_t r = 0; r < rows; r += group)
            tt->dequant(ti->data + (size_t)r * row, out + (size_t)r * ti->ne[0], ti->ne[0]);
    });
}
