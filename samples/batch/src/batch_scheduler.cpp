#include "batch_scheduler.h"

#include <algorithm>
#include <stdexcept>

namespace batch {
namespace {

std::string last_error(const char* what) { return std::string(what) + ": " + ikllm_last_error(); }

}  // namespace

BatchScheduler::BatchScheduler(const ikllm_model* model, const SchedulerConfig& config,
                               const std::vector<std::vector<ikllm_token>>& prefixes)
    : model_(model), config_(config) {
    const int n_prefix = (int)prefixes.size();
    ikllm_options* so = nullptr;
    if (ikllm_options_create(IKLLM_OPTIONS_SESSION, &so) != IKLLM_OK) throw std::runtime_error(last_error("options"));
    // One sequence per prefix plus one per slot.
    bool ok = ikllm_options_set_int(so, "n_ctx", config.n_ctx) == IKLLM_OK &&
              ikllm_options_set_int(so, "n_seq_max", n_prefix + config.parallel) == IKLLM_OK &&
              ikllm_options_set_int(so, "n_batch", config.batch_tokens) == IKLLM_OK &&
              (config.n_threads <= 0 || ikllm_options_set_int(so, "n_threads", config.n_threads) == IKLLM_OK) &&
              ikllm_options_set_int(so, "batch_invariant", config.batch_invariant ? 1 : 0) == IKLLM_OK;
    if (!ok) {
        const std::string e = last_error("session options");
        ikllm_options_free(so);
        throw std::runtime_error(e);
    }
    const ikllm_status st = ikllm_session_create(model, so, &session_);
    ikllm_options_free(so);
    if (st != IKLLM_OK) throw std::runtime_error(last_error("session"));

    for (int p = 0; p < n_prefix; ++p) {
        const auto& toks = prefixes[p];
        for (size_t at = 0; at < toks.size(); at += (size_t)config.batch_tokens) {
            const int n = (int)std::min(toks.size() - at, (size_t)config.batch_tokens);
            std::vector<int32_t> pos(n), seq(n, p), want(n, 0);
            for (int i = 0; i < n; ++i) pos[i] = (int32_t)(at + i);
            if (ikllm_session_decode(session_, toks.data() + at, pos.data(), seq.data(), want.data(), n, 0) != IKLLM_OK) {
                const std::string e = last_error("decoding the instruction prefix");
                ikllm_session_free(session_);
                throw std::runtime_error(e);
            }
        }
        prefix_len_.push_back((int)toks.size());
    }
    slots_.resize(config.parallel);
    for (int i = 0; i < config.parallel; ++i) slots_[i].seq = n_prefix + i;
}

BatchScheduler::~BatchScheduler() {
    for (auto& s : slots_) {
        ikllm_sampler_free(s.sampler);
        ikllm_detok_free(s.detok);
    }
    ikllm_session_free(session_);
}

bool BatchScheduler::has_free_slot() const {
    return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.active; });
}

bool BatchScheduler::busy() const {
    return !early_.empty() || std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.active; });
}

ikllm_sampler* BatchScheduler::make_sampler(const GenRequest& req, std::string* error) const {
    ikllm_options* o = nullptr;
    if (ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o) != IKLLM_OK) {
        *error = last_error("sampler options");
        return nullptr;
    }
    bool ok = ikllm_options_set_int(o, "seed", (int64_t)(req.seed & 0x7fffffffffffffffull)) == IKLLM_OK;
    for (auto& [k, v] : config_.sampling)
        if (ok && ikllm_options_set_from_text(o, k.c_str(), v.c_str()) != IKLLM_OK) {
            ok = false;
            *error = last_error(("sampling option '" + k + "'").c_str());
        }
    if (ok && req.constrained && !config_.grammar.empty() &&
        ikllm_options_set_string(o, "grammar", config_.grammar.c_str()) != IKLLM_OK) {
        ok = false;
        *error = last_error("grammar");
    }
    ikllm_sampler* s = nullptr;
    if (ok && ikllm_sampler_create(model_, o, &s) != IKLLM_OK) *error = last_error("sampler");
    ikllm_options_free(o);
    return s;
}

void BatchScheduler::start(GenRequest req) {
    auto it = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.active; });
    if (it == slots_.end()) throw std::logic_error("start() without a free slot");
    Slot& s = *it;
    s.result = GenResult();
    s.result.key = req.key;
    s.result.tokens_in = prefix_len_.at(req.prefix) + (int)req.prompt.size();
    std::string error;
    if (req.prompt.empty()) error = "empty prompt";
    if (error.empty()) s.sampler = make_sampler(req, &error);
    if (error.empty() && ikllm_detok_create(model_, IKLLM_DETOK_KEEP_LEADING_SPACE, &s.detok) != IKLLM_OK)
        error = last_error("detokenizer");
    // The slot's sequence starts as a copy of the prefix: shared cells, nothing recomputed.
    if (error.empty() && ikllm_session_seq_copy(session_, req.prefix, s.seq, 0, -1) != IKLLM_OK)
        error = last_error("sharing the prefix");
    // Penalties see the prompt; the grammar must not.
    if (error.empty() && ikllm_sampler_accept_v2(s.sampler, req.prompt.data(), req.prompt.size(),
                                                 IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR) != IKLLM_OK)
        error = last_error("sampler");
    s.req = std::move(req);
    s.fed = 0;
    s.generating = false;
    s.active = true;
    if (!error.empty()) finish(s, early_, error);
}

