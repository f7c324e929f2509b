// Command line of ikllm-server, spelled like llama-server's where the meaning is the same.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace server {

struct ServerOptions {
    // model and engine
    std::string model_path, alias;
    int64_t n_ctx = 4096;        // -c: KV cells shared by all slots
    int64_t n_threads = 0;       // -t: 0 = library default
    int64_t n_parallel = 4;      // -np: slots
    int64_t n_batch = 512;       // -b
    int64_t n_gpu_layers = -1;   // -ngl (-1: not given)
    std::vector<std::string> override_tensor;  // -ot REGEX=DEV
    std::string flash_attn;      // -fa [on|off|auto]; "" = not given
    std::string cache_type_k, cache_type_v;
    bool no_mmap = false, repack = false, huge_pages = false;
    std::string numa;
    std::string chat_template_file;  // --chat-template-file
    std::string tool_format;         // --tool-format (output parser format; "" = detect)
    // embeddings
    bool embeddings = true;
    int64_t embd_ctx = 2048;
    std::string pooling;
    // HTTP
    std::string host = "127.0.0.1";
    int64_t port = 8080;
    std::vector<std::string> api_keys;
    int64_t timeout_s = 600;
    int64_t http_threads = 0;    // 0: 2 x parallel + 16
    int64_t max_body = 8 << 20;
    int64_t max_queue = 256;
    int64_t max_prompt_tokens = 0;  // 0: the slot's context - 1
    int64_t n_predict = -1;         // default max_tokens (-1: until the slot's context is full)
    int64_t shutdown_timeout_s = 10;
    std::string static_path;
    bool verbose = false;
};

// Parses argv; on a usage error writes the message to *error and returns false. --help sets *help.
bool parse_server_options(int argc, char** argv, ServerOptions& out, std::string* error, bool* help);
const char* server_usage();

}  // namespace server
