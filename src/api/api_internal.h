// Shared pieces of the C boundary: handle structs, the per-thread error record, and `guard`,
// which runs engine code and turns every exception into a status + message.
#pragma once
#include <cstring>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "ikllm.h"
#include "model/model.h"
#include "registry.h"

namespace ikllm::api {

void set_error(Status s, const std::string& msg);
void clear_error();

template <typename F>
ikllm_status guard(F&& f) noexcept {
    try {
        f();
        return IKLLM_OK;
    } catch (const Error& e) {
        set_error(e.status, e.what());
        return (ikllm_status)e.status;
    } catch (const std::bad_alloc& e) {
        // A subclass says what did not fit (the CUDA plug-in's device temporaries).
        set_error(Status::out_of_memory, typeid(e) == typeid(std::bad_alloc) ? "out of memory" : e.what());
        return IKLLM_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_error(Status::internal, std::string("internal error: ") + e.what());
        return IKLLM_ERR_INTERNAL;
    } catch (...) {
        set_error(Status::internal, "internal error: unknown exception");
        return IKLLM_ERR_INTERNAL;
    }
}

#define IKLLM_REQUIRE(cond, msg) \
    do { if (!(cond)) ::ikllm::fail(::ikllm::Status::invalid_argument, msg); } while (0)

// Writes text into a caller buffer following the header's buffer convention.
void copy_out(const std::string& s, char* buf, size_t buf_size, size_t* needed);

// Option values as stored on an ikllm_options object.
struct OptionValue {
    int32_t type = IKLLM_OPTION_INT;
    int64_t i = 0;
    double f = 0;
    std::string s;
};

// Model lifetime: objects that keep a model pointer retain it; the last release deletes it.
const ikllm_model* retain(const ikllm_model* m);
void release(const ikllm_model* m);
void release(ikllm_lib* lib);

}  // namespace ikllm::api

struct ikllm_lib {
    ikllm::Logger log;
    int32_t default_threads = 0;
    // The caller's handle plus one per model loaded through it (models log through it).
    std::atomic<int32_t> refs{1};
    // CPU built in; GPUs from the CUDA plug-in, looked for on first use.
    ikllm::backend::Registry backends;
    std::once_flag gpu_status_once;
    std::string gpu_status;  // ikllm_lib_gpu_status's text (made once)
};

struct ikllm_options {
    int32_t kind = 0;
    std::map<std::string, ikllm::api::OptionValue, std::less<>> values;
};

namespace ikllm::grammar { struct TokenTrie; }

struct ikllm_model {
    ikllm_lib* lib = nullptr;  // retained while the model lives
    // The caller's handle plus one per session/detokenizer made from it: ikllm_model_free only
    // drops the caller's reference, so objects that outlive it keep working (documented in ikllm.h).
    mutable std::atomic<int32_t> refs{1};
    std::unique_ptr<ikllm::Model> m;
    // Model::placement_report joined with '\n' (ikllm_model_placement_report), set at load.
    std::string placement_report;
    // Vocabulary trie for grammar sampling, built on first use and shared by all samplers.
    mutable std::once_flag grammar_vocab_once;
    mutable std::shared_ptr<const ikllm::grammar::TokenTrie> grammar_vocab;
};