void BatchScheduler::finish(Slot& s, std::vector<GenResult>& finished, const std::string& error) {
    if (s.detok) {
        const char* text = nullptr;
        size_t len = 0;
        if (ikllm_detok_flush(s.detok, &text, &len) == IKLLM_OK) s.result.text.append(text, len);
    }
    if (s.result.error.empty()) s.result.error = error;
    ikllm_session_seq_remove(session_, s.seq, 0, -1);
    ikllm_sampler_free(s.sampler);
    ikllm_detok_free(s.detok);
    s.sampler = nullptr;
    s.detok = nullptr;
    s.active = false;
    finished.push_back(std::move(s.result));
}

void BatchScheduler::take_token(Slot& s, int32_t index, std::vector<GenResult>& finished) {
    ikllm_token tok = -1;
    if (ikllm_sampler_sample(s.sampler, session_, index, &tok) != IKLLM_OK) {
        finish(s, finished, last_error("sampling"));
        return;
    }
    int32_t gs = IKLLM_GRAMMAR_NONE;
    ikllm_sampler_grammar_state(s.sampler, &gs);
    if (ikllm_token_is_eog(model_, tok)) {
        s.result.grammar_complete = gs == IKLLM_GRAMMAR_COMPLETE || gs == IKLLM_GRAMMAR_DONE;
        finish(s, finished);
        return;
    }
    const char* text = nullptr;
    size_t len = 0;
    if (ikllm_detok_push(s.detok, tok, &text, &len) == IKLLM_OK) s.result.text.append(text, len);
    ++s.result.tokens_out;
    ++generated_tokens_;
    s.result.grammar_complete = gs == IKLLM_GRAMMAR_COMPLETE || gs == IKLLM_GRAMMAR_DONE;
    if (gs == IKLLM_GRAMMAR_DONE || s.result.tokens_out >= s.req.max_tokens) {
        finish(s, finished);
        return;
    }
    s.next = tok;
    s.generating = true;
}

void BatchScheduler::step(std::vector<GenResult>& finished) {
    for (auto& r : early_) finished.push_back(std::move(r));
    early_.clear();
    std::vector<ikllm_token> tok;
    std::vector<int32_t> pos, seq, want;
    std::vector<std::pair<size_t, int32_t>> sample_at;  // (slot, batch index)
    std::vector<size_t> in_batch;
    // Running jobs first: one token each.
    for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (!s.active || !s.generating) continue;
        sample_at.emplace_back(i, (int32_t)tok.size());
        tok.push_back(s.next);
        pos.push_back(prefix_len_[s.req.prefix] + (int32_t)s.req.prompt.size() + s.result.tokens_out - 1);
        seq.push_back(s.seq);
        want.push_back(1);
        in_batch.push_back(i);
    }
    // Then prompt pieces of new jobs in the room left, starting at a rotating slot.
    int budget = config_.batch_tokens - (int)tok.size();
    for (size_t k = 0; k < slots_.size() && budget > 0; ++k) {
        const size_t i = (next_prompt_slot_ + k) % slots_.size();
        Slot& s = slots_[i];
        if (!s.active || s.generating) continue;
        const int n = (int)std::min<size_t>(s.req.prompt.size() - s.fed, (size_t)budget);
        for (int j = 0; j < n; ++j) {
            tok.push_back(s.req.prompt[s.fed + j]);
            pos.push_back(prefix_len_[s.req.prefix] + (int32_t)(s.fed + j));
            seq.push_back(s.seq);
            want.push_back(0);
        }
        s.fed += n;
        budget -= n;
        prompt_tokens_ += n;
        in_batch.push_back(i);
        if (s.fed == s.req.prompt.size()) {  // the prompt is complete: sample its first token
            want.back() = 1;
            sample_at.emplace_back(i, (int32_t)tok.size() - 1);
        }
    }
    next_prompt_slot_ = (next_prompt_slot_ + 1) % std::max<size_t>(1, slots_.size());
    if (tok.empty()) return;
    const ikllm_status st =
        ikllm_session_decode(session_, tok.data(), pos.data(), seq.data(), want.data(), (int32_t)tok.size(), 0);
    if (st != IKLLM_OK) {
        // The cache is unchanged; the jobs of this batch cannot go on.
        const std::string e = st == IKLLM_CONTEXT_FULL ? "the KV cache is full (raise the context size)"
                                                       : last_error("decode");
        for (size_t i : in_batch) finish(slots_[i], finished, e);
        return;
    }
    for (auto [i, index] : sample_at) take_token(slots_[i], index, finished);
}

}  // namespace batch
