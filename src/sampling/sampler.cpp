#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "grammar/token_matcher.h"

namespace ikllm {

Sampler::~Sampler() = default;

Sampler::Sampler(const SamplerOptions& opts) : Sampler(opts, nullptr) {}

Sampler::Sampler(const SamplerOptions& opts, std::unique_ptr<grammar::TokenMatcher> g)
    : o_(opts), rng_(opts.seed), grammar_(std::move(g)) {
    size_t start = 0;
    const std::string& s = o_.chain;
    while (start <= s.size()) {
        size_t end = s.find(';', start);
        if (end == std::string::npos) end = s.size();
        std::string step = s.substr(start, end - start);
        if (!step.empty()) {
            static const char* known[] = {"penalties", "top_k", "typical_p", "top_p", "min_p", "temperature"};
            if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return step == k; }) ==
                std::end(known))
                fail(Status::invalid_argument, "unknown sampler step '" + step +
                     "' (known: penalties, top_k, typical_p, top_p, min_p, temperature)");
            steps_.push_back(step);
        }
        start = end + 1;
    }
}

void Sampler::reset() {
    rng_.seed(o_.seed);
    history_.clear();
    if (grammar_) grammar_->reset();
}

void Sampler::accept(int32_t token) {
    if (grammar_ && !grammar_->accept(token))
        fail(Status::grammar_error, "token " + std::to_string(token) + " does not match the grammar here");
    accept_history(token);
}

void Sampler::accept_history(int32_t token) {
    history_.push_back(token);
    const size_t keep = o_.penalty_last_n < 0 ? SIZE_MAX : (size_t)std::max(o_.penalty_last_n, 0);
    while (history_.size() > keep) history_.pop_front();
}

void Sampler::apply_penalties(std::vector<Cand>& c) const {
    if (history_.empty()) return;
    if (o_.repeat_penalty == 1.0f && o_.presence_penalty == 0.0f && o_.frequency_penalty == 0.0f) return;
    std::unordered_map<int32_t, int> counts;
    for (int32_t t : history_) ++counts[t];
    for (auto& x : c) {  // candidates are still indexed by id here
        auto it = counts.find(x.id);
        if (it == counts.end()) continue;
        if (x.logit <= 0) x.logit *= o_.repeat_penalty;
        else x.logit /= o_.repeat_penalty;
        x.logit -= (float)it->second * o_.frequency_penalty + o_.presence_penalty;
    }
}

void Sampler::softmax(std::vector<Cand>& c) {
    float mx = -INFINITY;
    for (auto& x : c) mx = std::max(mx, x.logit);
    double sum = 0;
    for (auto& x : c) {
        x.p = std::exp(x.logit - mx);
        sum += x.p;
    }
    for (auto& x : c) x.p = (float)(x.p / sum);
}

// Every token, or with a grammar only those it allows (the mask comes first in the chain, as if
// the others had logit -inf).
void Sampler::drop_excluded() {
    if (o_.excluded.empty()) return;
    const auto& ex = o_.excluded;
    cand_.erase(std::remove_if(cand_.begin(), cand_.end(),
                               [&](const Cand& c) { return std::binary_search(ex.begin(), ex.end(), c.id); }),
                cand_.end());
}

