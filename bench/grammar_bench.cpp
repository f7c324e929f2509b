// Cost of grammar-constrained sampling per token: the same random logits sampled with and
// without a JSON-schema grammar over a real vocabulary (default: the 151,936-token Qwen2 one).
// The difference is the grammar's overhead (mask + advance); it is reported for a typical
// object schema and for a worst case where every token lands in a new state (a long bounded
// string, so no mask is reused).
//   grammar_bench [VOCAB.gguf] [TOKENS]   (default vocabulary: $IKLLM_SHARED or ../shared)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "grammar/byte_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_matcher.h"
#include "ikllm.h"

namespace {

// CPU time of this thread: on a shared machine, wall time would count other processes' turns.
double now_ms() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void check(ikllm_status st, const char* what) {
    if (st != IKLLM_OK) {
        std::fprintf(stderr, "%s: %s: %s\n", what, ikllm_status_name(st), ikllm_last_error());
        std::exit(1);
    }
}

struct Result {
    double ms_per_token = 0, max_ms = 0;
    int docs = 0;
};

// Samples n tokens over the logit rows; with a grammar, a finished document starts a new one.
Result run(ikllm_model* model, const char* schema, const std::vector<std::vector<float>>& rows, int n) {
    ikllm_options* o = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o), "options");
    check(ikllm_options_set_float(o, "temperature", 1.0), "temperature");
    check(ikllm_options_set_int(o, "top_k", 0), "top_k");
    check(ikllm_options_set_float(o, "top_p", 1.0), "top_p");
    check(ikllm_options_set_float(o, "min_p", 0.0), "min_p");
    if (schema) check(ikllm_options_set_string(o, "json_schema", schema), "json_schema");
    ikllm_sampler* s = nullptr;
    check(ikllm_sampler_create(model, o, &s), "sampler");
    ikllm_options_free(o);
    Result r;
    const int32_t n_vocab = (int32_t)rows[0].size();
    const double t0 = now_ms();
    for (int i = 0; i < n; ++i) {
        const double a = now_ms();
        ikllm_token tok;
        check(ikllm_sampler_sample_logits(s, rows[(size_t)i % rows.size()].data(), n_vocab, &tok), "sample");
        int32_t gs = IKLLM_GRAMMAR_NONE;
        check(ikllm_sampler_grammar_state(s, &gs), "state");
        if (gs == IKLLM_GRAMMAR_DONE || (schema && ikllm_token_is_eog(model, tok))) {
            ++r.docs;
            check(ikllm_sampler_reset(s), "reset");
        }
        r.max_ms = std::max(r.max_ms, now_ms() - a);
    }
    r.ms_per_token = (now_ms() - t0) / n;
    ikllm_sampler_free(s);
    return r;
}

// The grammar alone: per token, the allowed-token mask plus advancing by a token drawn
// uniformly from the allowed ones (random choices explore the grammar widely).
struct MaskResult {
    double mean_ms = 0, max_ms = 0, cold_mean_ms = 0;
    int cold = 0, docs = 0;
};
MaskResult run_mask(std::shared_ptr<const ikllm::grammar::TokenTrie> trie, const char* schema, int n) {
    using namespace ikllm::grammar;
    TokenMatcher m(compile_gbnf(json_schema_to_gbnf(schema)), trie);
    std::mt19937 rng(11);
    MaskResult r;
    double total = 0, cold_total = 0;
    std::vector<int32_t> ids;
    for (int i = 0; i < n; ++i) {
        const size_t walks = m.n_walks();
        const double a = now_ms();
        const std::vector<uint64_t>& mask = m.allowed();
        ids.clear();
        for (size_t w = 0; w < mask.size(); ++w)
            for (uint64_t b = mask[w]; b; b &= b - 1) ids.push_back((int32_t)(w * 64 + (size_t)__builtin_ctzll(b)));
        const int32_t tok = ids[rng() % ids.size()];
        m.accept(tok);
        const double ms = now_ms() - a;
        total += ms;
        r.max_ms = std::max(r.max_ms, ms);
        if (m.n_walks() != walks) {
            ++r.cold;
            cold_total += ms;
        }
        if (trie->kinds[tok] == TokenKind::eog || m.state() == MatchState::done) {
            ++r.docs;
            m.reset();
        }
    }
    r.mean_ms = total / n;
    r.cold_mean_ms = r.cold ? cold_total / r.cold : 0;
    return r;
}

