#include "server_options.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>

namespace server {

namespace {

bool to_int(const std::string& s, int64_t& out) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || errno) return false;
    out = v;
    return true;
}

// Keys are read one per line; blank lines and '#' comments are skipped.
bool read_keys(const std::string& path, std::vector<std::string>& keys) {
    std::ifstream f(path);
    if (!f) return false;
    for (std::string line; std::getline(f, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && line[0] != '#') keys.push_back(line);
    }
    return true;
}

}  // namespace

const char* server_usage() {
    return "usage: ikllm-server -m MODEL.gguf [options]\n"
           "model / engine:\n"
           "  -m, --model PATH            GGUF model (first part of a split set)\n"
           "  -a, --alias NAME            model id reported by /v1/models (default: file name)\n"
           "  -c, --ctx-size N            KV-cache cells shared by all slots (default 4096)\n"
           "  -np, --parallel N           slots = requests decoded together (default 4)\n"
           "  -t, --threads N             compute threads (default: library default)\n"
           "  -b, --batch-size N          tokens per decode call (default 512)\n"
           "  -ctk, --cache-type-k T      KV-cache type: f16 (default), bf16, q8_0, f32\n"
           "  -ctv, --cache-type-v T      must equal -ctk (the engine has one KV type)\n"
           "  -ngl, --n-gpu-layers N      accepted for compatibility; this engine build runs on the CPU\n"
           "  -ot, --override-tensor R=D  tensor placement; only CPU exists in this build\n"
           "  -fa, --flash-attn [on|off|auto]  accepted (notice); the engine picks its attention kernel\n"
           "  --no-mmap, -rtr, --huge-pages, --numa POLICY   model loading as `ikllm run`\n"
           "  --chat-template-file F      Jinja chat template (default: the model's, else ChatML)\n"
           "  --tool-format NAME          tool-call syntax for output parsing (default: detected)\n"
           "  --embd-ctx N                context of the embeddings session (default 2048)\n"
           "  --pooling none|mean|cls|last  embeddings pooling (default: the model's, else mean)\n"
           "  --no-embeddings             no /v1/embeddings (saves its KV cache)\n"
           "HTTP:\n"
           "  --host ADDR                 bind address (default 127.0.0.1)\n"
           "  --port N                    port (default 8080; 0 = any free port, printed)\n"
           "  --api-key KEY               required bearer key (repeatable, or comma-separated)\n"
           "  --api-key-file FILE         keys one per line\n"
           "  --timeout S                 socket read/write timeout in seconds (default 600)\n"
           "  --threads-http N            HTTP worker threads (default 2 x parallel + 16)\n"
           "  --max-body BYTES            largest request body (default 8388608; larger: 413)\n"
           "  --max-queue N               requests waiting for a slot before 503 (default 256)\n"
           "  --max-prompt-tokens N       longest prompt (default: the slot's context - 1)\n"
           "  -n, --n-predict N           default max_tokens (default: until the slot's context is full)\n"
           "  --shutdown-timeout S        on SIGTERM/SIGINT, let running requests finish this long (default 10)\n"
           "  --path DIR                  serve static files from DIR (none by default)\n"
           "  -v, --verbose               log engine info messages\n";
}

