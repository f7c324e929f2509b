// Fuzz target: the session-state loader (ikllm_session_state_load: header, model fingerprint,
// cell table, K/V rows, sampler state, checksum). A valid state of the refdata llama model is made
// once (two sequences, a sampler with history); each input then either replaces it (first byte
// even) or patches it: byte 1..4 = offset, the rest overwrites the state from there, and the
// first byte's bit 1 also truncates it at the end of the patch (so the checksum is bypassed only
// where the loader must catch the damage itself). Properties: only hostile-input statuses come
// back; a failed load leaves the session as it was (same positions); the session decodes after
// every successful load (and after one failed load in eight).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace ikllm::fuzz::state_target {

struct Fixture {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    ikllm_session* session = nullptr;
    ikllm_sampler* sampler = nullptr;
    std::vector<uint8_t> state;
    bool ok = false;  // the refdata model is needed; without it every input is a no-op
    Fixture() {
        std::string path = IKLLM_SHARED_DIR;  // appended, not operator+ (GCC 12 -Warray-bounds false positive)
        path += "/refdata/models/llama-tiny-f16.gguf";
        ikllm_lib_create(0, &lib);
        ikllm_lib_set_default_threads(lib, 1);
        if (ikllm_model_load(lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &model) != IKLLM_OK) {
            std::fprintf(stderr, "state_load_fuzz: %s not found: nothing to fuzz\n", path.c_str());
            return;
        }
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
        ikllm_options_set_int(o, "n_ctx", 32);
        ikllm_options_set_int(o, "n_seq_max", 2);
        ikllm_session_create(model, o, &session);
        ikllm_options_free(o);
        ikllm_sampler_create(model, nullptr, &sampler);
        const ikllm_token toks[6] = {1, 100, 200, 300, 400, 500};
        const int32_t seqs[6] = {0, 0, 0, 1, 1, 1};
        ikllm_session_decode(session, toks, nullptr, seqs, nullptr, 6, 0);
        ikllm_sampler_accept(sampler, toks, 6);
        size_t needed = 0;
        ikllm_session_state_save(session, nullptr, 0, sampler, 0, nullptr, 0, &needed);
        state.resize(needed);
        IKLLM_FUZZ_CHECK(ikllm_session_state_save(session, nullptr, 0, sampler, 0, state.data(), state.size(),
                                                  &needed) == IKLLM_OK, "seed state");
        ok = true;
    }
    ~Fixture() {
        ikllm_sampler_free(sampler);
        ikllm_session_free(session);
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

bool expected(ikllm_status s) {
    return s == IKLLM_ERR_INVALID_FILE || s == IKLLM_ERR_INCOMPATIBLE_STATE || s == IKLLM_ERR_INVALID_ARGUMENT ||
           s == IKLLM_ERR_OUT_OF_MEMORY || s == IKLLM_CONTEXT_FULL || s == IKLLM_ERR_UNSUPPORTED;
}

// Back to the seed state for the next input.
int reload_seed(Fixture& f) {
    IKLLM_FUZZ_CHECK(ikllm_session_state_load(f.session, f.state.data(), f.state.size(), f.sampler,
                                              IKLLM_STATE_REPLACE_ALL) == IKLLM_OK, "seed state reloads");
    return 0;
}

int run(const uint8_t* data, size_t size) {
    Fixture& f = fixture();
    if (!f.ok) return 0;
    std::vector<uint8_t> blob;
    if (size == 0 || (data[0] & 1) == 0) {
        blob.assign(data + (size ? 1 : 0), data + size);
    } else {
        blob = f.state;
        uint32_t off = 0;
        if (size >= 5) std::memcpy(&off, data + 1, 4);
        const uint8_t* patch = data + (size >= 5 ? 5 : size);
        const size_t n = size - (size_t)(patch - data);
        off %= (uint32_t)blob.size() + 1;
        if (off + n > blob.size()) blob.resize(off + n);
        std::memcpy(blob.data() + off, patch, n);
        if (data[0] & 2) blob.resize(off + n);
    }
    const uint32_t flags = size > 1 && (data[size - 1] & 1) ? IKLLM_STATE_REPLACE_ALL : 0;
    const int32_t before0 = ikllm_session_seq_pos_max(f.session, 0), before1 = ikllm_session_seq_pos_max(f.session, 1);
    const ikllm_status st = ikllm_session_state_load(f.session, blob.data(), blob.size(), f.sampler, flags);
    if (st != IKLLM_OK) {
        if (!expected(st)) std::fprintf(stderr, "unexpected %s: %s\n", ikllm_status_name(st), ikllm_last_error());
        IKLLM_FUZZ_CHECK(expected(st), "hostile states give a hostile-input status");
        IKLLM_FUZZ_CHECK(ikllm_session_seq_pos_max(f.session, 0) == before0 &&
                         ikllm_session_seq_pos_max(f.session, 1) == before1, "a failed load changes nothing");
    }
    // After a load the session still decodes (a free cell permitting) and samples. A failed load
    // was already checked to change nothing, so only one input in eight decodes then: the decode
    // (a 32k-row output matmul under ASan) was most of an execution's time.
    if (st != IKLLM_OK && size % 8 != 0) return reload_seed(f);
    const ikllm_token t = 7;
    const int32_t seq = 0;
    const ikllm_status d = ikllm_session_decode(f.session, &t, nullptr, &seq, nullptr, 1, 0);
    IKLLM_FUZZ_CHECK(d == IKLLM_OK || d == IKLLM_CONTEXT_FULL || d == IKLLM_ERR_INVALID_ARGUMENT, "decode after load");
    if (d == IKLLM_OK) {
        ikllm_token next = -1;
        IKLLM_FUZZ_CHECK(ikllm_sampler_sample(f.sampler, f.session, -1, &next) == IKLLM_OK, "sample after load");
    }
    return reload_seed(f);
}

}  // namespace ikllm::fuzz::state_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::state_target::run(data, size);
}
#endif
