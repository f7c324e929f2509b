// /v1/embeddings on its own session (option embeddings = 1, pooled): inputs are packed into
// decode calls, one sequence each, and the session is cleared after every call. One request at a
// time uses the session (a mutex), concurrently with the generation scheduler.
#pragma once
#include <cstdint>
#include <mutex>
#include <vector>

#include "ikllm.h"
#include "metrics.h"

namespace server {

class Embedder {
public:
    Embedder(ikllm_session* session, int n_ctx, int n_seqs, Metrics& metrics)
        : session_(session), n_ctx_(n_ctx), n_seqs_(n_seqs), metrics_(metrics) {}
    int max_tokens() const { return n_ctx_; }
    // One vector per input; throws ApiError (500) on an engine failure.
    std::vector<std::vector<float>> embed(const std::vector<std::vector<int32_t>>& inputs);

private:
    ikllm_session* session_;
    int n_ctx_, n_seqs_;
    Metrics& metrics_;
    std::mutex mu_;
};

}  // namespace server
