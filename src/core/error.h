// Engine-internal error type. Engine code throws ikllm::Error; the C boundary (src/api)
// catches it and turns it into an ikllm_status plus per-thread message.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ikllm {

// Mirrors the public ikllm_status values (include/ikllm.h); kept numerically identical.
enum class Status : int32_t {
    ok = 0,
    invalid_argument = 1,
    io_error = 2,
    invalid_file = 3,       // corrupt / truncated / inconsistent GGUF
    unsupported = 4,        // valid but not supported (unknown type, architecture)
    out_of_memory = 5,
    cancelled = 6,
    context_full = 7,
    end_of_generation = 8,
    buffer_too_small = 9,
    not_found = 10,
    internal = 11,
    grammar_error = 12,
    template_error = 13,
    incompatible_state = 14,
};

struct Error : std::runtime_error {
    Status status;
    Error(Status s, const std::string& msg) : std::runtime_error(msg), status(s) {}
};

[[noreturn]] inline void fail(Status s, const std::string& msg) { throw Error(s, msg); }

}  // namespace ikllm
