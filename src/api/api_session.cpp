// C boundary for sessions and samplers.
#include "api/api_internal.h"
#include "api/api_session_access.h"
#include "api/options.h"
#include "grammar/token_matcher.h"
#include "sampling/sampler.h"
#include "session/session.h"
#include "tokenizer/tokenizer.h"
#include "quantize/imatrix_collector.h"

using namespace ikllm;

struct ikllm_session {
    const ikllm_model* model = nullptr;  // retained while the session lives
    std::unique_ptr<Session> s;
    std::unique_ptr<quantize::ImatrixCollector> imatrix;  // while collecting
    ~ikllm_session() {
        imatrix.reset();
        s.reset();
        if (model) ikllm::api::release(model);
    }
};

struct ikllm_sampler {
    std::unique_ptr<Sampler> s;
    int32_t n_vocab = 0;
};

extern "C" {

ikllm_status ikllm_session_create(const ikllm_model* model, const ikllm_options* options, ikllm_session** out) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(model && out, "NULL argument");
        IKLLM_REQUIRE(!options || options->kind == IKLLM_OPTIONS_SESSION, "options are not session options");
        auto h = std::make_unique<ikllm_session>();
        h->s = std::make_unique<Session>(*model->m, api::session_options(options, model->lib->default_threads));
        h->model = api::retain(model);
        *out = h.release();
    });
}
void ikllm_session_free(ikllm_session* s) { delete s; }
int32_t ikllm_session_n_ctx(const ikllm_session* s) { return s ? s->s->options().n_ctx : 0; }
int32_t ikllm_session_n_seq_max(const ikllm_session* s) { return s ? s->s->options().n_seq_max : 0; }

ikllm_status ikllm_session_decode(ikllm_session* s, const ikllm_token* tokens, const int32_t* positions,
                                  const int32_t* seq_ids, const int32_t* want_logits, int32_t n_tokens,
                                  uint32_t flags) {
    return api::guard([&] {
        IKLLM_REQUIRE(s, "session is NULL");
        IKLLM_REQUIRE(flags == 0, "flags must be 0");
        s->s->decode(tokens, positions, seq_ids, want_logits, n_tokens);
    });
}
ikllm_status ikllm_session_set_cancel_flag(ikllm_session* s, const volatile int32_t* flag) {
    return api::guard([&] {
        IKLLM_REQUIRE(s, "session is NULL");
        s->s->set_cancel(flag);
    });
}
ikllm_status ikllm_session_logits(const ikllm_session* s, int32_t index, const float** out, int32_t* n_vocab) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(s && out, "NULL argument");
        *out = s->s->logits(index);
        if (n_vocab) *n_vocab = s->s->model().hp.n_vocab;
    });
}

ikllm_status ikllm_session_hidden_state(const ikllm_session* s, int32_t index, const float** out, int32_t* n_embd) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(s && out, "NULL argument");
        *out = s->s->hidden_state(index);
        if (n_embd) *n_embd = s->s->model().hp.n_embd;
    });
}
ikllm_status ikllm_session_embeddings(const ikllm_session* s, int32_t seq_id, const float** out, int32_t* n_embd) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(s && out, "NULL argument");
        *out = s->s->embedding(seq_id);
        if (n_embd) *n_embd = s->s->model().hp.n_embd;
    });
}
int32_t ikllm_session_pooling(const ikllm_session* s) {
    if (!s || !s->s->options().embeddings) return -1;
    return (int32_t)s->s->pooling();
}

static void check_seq(const ikllm_session* s, int32_t seq) {
    IKLLM_REQUIRE(s, "session is NULL");
    IKLLM_REQUIRE(seq >= 0 && seq < s->s->options().n_seq_max,
                  "sequence id " + std::to_string(seq) + " out of range");
}

ikllm_status ikllm_session_seq_remove(ikllm_session* s, int32_t seq, int32_t p0, int32_t p1) {
    return api::guard([&] {
        check_seq(s, seq);
        IKLLM_REQUIRE(p0 >= 0, "p0 must be >= 0");
        s->s->kv().seq_remove(seq, p0, p1);
    });
}
ikllm_status ikllm_session_seq_copy(ikllm_session* s, int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    return api::guard([&] {
        check_seq(s, src);
        check_seq(s, dst);
        IKLLM_REQUIRE(p0 >= 0, "p0 must be >= 0");
        s->s->kv().seq_copy(src, dst, p0, p1);
    });
}
ikllm_status ikllm_session_seq_keep(ikllm_session* s, int32_t seq) {
    return api::guard([&] {
        check_seq(s, seq);
        s->s->kv().seq_keep(seq);
    });
}
ikllm_status ikllm_session_seq_shift(ikllm_session* s, int32_t seq, int32_t p0, int32_t p1, int32_t delta) {
    return api::guard([&] {
        check_seq(s, seq);
        IKLLM_REQUIRE(p0 >= 0, "p0 must be >= 0");
        s->s->seq_shift(seq, p0, p1, delta);
    });
}
int32_t ikllm_session_seq_pos_max(const ikllm_session* s, int32_t seq) {
    if (!s || seq < 0 || seq >= s->s->options().n_seq_max) return -1;
    return s->s->kv().seq_pos_max(seq);
}
ikllm_status ikllm_session_clear(ikllm_session* s) {
    return api::guard([&] {
        IKLLM_REQUIRE(s, "session is NULL");
        s->s->kv().clear();
    });
}

