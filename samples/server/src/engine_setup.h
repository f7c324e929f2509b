// Loads the model and creates the sessions from the command line: the generation session (one
// sequence per slot) and, unless disabled, a separate embeddings session. llama-server placement
// flags are mapped to engine options when the engine lists such an option (ikllm_option_info), else
// checked for what this CPU build can honour.
#pragma once
#include <string>

#include "ikllm.h"
#include "server_options.h"

namespace server {

struct Engine {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    ikllm_session* session = nullptr;      // generation, n_seq_max = slots
    ikllm_session* embd_session = nullptr; // embeddings = 1, or NULL
    int n_ctx = 0, n_batch = 0, embd_ctx = 0, embd_seqs = 0;
    std::string model_id;                  // --alias or the file name
    Engine() = default;
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine();
};

// Throws std::runtime_error with a user-facing message on failure.
void setup_engine(const ServerOptions& o, Engine& e);

}  // namespace server
