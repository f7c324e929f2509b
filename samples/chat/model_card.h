// What the app shows about a loaded model, collected once on the worker thread after the load so the
// UI never touches the model handle.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

struct ikllm_model;

namespace chat {

struct TensorTypeRow {
    std::string type;
    int count = 0;
    uint64_t bytes = 0;
};

struct ModelCard {
    std::string path, name, architecture, placement;
    uint64_t n_params = 0, size_bytes = 0;
    int32_t n_vocab = 0, n_ctx_train = 0, n_embd = 0, n_layer = 0, n_tensors = 0;
    uint64_t kv_bytes_per_token_f16 = 0;
    std::vector<TensorTypeRow> tensor_types;  // most bytes first
    std::vector<std::pair<std::string, std::string>> meta;  // key -> value (arrays abbreviated)
    bool has_template = false;
    std::vector<std::string> template_names;  // named variants (tool_use, rag, ...)
};

ModelCard collect_model_card(const ikllm_model* model, const std::string& path);

// "1.2 GiB", "350 MiB", ...
std::string format_bytes(uint64_t bytes);
// "7.24 B", "15.2 M", ...
std::string format_count(uint64_t n);

}  // namespace chat