ikllm_status ikllm_sampler_create(const ikllm_model* model, const ikllm_options* options, ikllm_sampler** out) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(model && out, "NULL argument");
        IKLLM_REQUIRE(!options || options->kind == IKLLM_OPTIONS_SAMPLER, "options are not sampler options");
        auto h = std::make_unique<ikllm_sampler>();
        SamplerOptions so = api::sampler_options(options);
        if (api::opt_int(options, IKLLM_OPTIONS_SAMPLER, "ignore_eos") != 0) {
            const auto& tk = *model->m->tokenizer;
            for (int32_t id = 0; id < tk.n_vocab(); ++id)
                if (tk.is_eog(id)) so.excluded.push_back(id);
        }
        h->s = std::make_unique<Sampler>(so, api::sampler_grammar(options, model));
        h->n_vocab = model->m->hp.n_vocab;
        *out = h.release();
    });
}
void ikllm_sampler_free(ikllm_sampler* s) { delete s; }
ikllm_status ikllm_sampler_sample(ikllm_sampler* smp, const ikllm_session* s, int32_t index, ikllm_token* out) {
    return api::guard([&] {
        IKLLM_REQUIRE(smp && s && out, "NULL argument");
        *out = smp->s->sample(s->s->logits(index), s->s->model().hp.n_vocab);
    });
}
ikllm_status ikllm_sampler_sample_logits(ikllm_sampler* smp, const float* logits, int32_t n_vocab, ikllm_token* out) {
    return api::guard([&] {
        IKLLM_REQUIRE(smp && logits && out, "NULL argument");
        IKLLM_REQUIRE(n_vocab > 0, "n_vocab must be positive");
        *out = smp->s->sample(logits, n_vocab);
    });
}
ikllm_status ikllm_sampler_accept(ikllm_sampler* smp, const ikllm_token* tokens, size_t n) {
    return ikllm_sampler_accept_v2(smp, tokens, n, 0);
}
ikllm_status ikllm_sampler_accept_v2(ikllm_sampler* smp, const ikllm_token* tokens, size_t n, uint32_t flags) {
    return api::guard([&] {
        IKLLM_REQUIRE(smp, "sampler is NULL");
        IKLLM_REQUIRE(tokens || n == 0, "tokens is NULL");
        IKLLM_REQUIRE((flags & ~IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR) == 0, "unknown flags");
        for (size_t i = 0; i < n; ++i) {
            IKLLM_REQUIRE(tokens[i] >= 0 && tokens[i] < smp->n_vocab, "token id " + std::to_string(tokens[i]) + " out of range");
            if (flags & IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR) smp->s->accept_history(tokens[i]);
            else smp->s->accept(tokens[i]);
        }
    });
}
ikllm_status ikllm_sampler_grammar_state(const ikllm_sampler* smp, int32_t* out_state) {
    if (out_state) *out_state = IKLLM_GRAMMAR_NONE;
    return api::guard([&] {
        IKLLM_REQUIRE(smp && out_state, "NULL argument");
        if (const grammar::TokenMatcher* g = smp->s->grammar()) *out_state = (int32_t)g->state();
    });
}
ikllm_status ikllm_sampler_reset(ikllm_sampler* smp) {
    return api::guard([&] {
        IKLLM_REQUIRE(smp, "sampler is NULL");
        smp->s->reset();
    });
}

ikllm_status ikllm_session_imatrix_start(ikllm_session* s) {
    return api::guard([&] {
        IKLLM_REQUIRE(s, "session is NULL");
        s->s->set_observer(nullptr);
        s->imatrix = std::make_unique<quantize::ImatrixCollector>();
        s->s->set_observer(s->imatrix.get());
    });
}

ikllm_status ikllm_session_imatrix_save(ikllm_session* s, const char* path, int32_t n_chunks, const char* dataset) {
    return api::guard([&] {
        IKLLM_REQUIRE(s && path, "NULL argument");
        IKLLM_REQUIRE(s->imatrix, "importance-matrix collection was not started on this session");
        const quantize::Imatrix m = s->imatrix->result(n_chunks, dataset ? dataset : "");
        IKLLM_REQUIRE(!m.entries.empty(), "no statistics collected yet (decode some tokens first)");
        quantize::save_imatrix(m, path);
    });
}

ikllm_status ikllm_session_imatrix_stop(ikllm_session* s) {
    return api::guard([&] {
        IKLLM_REQUIRE(s, "session is NULL");
        s->s->set_observer(nullptr);
        s->imatrix.reset();
    });
}

}  // extern "C"

// ---- scoring (log-probabilities of a token sequence) ----
#include "session/score.h"

extern "C" ikllm_status ikllm_session_score_tokens(ikllm_session* s, int32_t seq_id, const ikllm_token* tokens,
                                                   int32_t n_tokens, int32_t first, float* out_logprobs,
                                                   size_t capacity, size_t* needed, ikllm_progress_fn progress,
                                                   void* progress_user_data) {
    return api::guard([&] {
        IKLLM_REQUIRE(s && tokens, "NULL argument");
        IKLLM_REQUIRE(n_tokens >= 1, "n_tokens must be positive");
        IKLLM_REQUIRE(first >= 0 && first <= n_tokens - 1, "first must be in [0, n_tokens - 1]");
        const size_t count = (size_t)(n_tokens - 1 - first);
        if (needed) *needed = count;
        if (capacity < count)
            fail(Status::buffer_too_small, "out_logprobs holds " + std::to_string(capacity) + " values, " +
                 std::to_string(count) + " needed");
        IKLLM_REQUIRE(out_logprobs || count == 0, "out_logprobs is NULL");
        ScoreProgress cb;
        if (progress) cb = [&](float p) { return progress(progress_user_data, p) == 0; };
        score_tokens(*s->s, seq_id, tokens, n_tokens, first, out_logprobs, cb);
    });
}
namespace ikllm::api {
Session* session_of(const ikllm_session* s) { return s ? s->s.get() : nullptr; }
Sampler* sampler_of(const ikllm_sampler* s) { return s ? s->s.get() : nullptr; }
}  // namespace ikllm::api