void Sampler::fill_candidates(const float* logits, int32_t n_vocab) {
    cand_.clear();
    if (!grammar_) {
        cand_.resize(n_vocab);
        for (int32_t i = 0; i < n_vocab; ++i) cand_[i] = {i, logits[i], 0};
        drop_excluded();
        if (cand_.empty()) fail(Status::invalid_argument, "every token of the vocabulary is excluded (ignore_eos)");
        return;
    }
    const std::vector<uint64_t>& mask = grammar_->allowed();
    const size_t words = std::min(mask.size(), ((size_t)n_vocab + 63) / 64);
    for (size_t w = 0; w < words; ++w)
        for (uint64_t bits = mask[w]; bits; bits &= bits - 1) {
            const int32_t id = (int32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
            if (id < n_vocab && !std::isnan(logits[id])) cand_.push_back({id, logits[id], 0});
        }
    drop_excluded();
    if (cand_.empty()) {
        const auto st = grammar_->state();
        fail(Status::grammar_error, st == grammar::MatchState::failed ? "the grammar has failed (a token that does not match was accepted)"
                                    : st == grammar::MatchState::done ? "the grammar is complete and the vocabulary has no end-of-generation token"
                                                                      : "no token of the vocabulary can continue the grammar");
    }
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab) {
    if (!logits || n_vocab <= 0) fail(Status::invalid_argument, "sample: no logits");
    fill_candidates(logits, n_vocab);
    auto& c = cand_;
    const bool greedy = o_.temperature <= 0.0f;
    bool sorted = false;
    auto sort_desc = [&] {
        if (!sorted) std::stable_sort(c.begin(), c.end(), [](const Cand& a, const Cand& b) { return a.logit > b.logit; });
        sorted = true;
    };
    for (const std::string& step : steps_) {
        if (step == "penalties") {
            apply_penalties(c);
        } else if (greedy) {
            continue;  // filters do not change the arg-max
        } else if (step == "top_k") {
            if (o_.top_k > 0 && o_.top_k < (int32_t)c.size()) {
                std::partial_sort(c.begin(), c.begin() + o_.top_k, c.end(),
                                  [](const Cand& a, const Cand& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
                c.resize(o_.top_k);
                sorted = true;
            }
        } else if (step == "top_p") {
            if (o_.top_p < 1.0f) {
                sort_desc();
                softmax(c);
                double cum = 0;
                size_t keep = c.size();
                for (size_t i = 0; i < c.size(); ++i) {
                    cum += c[i].p;
                    if (cum >= o_.top_p) { keep = i + 1; break; }
                }
                c.resize(std::max<size_t>(1, keep));
            }
        } else if (step == "min_p") {
            if (o_.min_p > 0.0f) {
                sort_desc();
                const float thr = c[0].logit + std::log(o_.min_p);
                size_t keep = 1;
                while (keep < c.size() && c[keep].logit >= thr) ++keep;
                c.resize(keep);
            }
        } else if (step == "typical_p") {
            if (o_.typical_p < 1.0f) {
                softmax(c);
                double ent = 0;
                for (auto& x : c) if (x.p > 0) ent -= x.p * std::log(x.p);
                std::vector<std::pair<double, size_t>> dev(c.size());
                for (size_t i = 0; i < c.size(); ++i)
                    dev[i] = {std::fabs(-std::log(std::max(c[i].p, 1e-30f)) - ent), i};
                std::stable_sort(dev.begin(), dev.end());
                double cum = 0;
                size_t keep = dev.size();
                for (size_t i = 0; i < dev.size(); ++i) {
                    cum += c[dev[i].second].p;
                    if (cum >= o_.typical_p) { keep = i + 1; break; }
                }
                std::vector<Cand> kept;
                for (size_t i = 0; i < keep; ++i) kept.push_back(c[dev[i].second]);
                c = std::move(kept);
                sorted = false;
            }
        } else if (step == "temperature") {
            for (auto& x : c) x.logit /= o_.temperature;
        }
    }
    int32_t chosen;
    if (greedy) {
        size_t best = 0;
        for (size_t i = 1; i < c.size(); ++i)
            if (c[i].logit > c[best].logit) best = i;
        chosen = c[best].id;
    } else {
        softmax(c);
        const double u = (double)(rng_() >> 11) * (1.0 / 9007199254740992.0);
        double cum = 0;
        chosen = c.back().id;
        for (auto& x : c) {
            cum += x.p;
            if (u < cum) { chosen = x.id; break; }
        }
    }
    accept(chosen);
    return chosen;
}

}  // namespace ikllm
