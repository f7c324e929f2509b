// C boundary for session state: save/restore, prompt reuse, context shift.
#include "api/api_internal.h"
#include "api/api_session_access.h"
#include "session/prompt_cache.h"
#include "session/session.h"
#include "session/session_state.h"

using namespace ikllm;

static_assert(IKLLM_ABI_VERSION == kStateAbiVersion, "state files record the ABI version");

namespace {

Session& session_ref(const ikllm_session* s) {
    IKLLM_REQUIRE(s, "session is NULL");
    return *api::session_of(s);
}

void check_seq(const Session& s, int32_t seq) {
    IKLLM_REQUIRE(seq >= 0 && seq < s.options().n_seq_max,
                  "sequence id " + std::to_string(seq) + " out of range [0, " + std::to_string(s.options().n_seq_max) + ")");
}

}  // namespace

extern "C" {

ikllm_status ikllm_session_state_save(const ikllm_session* session, const int32_t* seq_ids, int32_t n_seq_ids,
                                      const ikllm_sampler* sampler, uint32_t flags, void* buf, size_t buf_size,
                                      size_t* needed) {
    return api::guard([&] {
        const Session& s = session_ref(session);
        IKLLM_REQUIRE(needed, "needed is NULL");
        IKLLM_REQUIRE(flags == 0, "flags must be 0");
        IKLLM_REQUIRE(buf || buf_size == 0, "buf is NULL but buf_size is not 0");
        const std::vector<int32_t> seqs = resolve_state_seqs(s, seq_ids, n_seq_ids);
        const Sampler* smp = api::sampler_of(sampler);
        const uint64_t size = state_size(s, seqs, smp);
        if (size > SIZE_MAX) fail(Status::out_of_memory, "session state does not fit in memory");
        *needed = (size_t)size;
        if (buf_size < size)
            fail(Status::buffer_too_small, "session state needs " + std::to_string(size) + " bytes, buffer has " +
                 std::to_string(buf_size));
        MemorySink sink(buf, buf_size);
        save_state(s, seqs, smp, sink);
        if (sink.written() != size) fail(Status::internal, "session state size differs from the computed size");
    });
}

ikllm_status ikllm_session_state_save_file(const ikllm_session* session, const int32_t* seq_ids, int32_t n_seq_ids,
                                           const ikllm_sampler* sampler, uint32_t flags, const char* path) {
    return api::guard([&] {
        const Session& s = session_ref(session);
        IKLLM_REQUIRE(path && *path, "path is NULL or empty");
        IKLLM_REQUIRE(flags == 0, "flags must be 0");
        const std::vector<int32_t> seqs = resolve_state_seqs(s, seq_ids, n_seq_ids);
        AtomicFileSink sink(path);
        save_state(s, seqs, api::sampler_of(sampler), sink);
        sink.commit();
    });
}

ikllm_status ikllm_session_state_load(ikllm_session* session, const void* data, size_t size, ikllm_sampler* sampler,
                                      uint32_t flags) {
    return api::guard([&] {
        Session& s = session_ref(session);
        IKLLM_REQUIRE(data || size == 0, "data is NULL");
        IKLLM_REQUIRE((flags & ~IKLLM_STATE_REPLACE_ALL) == 0, "unknown flags");
        MemorySource src(data, size);
        load_state(s, src, api::sampler_of(sampler), (flags & IKLLM_STATE_REPLACE_ALL) != 0);
    });
}

ikllm_status ikllm_session_state_load_file(ikllm_session* session, const char* path, ikllm_sampler* sampler,
                                           uint32_t flags) {
    return api::guard([&] {
        Session& s = session_ref(session);
        IKLLM_REQUIRE(path && *path, "path is NULL or empty");
        IKLLM_REQUIRE((flags & ~IKLLM_STATE_REPLACE_ALL) == 0, "unknown flags");
        FileSource src(path);
        load_state(s, src, api::sampler_of(sampler), (flags & IKLLM_STATE_REPLACE_ALL) != 0);
    });
}

ikllm_status ikllm_session_seq_tokens(const ikllm_session* session, int32_t seq_id, ikllm_token* tokens,
                                      size_t capacity, size_t* n_tokens) {
    return api::guard([&] {
        const Session& s = session_ref(session);
        IKLLM_REQUIRE(n_tokens, "n_tokens is NULL");
        IKLLM_REQUIRE(tokens || capacity == 0, "tokens is NULL but capacity is not 0");
        check_seq(s, seq_id);
        const std::vector<int32_t> held = seq_tokens(s.kv(), seq_id);
        *n_tokens = held.size();
        if (capacity < held.size())
            fail(Status::buffer_too_small, "sequence holds " + std::to_string(held.size()) + " tokens, capacity is " +
                 std::to_string(capacity));
        std::copy(held.begin(), held.end(), tokens);
    });
}

ikllm_status ikllm_session_prompt_reuse(ikllm_session* session, int32_t seq_id, const ikllm_token* tokens,
                                        int32_t n_tokens, int32_t* out_n_reused) {
    if (out_n_reused) *out_n_reused = 0;
    return api::guard([&] {
        Session& s = session_ref(session);
        IKLLM_REQUIRE(out_n_reused, "out_n_reused is NULL");
        check_seq(s, seq_id);
        *out_n_reused = reuse_prompt(s.kv(), seq_id, tokens, n_tokens);
    });
}

ikllm_status ikllm_session_context_shift(ikllm_session* session, int32_t seq_id, int32_t n_keep, int32_t n_discard) {
    return api::guard([&] { session_ref(session).context_shift(seq_id, n_keep, n_discard); });
}

}  // extern "C"