std::shared_ptr<const ikllm::grammar::TokenTrie> trie_of(ikllm_model* model) {
    using namespace ikllm::grammar;
    const int32_t n = ikllm_model_n_vocab(model);
    std::vector<std::string> pieces((size_t)n);
    std::vector<TokenKind> kinds((size_t)n, TokenKind::text);
    std::vector<char> buf(1024);
    for (int32_t i = 0; i < n; ++i) {
        size_t need = 0;
        check(ikllm_token_to_piece(model, i, 0, buf.data(), buf.size(), &need), "piece");
        pieces[(size_t)i].assign(buf.data(), need - 1);
        if (ikllm_token_is_eog(model, i)) kinds[(size_t)i] = TokenKind::eog;
    }
    return std::make_shared<const TokenTrie>(build_token_trie(std::move(pieces), std::move(kinds)));
}

}  // namespace

int main(int argc, char** argv) {
    const char* shared = std::getenv("IKLLM_SHARED");
    const std::string path = argc > 1 ? argv[1]
                                      : std::string(shared ? shared : "../shared") + "/refdata/vocab/ggml-vocab-qwen2.gguf";
    const int n = argc > 2 ? std::atoi(argv[2]) : 2000;
    ikllm_lib* lib = nullptr;
    check(ikllm_lib_create(0, &lib), "lib");
    ikllm_options* mo = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), "options");
    check(ikllm_options_set_int(mo, "vocab_only", 1), "vocab_only");
    ikllm_model* model = nullptr;
    check(ikllm_model_load(lib, path.c_str(), mo, nullptr, nullptr, nullptr, &model), "load");
    ikllm_options_free(mo);
    const int32_t n_vocab = ikllm_model_n_vocab(model);

    // Random logits, several rows so consecutive tokens differ.
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 3.f);
    std::vector<std::vector<float>> rows(8, std::vector<float>((size_t)n_vocab));
    for (auto& r : rows)
        for (float& x : r) x = nd(rng);

    const char* typical =
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer","minimum":0,"maximum":150},)"
        R"("email":{"type":"string","format":"email"},"tags":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":5},)"
        R"("address":{"type":"object","properties":{"street":{"type":"string","maxLength":60},"city":{"type":"string","maxLength":30},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["city"]},)"
        R"("member":{"type":"boolean"},"joined":{"type":"string","format":"date"}},"required":["name","age","tags"]})";
    const char* worst = R"({"type":"array","items":{"type":"string","minLength":300,"maxLength":400},"minItems":1,"maxItems":1})";

    const double t0 = now_ms();
    run(model, R"({"type":"string","maxLength":1})", rows, 1);  // builds the model's vocabulary trie
    const double trie_ms = now_ms() - t0;

    const Result plain = run(model, nullptr, rows, n);
    const Result typ = run(model, typical, rows, n);
    const Result bad = run(model, worst, rows, n);
    std::printf("vocabulary: %s (%d tokens); %d tokens per run; times are thread CPU time\n", path.c_str(), n_vocab, n);
    std::printf("vocabulary trie + first sampler: %.1f ms (once per model)\n", trie_ms);
    std::printf("| case | ms/token | max ms/token | grammar overhead ms/token | documents |\n|---|---|---|---|---|\n");
    std::printf("| no grammar | %.3f | %.3f | - | - |\n", plain.ms_per_token, plain.max_ms);
    std::printf("| typical object schema | %.3f | %.3f | %.3f | %d |\n", typ.ms_per_token, typ.max_ms,
                typ.ms_per_token - plain.ms_per_token, typ.docs);
    std::printf("| long string, new state every token | %.3f | %.3f | %.3f | %d |\n", bad.ms_per_token, bad.max_ms,
                bad.ms_per_token - plain.ms_per_token, bad.docs);

    auto trie = trie_of(model);
    std::printf("\ngrammar alone (mask + advance per token, token drawn uniformly from the allowed ones):\n");
    std::printf("| case | mean ms/token | tokens needing a trie walk | mean ms of those | max ms | documents |\n|---|---|---|---|---|---|\n");
    const MaskResult mt = run_mask(trie, typical, n);
    std::printf("| typical object schema | %.3f | %d | %.3f | %.3f | %d |\n", mt.mean_ms, mt.cold, mt.cold_mean_ms, mt.max_ms, mt.docs);
    const MaskResult mw = run_mask(trie, worst, n);
    std::printf("| long string, new state every token | %.3f | %d | %.3f | %.3f | %d |\n", mw.mean_ms, mw.cold, mw.cold_mean_ms, mw.max_ms, mw.docs);
    ikllm_model_free(model);
    ikllm_lib_free(lib);
    return 0;
}