bool parse_server_options(int argc, char** argv, ServerOptions& o, std::string* error, bool* help) {
    *help = false;
    using Setter = std::function<bool(const std::string&)>;
    auto int_opt = [](int64_t& dst, int64_t lo) {
        return Setter([&dst, lo](const std::string& v) { return to_int(v, dst) && dst >= lo; });
    };
    auto str_opt = [](std::string& dst) { return Setter([&dst](const std::string& v) { dst = v; return true; }); };
    std::map<std::string, Setter> valued = {
        {"-m", str_opt(o.model_path)}, {"--model", str_opt(o.model_path)},
        {"-a", str_opt(o.alias)}, {"--alias", str_opt(o.alias)},
        {"-c", int_opt(o.n_ctx, 1)}, {"--ctx-size", int_opt(o.n_ctx, 1)},
        {"-np", int_opt(o.n_parallel, 1)}, {"--parallel", int_opt(o.n_parallel, 1)},
        {"-t", int_opt(o.n_threads, 0)}, {"--threads", int_opt(o.n_threads, 0)},
        {"-b", int_opt(o.n_batch, 1)}, {"--batch-size", int_opt(o.n_batch, 1)},
        {"-ctk", str_opt(o.cache_type_k)}, {"--cache-type-k", str_opt(o.cache_type_k)},
        {"-ctv", str_opt(o.cache_type_v)}, {"--cache-type-v", str_opt(o.cache_type_v)},
        {"-ngl", int_opt(o.n_gpu_layers, 0)}, {"--n-gpu-layers", int_opt(o.n_gpu_layers, 0)},
        {"--gpu-layers", int_opt(o.n_gpu_layers, 0)},
        {"-ot", Setter([&](const std::string& v) { o.override_tensor.push_back(v); return true; })},
        {"--override-tensor", Setter([&](const std::string& v) { o.override_tensor.push_back(v); return true; })},
        {"--numa", str_opt(o.numa)},
        {"--chat-template-file", str_opt(o.chat_template_file)},
        {"--tool-format", str_opt(o.tool_format)},
        {"--embd-ctx", int_opt(o.embd_ctx, 8)},
        {"--pooling", str_opt(o.pooling)},
        {"--host", str_opt(o.host)},
        {"--port", int_opt(o.port, 0)},
        {"--api-key", Setter([&](const std::string& v) {
             size_t a = 0;
             for (size_t b; (b = v.find(',', a)) != std::string::npos; a = b + 1)
                 if (b > a) o.api_keys.push_back(v.substr(a, b - a));
             if (a < v.size()) o.api_keys.push_back(v.substr(a));
             return true;
         })},
        {"--api-key-file", Setter([&](const std::string& v) { return read_keys(v, o.api_keys); })},
        {"--timeout", int_opt(o.timeout_s, 1)}, {"-to", int_opt(o.timeout_s, 1)},
        {"--threads-http", int_opt(o.http_threads, 1)},
        {"--max-body", int_opt(o.max_body, 1024)},
        {"--max-queue", int_opt(o.max_queue, 0)},
        {"--max-prompt-tokens", int_opt(o.max_prompt_tokens, 1)},
        {"-n", int_opt(o.n_predict, -1)}, {"--n-predict", int_opt(o.n_predict, -1)},
        {"--shutdown-timeout", int_opt(o.shutdown_timeout_s, 0)},
        {"--path", str_opt(o.static_path)},
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            *help = true;
            return true;
        } else if (a == "--no-mmap") {
            o.no_mmap = true;
        } else if (a == "-rtr" || a == "--run-time-repack") {
            o.repack = true;
        } else if (a == "--huge-pages") {
            o.huge_pages = true;
        } else if (a == "--no-embeddings") {
            o.embeddings = false;
        } else if (a == "--embeddings" || a == "--embedding") {
            o.embeddings = true;
        } else if (a == "-v" || a == "--verbose") {
            o.verbose = true;
        } else if (a == "-fa" || a == "--flash-attn") {
            // Older llama-server: a bare flag; newer: on|off|auto.
            o.flash_attn = "on";
            if (i + 1 < argc && (std::string(argv[i + 1]) == "on" || std::string(argv[i + 1]) == "off" ||
                                 std::string(argv[i + 1]) == "auto"))
                o.flash_attn = argv[++i];
        } else if (auto it = valued.find(a); it != valued.end()) {
            if (i + 1 >= argc) {
                *error = "option " + a + " needs a value";
                return false;
            }
            const std::string v = argv[++i];
            if (!it->second(v)) {
                *error = "bad value '" + v + "' for " + a;
                return false;
            }
        } else {
            *error = "unknown option '" + a + "' (see --help)";
            return false;
        }
    }
    if (o.model_path.empty()) {
        *error = "missing -m MODEL";
        return false;
    }
    if (o.port > 65535) {
        *error = "--port must be at most 65535";
        return false;
    }
    return true;
}

}  // namespace server
