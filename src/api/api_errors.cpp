// Per-thread error record, version queries and ikllm_free.
#include <cstdlib>
#include <cstring>

#include "api/api_internal.h"

namespace ikllm::api {
namespace {
struct ErrorRecord {
    Status status = Status::ok;
    std::string message;
    std::string tensor;
    uint64_t offset = UINT64_MAX;
    uint64_t bytes_needed = UINT64_MAX;
};
thread_local ErrorRecord t_error;
}  // namespace

void set_error(Status s, const std::string& msg) {
    t_error.status = s;
    t_error.message = msg;
    // Detail parsed from the engine's message conventions ("tensor 'x'", "at offset 0x..").
    t_error.tensor.clear();
    t_error.offset = UINT64_MAX;
    t_error.bytes_needed = UINT64_MAX;
    if (auto p = msg.find("tensor '"); p != std::string::npos) {
        auto e = msg.find('\'', p + 8);
        if (e != std::string::npos) t_error.tensor = msg.substr(p + 8, e - p - 8);
    }
    if (auto p = msg.find("at offset 0x"); p != std::string::npos)
        t_error.offset = std::strtoull(msg.c_str() + p + 10, nullptr, 16);
    if (s == Status::out_of_memory)  // "... needs N bytes ..."
        if (auto p = msg.find(" needs "); p != std::string::npos) {
            char* end = nullptr;
            const uint64_t n = std::strtoull(msg.c_str() + p + 7, &end, 10);
            if (end && std::strncmp(end, " bytes", 6) == 0) t_error.bytes_needed = n;
        }
}
void clear_error() { t_error = ErrorRecord(); }

void copy_out(const std::string& s, char* buf, size_t buf_size, size_t* needed) {
    if (needed) *needed = s.size() + 1;
    if (!buf || buf_size < s.size() + 1) {
        if (buf && buf_size > 0) buf[0] = '\0';
        throw Error(Status::buffer_too_small, "buffer of " + std::to_string(buf_size) + " bytes is too small; " +
                    std::to_string(s.size() + 1) + " needed");
    }
    std::memcpy(buf, s.data(), s.size());
    buf[s.size()] = '\0';
}

const std::string& last_message() { return t_error.message; }
Status last_status() { return t_error.status; }
const std::string& last_tensor() { return t_error.tensor; }
uint64_t last_offset() { return t_error.offset; }
uint64_t last_bytes() { return t_error.bytes_needed; }
}  // namespace ikllm::api

using namespace ikllm;

extern "C" {

int32_t ikllm_version_number(void) { return IKLLM_VERSION_NUMBER; }
int32_t ikllm_abi_version(void) { return IKLLM_ABI_VERSION; }
const char* ikllm_version_string(void) { return "0.1.0"; }

const char* ikllm_status_name(ikllm_status s) {
    switch (s) {
        case IKLLM_OK: return "IKLLM_OK";
        case IKLLM_ERR_INVALID_ARGUMENT: return "IKLLM_ERR_INVALID_ARGUMENT";
        case IKLLM_ERR_IO: return "IKLLM_ERR_IO";
        case IKLLM_ERR_INVALID_FILE: return "IKLLM_ERR_INVALID_FILE";
        case IKLLM_ERR_UNSUPPORTED: return "IKLLM_ERR_UNSUPPORTED";
        case IKLLM_ERR_OUT_OF_MEMORY: return "IKLLM_ERR_OUT_OF_MEMORY";
        case IKLLM_CANCELLED: return "IKLLM_CANCELLED";
        case IKLLM_CONTEXT_FULL: return "IKLLM_CONTEXT_FULL";
        case IKLLM_END_OF_GENERATION: return "IKLLM_END_OF_GENERATION";
        case IKLLM_ERR_BUFFER_TOO_SMALL: return "IKLLM_ERR_BUFFER_TOO_SMALL";
        case IKLLM_ERR_NOT_FOUND: return "IKLLM_ERR_NOT_FOUND";
        case IKLLM_ERR_INTERNAL: return "IKLLM_ERR_INTERNAL";
        case IKLLM_ERR_GRAMMAR: return "IKLLM_ERR_GRAMMAR";
        case IKLLM_ERR_TEMPLATE: return "IKLLM_ERR_TEMPLATE";
        case IKLLM_ERR_INCOMPATIBLE_STATE: return "IKLLM_ERR_INCOMPATIBLE_STATE";
    }
    return "IKLLM_UNKNOWN_STATUS";
}

const char* ikllm_last_error(void) { return api::last_message().c_str(); }
ikllm_status ikllm_last_error_status(void) { return (ikllm_status)api::last_status(); }
ikllm_status ikllm_last_error_copy(char* buf, size_t buf_size, size_t* needed) {
    const std::string msg = api::last_message();  // copy: a failure below would overwrite it
    return api::guard([&] { api::copy_out(msg, buf, buf_size, needed); });
}
const char* ikllm_last_error_tensor(void) { return api::last_tensor().c_str(); }
uint64_t ikllm_last_error_offset(void) { return api::last_offset(); }
uint64_t ikllm_last_error_bytes_needed(void) { return api::last_bytes(); }

void ikllm_free(void* ptr) { std::free(ptr); }

ikllm_status ikllm_lib_create(uint32_t flags, ikllm_lib** out_lib) {
    if (out_lib) *out_lib = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(out_lib, "out_lib is NULL");
        IKLLM_REQUIRE(flags == 0, "flags must be 0");
        *out_lib = new ikllm_lib();
    });
}
void ikllm_lib_free(ikllm_lib* lib) {
    if (lib) api::release(lib);
}
ikllm_status ikllm_lib_set_log(ikllm_lib* lib, ikllm_log_fn fn, void* user_data, int32_t min_level) {
    return api::guard([&] {
        IKLLM_REQUIRE(lib, "lib is NULL");
        IKLLM_REQUIRE(min_level >= IKLLM_LOG_DEBUG && min_level <= IKLLM_LOG_ERROR, "min_level out of range");
        lib->log.set(fn, user_data, min_level);
    });
}
ikllm_status ikllm_lib_set_default_threads(ikllm_lib* lib, int32_t n_threads) {
    return api::guard([&] {
        IKLLM_REQUIRE(lib, "lib is NULL");
        IKLLM_REQUIRE(n_threads >= 0 && n_threads <= 1024, "n_threads must be in [0, 1024]");
        lib->default_threads = n_threads;
    });
}

}  // extern "C"
