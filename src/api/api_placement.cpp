// C boundary for device placement: per-device queries of a loaded model and the memory plan of
// a model file (docs/placement.md).
#include <algorithm>
#include <cstdlib>

#include "api/api_internal.h"
#include "core/json_escape.h"
#include "api/options.h"
#include "gguf/gguf_file.h"
#include "model/device_placement.h"
#include "model/memory_plan.h"

using namespace ikllm;

namespace {

// Until the loader fills device_names, a model has one device, the CPU, holding every weight.
bool single_cpu(const ikllm_model* m) { return m->m->device_names.empty(); }

}  // namespace

extern "C" {

int32_t ikllm_model_device_count(const ikllm_model* m) {
    if (!m) return 0;
    return single_cpu(m) ? 1 : (int32_t)m->m->device_names.size();
}

const char* ikllm_model_device_name(const ikllm_model* m, int32_t i) {
    if (!m || i < 0 || i >= ikllm_model_device_count(m)) return nullptr;
    return single_cpu(m) ? "CPU" : m->m->device_names[(size_t)i].c_str();
}

uint64_t ikllm_model_device_weight_bytes(const ikllm_model* m, int32_t i) {
    if (!m || i < 0 || i >= ikllm_model_device_count(m)) return 0;
    if (single_cpu(m)) return m->m->weight_bytes;
    const auto& b = m->m->device_weight_bytes;
    return (size_t)i < b.size() ? b[(size_t)i] : 0;
}

ikllm_status ikllm_model_tensor_device(const ikllm_model* m, const char* name, int32_t* out_device) {
    return api::guard([&] {
        IKLLM_REQUIRE(m && name && out_device, "NULL argument");
        const Model& model = *m->m;
        auto it = model.by_name.find(std::string_view(name));
        if (it != model.by_name.end()) {
            const int d = it->second->device;
            *out_device = single_cpu(m) || d < 0 || d >= (int)model.device_names.size() ? 0 : d;
            return;
        }
        // In the file but not bound as a weight (read at load to derive others, or a
        // vocabulary-only load): its bytes stay in host memory.
        if (model.file && model.file->find_tensor(name)) {
            *out_device = 0;
            return;
        }
        fail(Status::not_found, std::string("tensor '") + name + "' not found");
    });
}

const char* ikllm_model_placement_report(const ikllm_model* m) { return m ? m->placement_report.c_str() : ""; }

int32_t ikllm_lib_gpu_count(ikllm_lib* lib) {
    if (!lib) return 0;
    try {
        return lib->backends.gpu_count();
    } catch (...) {
        return 0;
    }
}

const char* ikllm_lib_gpu_status(ikllm_lib* lib) {
    if (!lib) return "";
    try {
        std::call_once(lib->gpu_status_once, [lib] { lib->gpu_status = lib->backends.status(); });
    } catch (...) {
        return "";
    }
    return lib->gpu_status.c_str();
}

ikllm_status ikllm_lib_gpu_info(ikllm_lib* lib, int32_t index, char** out_json) {
    if (out_json) *out_json = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(lib, "lib is NULL");
        IKLLM_REQUIRE(out_json, "out_json is NULL");
        backend::Backend* gpu = lib->backends.gpu(index);
        if (!gpu)
            fail(Status::not_found, "no GPU with index " + std::to_string(index) + " (this library has " +
                 std::to_string(lib->backends.gpu_count()) + ")");
        const backend::Capabilities c = gpu->capabilities();
        auto esc = [](const std::string& v) {
            std::string o;
            json_escape_append(v, o);
            return o;
        };
        const std::string json = "{\"name\": \"" + esc(c.name) + "\", \"description\": \"" +
                                 esc(c.description) + "\", \"compute_capability\": \"" +
                                 std::to_string(c.compute_major) + "." + std::to_string(c.compute_minor) +
                                 "\", \"memory_total\": " + std::to_string(c.memory_total) +
                                 ", \"memory_free\": " + std::to_string(c.memory_free) +
                                 ", \"memory_bandwidth\": " + std::to_string(c.memory_bandwidth) + "}";
        char* p = static_cast<char*>(std::malloc(json.size() + 1));
        if (!p) throw std::bad_alloc();
        std::memcpy(p, json.c_str(), json.size() + 1);
        *out_json = p;
    });
}

