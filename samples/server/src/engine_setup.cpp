#include "engine_setup.h"

#include <cstdio>
#include <stdexcept>
#include <strings.h>

namespace server {

namespace {

void log_to_stderr(void*, int32_t level, const char* msg) {
    static const char* const names[] = {"debug", "info", "warn", "error"};
    std::fprintf(stderr, "[%s] %s\n", names[level & 3], msg);
}

void check(ikllm_status st, const std::string& what) {
    if (st != IKLLM_OK)
        throw std::runtime_error(what + ": " + ikllm_last_error() + " [" + ikllm_status_name(st) + "]");
}

// Whether the engine has an option of this kind and name (newer engines may add placement options).
bool engine_has_option(int32_t kind, const char* name) {
    for (int32_t i = 0, n = ikllm_option_count(kind); i < n; ++i) {
        const char* key = nullptr;
        if (ikllm_option_info(kind, i, &key, nullptr, nullptr, nullptr, nullptr, nullptr) == IKLLM_OK && key &&
            std::string(key) == name)
            return true;
    }
    return false;
}

struct OptionsHolder {
    ikllm_options* o = nullptr;
    explicit OptionsHolder(int32_t kind) { check(ikllm_options_create(kind, &o), "options"); }
    ~OptionsHolder() { ikllm_options_free(o); }
    void set(const char* key, const std::string& v, const std::string& flag) {
        check(ikllm_options_set_from_text(o, key, v.c_str()), "option " + flag);
    }
};

// -ngl / -ot / -fa / -ctv: honoured through engine options when they exist, else checked.
void map_placement_flags(const ServerOptions& o, OptionsHolder& model_opts, OptionsHolder& sess) {
    if (o.n_gpu_layers >= 0) {
        if (engine_has_option(IKLLM_OPTIONS_MODEL, "n_gpu_layers"))
            model_opts.set("n_gpu_layers", std::to_string(o.n_gpu_layers), "-ngl");
        else if (o.n_gpu_layers > 0)
            std::fprintf(stderr, "ikllm-server: notice: -ngl %lld ignored: this engine build computes on the CPU\n",
                         (long long)o.n_gpu_layers);
    }
    for (const auto& rule : o.override_tensor) {
        const size_t eq = rule.rfind('=');
        if (eq == std::string::npos || eq == 0) throw std::runtime_error("-ot expects REGEX=DEVICE, got '" + rule + "'");
        if (engine_has_option(IKLLM_OPTIONS_MODEL, "override_tensor")) {
            model_opts.set("override_tensor", rule, "-ot");
        } else if (strcasecmp(rule.substr(eq + 1).c_str(), "CPU") != 0) {
            throw std::runtime_error("-ot " + rule + ": this engine build has only the CPU device");
        }
    }
    if (!o.flash_attn.empty()) {
        if (engine_has_option(IKLLM_OPTIONS_SESSION, "flash_attn"))
            sess.set("flash_attn", o.flash_attn == "off" ? "0" : "1", "-fa");
        else
            std::fprintf(stderr, "ikllm-server: notice: -fa %s: the engine chooses its attention kernel itself\n",
                         o.flash_attn.c_str());
    }
    if (!o.cache_type_k.empty()) sess.set("kv_type", o.cache_type_k, "-ctk");
    if (!o.cache_type_v.empty()) {
        if (engine_has_option(IKLLM_OPTIONS_SESSION, "kv_type_v"))
            sess.set("kv_type_v", o.cache_type_v, "-ctv");
        else if (o.cache_type_v != (o.cache_type_k.empty() ? "f16" : o.cache_type_k))
            throw std::runtime_error("-ctv " + o.cache_type_v + ": this engine uses one KV-cache type; give -ctk " +
                                     o.cache_type_v + " too");
    }
}

std::string file_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Engine::~Engine() {
    ikllm_session_free(embd_session);
    ikllm_session_free(session);
    ikllm_model_free(model);
    ikllm_lib_free(lib);
}

void setup_engine(const ServerOptions& o, Engine& e) {
    check(ikllm_lib_create(0, &e.lib), "library");
    ikllm_lib_set_log(e.lib, log_to_stderr, nullptr, o.verbose ? IKLLM_LOG_INFO : IKLLM_LOG_WARN);
    OptionsHolder mo(IKLLM_OPTIONS_MODEL), so(IKLLM_OPTIONS_SESSION);
    if (o.no_mmap) mo.set("use_mmap", "0", "--no-mmap");
    if (o.repack) mo.set("repack", "1", "-rtr");
    if (o.huge_pages) mo.set("huge_pages", "1", "--huge-pages");
    if (!o.numa.empty()) mo.set("numa", o.numa, "--numa");
    so.set("n_ctx", std::to_string(o.n_ctx), "-c");
    so.set("n_seq_max", std::to_string(o.n_parallel), "-np");
    so.set("n_batch", std::to_string(o.n_batch), "-b");
    if (o.n_threads > 0) so.set("n_threads", std::to_string(o.n_threads), "-t");
    map_placement_flags(o, mo, so);

    check(ikllm_model_load(e.lib, o.model_path.c_str(), mo.o, nullptr, nullptr, nullptr, &e.model),
          "cannot load model '" + o.model_path + "'");
    check(ikllm_session_create(e.model, so.o, &e.session), "session");
    e.n_ctx = ikllm_session_n_ctx(e.session);
    e.n_batch = (int)o.n_batch;
    e.model_id = o.alias.empty() ? file_name(o.model_path) : o.alias;

    if (o.embeddings) {
        // Its own small cache: embedding requests never evict the generation slots' prefixes.
        OptionsHolder eo(IKLLM_OPTIONS_SESSION);
        e.embd_ctx = (int)o.embd_ctx;
        e.embd_seqs = 8;
        eo.set("n_ctx", std::to_string(o.embd_ctx), "--embd-ctx");
        eo.set("n_seq_max", std::to_string(e.embd_seqs), "n_seq_max");
        eo.set("n_batch", std::to_string(o.embd_ctx), "--embd-ctx");
        eo.set("embeddings", "1", "embeddings");
        if (o.n_threads > 0) eo.set("n_threads", std::to_string(o.n_threads), "-t");
        if (!o.cache_type_k.empty()) eo.set("kv_type", o.cache_type_k, "-ctk");
        if (!o.pooling.empty()) eo.set("pooling", o.pooling, "--pooling");
        check(ikllm_session_create(e.model, eo.o, &e.embd_session), "embeddings session");
        if (o.pooling.empty() && ikllm_session_pooling(e.embd_session) == IKLLM_POOLING_NONE) {
            // A generative model names no pooling; mean pooling is the usual choice for it.
            ikllm_session_free(e.embd_session);
            e.embd_session = nullptr;
            eo.set("pooling", "mean", "--pooling");
            check(ikllm_session_create(e.model, eo.o, &e.embd_session), "embeddings session");
            std::fprintf(stderr, "ikllm-server: notice: the model names no embedding pooling; using mean\n");
        }
    }
}

}  // namespace server
