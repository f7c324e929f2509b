#include "model_card.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "ikllm.h"

namespace chat {

namespace {
std::string meta_value(const ikllm_model* m, const char* key) {
    size_t needed = 0;
    ikllm_status st = ikllm_model_meta_value(m, key, 0, nullptr, 0, &needed);
    if (st != IKLLM_ERR_BUFFER_TOO_SMALL && st != IKLLM_OK) return "";
    std::string v(needed, '\0');
    if (ikllm_model_meta_value(m, key, 0, v.data(), v.size(), &needed) != IKLLM_OK) return "";
    v.resize(needed ? needed - 1 : 0);
    return v;
}
}  // namespace

ModelCard collect_model_card(const ikllm_model* m, const std::string& path) {
    ModelCard c;
    c.path = path;
    c.name = ikllm_model_name(m);
    c.architecture = ikllm_model_architecture(m);
    c.placement = ikllm_model_placement(m);
    c.n_params = ikllm_model_n_params(m);
    c.size_bytes = ikllm_model_size_bytes(m);
    c.n_vocab = ikllm_model_n_vocab(m);
    c.n_ctx_train = ikllm_model_n_ctx_train(m);
    c.n_embd = ikllm_model_n_embd(m);
    c.n_layer = ikllm_model_n_layer(m);
    ikllm_model_kv_bytes_per_token(m, "f16", &c.kv_bytes_per_token_f16);

    std::map<std::string, TensorTypeRow> types;
    c.n_tensors = ikllm_model_tensor_count(m);
    for (int32_t i = 0; i < c.n_tensors; ++i) {
        const char* name;
        int32_t type;
        int64_t ne[4];
        uint64_t bytes;
        if (ikllm_model_tensor_info(m, i, &name, &type, ne, &bytes) != IKLLM_OK) continue;
        const char* tn = ikllm_type_name(type);
        TensorTypeRow& row = types[tn ? tn : "type " + std::to_string(type)];
        row.type = tn ? tn : "type " + std::to_string(type);
        row.count++;
        row.bytes += bytes;
    }
    for (auto& [k, row] : types) c.tensor_types.push_back(row);
    std::sort(c.tensor_types.begin(), c.tensor_types.end(),
              [](const TensorTypeRow& a, const TensorTypeRow& b) { return a.bytes > b.bytes; });

    const int32_t nm = ikllm_model_meta_count(m);
    for (int32_t i = 0; i < nm; ++i) {
        const char* key = ikllm_model_meta_key(m, i);
        if (!key) continue;
        std::string v = meta_value(m, key);
        if (v.size() > 300) v = v.substr(0, 300) + "...";  // templates and long arrays stay readable
        c.meta.emplace_back(key, v);
    }
    const char* tmpl = nullptr;
    c.has_template = ikllm_model_chat_template(m, nullptr, &tmpl) == IKLLM_OK;
    for (int32_t i = 0; i < ikllm_model_chat_template_count(m); ++i)
        if (const char* n = ikllm_model_chat_template_name(m, i)) c.template_names.push_back(n);
    return c;
}

std::string format_bytes(uint64_t b) {
    char buf[32];
    const double d = (double)b;
    if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", d / (1ull << 30));
    else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", d / (1ull << 20));
    else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", d / 1024);
    else std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
    return buf;
}

std::string format_count(uint64_t n) {
    char buf[32];
    const double d = (double)n;
    if (n >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2f B", d / 1e9);
    else if (n >= 1000000ull) std::snprintf(buf, sizeof buf, "%.1f M", d / 1e6);
    else if (n >= 1000ull) std::snprintf(buf, sizeof buf, "%.1f K", d / 1e3);
    else std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)n);
    return buf;
}

}  // namespace chat