ikllm_status ikllm_plan(ikllm_lib* lib, const char* path, const ikllm_options* model_options,
                        const ikllm_options* session_options, uint64_t vram_budget, uint32_t flags, char** out_json) {
    if (out_json) *out_json = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(lib, "lib is NULL");
        IKLLM_REQUIRE(path, "path is NULL");
        IKLLM_REQUIRE(out_json, "out_json is NULL");
        IKLLM_REQUIRE((flags & ~IKLLM_PLAN_AUTO_BUDGET) == 0, "flags must be 0 or IKLLM_PLAN_AUTO_BUDGET");
        IKLLM_REQUIRE(!model_options || model_options->kind == IKLLM_OPTIONS_MODEL,
                      "model_options are not model options");
        IKLLM_REQUIRE(!session_options || session_options->kind == IKLLM_OPTIONS_SESSION,
                      "session_options are not session options");
        const ModelOptions mo = api::model_options(model_options);  // validates the rules
        const SessionOptions so = api::session_options(session_options, 0);
        std::unique_ptr<gguf::File> f = gguf::File::open(path, &type_geometry, true);
        const PlanModel pm = plan_model_from_file(*f);
        PlanRequest req;
        req.n_ctx = so.n_ctx;
        req.n_batch = so.n_batch;
        req.kv_type = so.kv_type;
        req.offload_min_batch = so.offload_min_batch;
        req.n_gpu_layers = mo.n_gpu_layers;
        req.tensor_placement = mo.tensor_placement;
        // This machine's GPUs when it has any, else hypothetical ones (default type support):
        // CUDA0, or one per tensor_split share, so planning works anywhere.
        std::vector<backend::Backend*> gpus;
        req.gpus = available_gpus(&lib->backends, mo.tensor_split, &gpus);
        if (!gpus.empty()) {
            req.gpu_supports_type = [gpus](uint32_t t) {
                for (backend::Backend* g : gpus)
                    if (!g->supports_weight_type(t)) return false;
                return true;
            };
            req.gpu_present = true;
        } else {
            req.gpus.names.clear();
            for (size_t i = 0; i < std::max<size_t>(1, req.gpus.split.size()); ++i)
                req.gpus.names.push_back("CUDA" + std::to_string(i));
        }
        const MemoryPlan plan = plan_memory(pm, req);
        PlacementSuggestion sug;
        const bool suggest = vram_budget > 0 || (flags & IKLLM_PLAN_AUTO_BUDGET);
        if (flags & IKLLM_PLAN_AUTO_BUDGET) {
            // Each GPU's own budget: what is free on it now, less a margin (auto_vram_budget).
            if (gpus.empty())
                fail(Status::invalid_argument, "IKLLM_PLAN_AUTO_BUDGET needs a GPU on this machine (" +
                     lib->backends.status() + "); give vram_budget in bytes instead");
            std::vector<uint64_t> budgets;
            for (backend::Backend* g : gpus) budgets.push_back(auto_vram_budget(g->capabilities().memory_free));
            sug = suggest_placement(pm, req, budgets);
        } else if (suggest) {
            sug = suggest_placement(pm, req, vram_budget);
        }
        const std::string json = plan_json(pm, req, plan, suggest ? &sug : nullptr);
        char* p = static_cast<char*>(std::malloc(json.size() + 1));
        if (!p) throw std::bad_alloc();
        std::memcpy(p, json.c_str(), json.size() + 1);
        *out_json = p;
    });
}

}  // extern "C"
