// Counters for GET /metrics (Prometheus text format). One instance, owned by main and shared by
// reference; every field is atomic so HTTP threads and the scheduler update it without locks.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace server {

struct Metrics {
    std::atomic<uint64_t> requests_chat{0}, requests_completion{0}, requests_embedding{0}, requests_other{0};
    std::atomic<uint64_t> responses_2xx{0}, responses_4xx{0}, responses_5xx{0};
    std::atomic<uint64_t> requests_cancelled{0};  // client gone or stopped before the end
    std::atomic<uint64_t> requests_rejected{0};   // queue full or shutting down
    std::atomic<uint64_t> prompt_tokens{0}, prompt_tokens_cached{0}, generated_tokens{0}, embedded_tokens{0};
    std::atomic<int64_t> in_flight{0};  // API requests being answered (health and metrics not counted)
    std::atomic<int64_t> queue_depth{0}, slots_busy{0};
    std::atomic<int64_t> slots_total{0};
    // Time the scheduler spent decoding, split between prompt and generated tokens by their share
    // of each batch (microseconds).
    std::atomic<uint64_t> prompt_us{0}, decode_us{0}, decode_steps{0};
};

// Counts one request in flight for its lifetime (streams: until the stream's end).
class InFlight {
public:
    explicit InFlight(Metrics& m) : m_(m) { m_.in_flight++; }
    ~InFlight() { m_.in_flight--; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

private:
    Metrics& m_;
};

// The exposition text; instance names this server (its --alias).
std::string render_metrics(const Metrics& m, const std::string& instance);

}  // namespace server
