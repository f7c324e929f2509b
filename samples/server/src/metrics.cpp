#include "metrics.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace server {

namespace {
uint64_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    uint64_t size = 0, rss = 0;
    f >> size >> rss;
    return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

void metric(std::string& out, const char* name, const char* type, const char* help, double value,
            const std::string& labels = "") {
    char buf[512];
    std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n%s%s %.17g\n", name, help, name, type, name,
                  labels.c_str(), value);
    out += buf;
}
}  // namespace

std::string render_metrics(const Metrics& m, const std::string& instance) {
    std::string out;
    const std::string l = "{instance=\"" + instance + "\"}";
    auto requests = [&](const char* ep, uint64_t v) {
        out += "ikllm_requests_total{endpoint=\"" + std::string(ep) + "\"} " + std::to_string(v) + "\n";
    };
    out += "# HELP ikllm_requests_total Requests received, by endpoint\n# TYPE ikllm_requests_total counter\n";
    requests("chat_completions", m.requests_chat);
    requests("completions", m.requests_completion);
    requests("embeddings", m.requests_embedding);
    requests("other", m.requests_other);
    out += "# HELP ikllm_responses_total Responses sent, by status class\n# TYPE ikllm_responses_total counter\n";
    out += "ikllm_responses_total{class=\"2xx\"} " + std::to_string(m.responses_2xx) + "\n";
    out += "ikllm_responses_total{class=\"4xx\"} " + std::to_string(m.responses_4xx) + "\n";
    out += "ikllm_responses_total{class=\"5xx\"} " + std::to_string(m.responses_5xx) + "\n";
    metric(out, "ikllm_requests_cancelled_total", "counter", "Generations stopped because the client left",
           (double)m.requests_cancelled);
    metric(out, "ikllm_requests_rejected_total", "counter", "Requests refused because the queue was full or the server stopping",
           (double)m.requests_rejected);
    metric(out, "ikllm_prompt_tokens_total", "counter", "Prompt tokens of generation requests", (double)m.prompt_tokens);
    metric(out, "ikllm_prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache",
           (double)m.prompt_tokens_cached);
    metric(out, "ikllm_generated_tokens_total", "counter", "Tokens generated", (double)m.generated_tokens);
    metric(out, "ikllm_embedded_tokens_total", "counter", "Tokens embedded", (double)m.embedded_tokens);
    metric(out, "ikllm_requests_in_flight", "gauge", "API requests being answered (streams until their end)", (double)m.in_flight);
    metric(out, "ikllm_queue_depth", "gauge", "Generation requests waiting for a slot", (double)m.queue_depth);
    metric(out, "ikllm_slots_busy", "gauge", "Slots running a request", (double)m.slots_busy);
    metric(out, "ikllm_slots_total", "gauge", "Slots (parallel sequences)", (double)m.slots_total);
    const double pu = (double)m.prompt_us, du = (double)m.decode_us;
    const double ptoks = (double)(m.prompt_tokens - m.prompt_tokens_cached);
    metric(out, "ikllm_prompt_tokens_per_second", "gauge", "Prompt tokens processed per second of prompt work",
           pu > 0 ? ptoks * 1e6 / pu : 0);
    metric(out, "ikllm_decode_tokens_per_second", "gauge", "Tokens generated per second of decode work",
           du > 0 ? (double)m.generated_tokens * 1e6 / du : 0);
    metric(out, "ikllm_decode_steps_total", "counter", "Batched decode calls", (double)m.decode_steps);
    metric(out, "process_resident_memory_bytes", "gauge", "Resident memory", (double)resident_bytes());
    metric(out, "ikllm_info", "gauge", "Constant 1, labelled with the instance (--alias)", 1, l);
    return out;
}

}  // namespace server
