#include "embedder.h"

#include <string>

#include "api_error.h"

namespace server {

std::vector<std::vector<float>> Embedder::embed(const std::vector<std::vector<int32_t>>& inputs) {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<std::vector<float>> out;
    size_t next = 0;
    while (next < inputs.size()) {
        // Pack as many inputs as fit the cache and the sequence count into one decode.
        std::vector<int32_t> tokens, seqs;
        size_t first = next;
        while (next < inputs.size() && (int)(next - first) < n_seqs_ &&
               tokens.size() + inputs[next].size() <= (size_t)n_ctx_) {
            for (int32_t t : inputs[next]) {
                tokens.push_back(t);
                seqs.push_back((int32_t)(next - first));
            }
            ++next;
        }
        ikllm_session_clear(session_);
        std::vector<int32_t> want(tokens.size(), 0);  // no LM head: only hidden states are needed
        ikllm_status st =
            ikllm_session_decode(session_, tokens.data(), nullptr, seqs.data(), want.data(), (int32_t)tokens.size(), 0);
        if (st != IKLLM_OK) throw ApiError(500, "server_error", std::string("embedding decode: ") + ikllm_last_error());
        for (size_t k = first; k < next; ++k) {
            const float* e = nullptr;
            int32_t n = 0;
            st = ikllm_session_embeddings(session_, (int32_t)(k - first), &e, &n);
            if (st != IKLLM_OK) throw ApiError(500, "server_error", std::string("embedding: ") + ikllm_last_error());
            out.emplace_back(e, e + n);
        }
        metrics_.embedded_tokens += tokens.size();
    }
    ikllm_session_clear(session_);
    return out;
}

}  // namespace server
