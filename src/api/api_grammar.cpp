// C boundary for grammar-constrained sampling: building a sampler's grammar from its options
// (with the model's shared vocabulary trie) and converting JSON Schema to GBNF.
#include <cstdlib>

#include "api/options.h"
#include "grammar/byte_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_matcher.h"
#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace ikllm::api {

namespace {

// Token pieces as the detokenizer writes them; special tokens are never text under a grammar.
std::shared_ptr<const grammar::TokenTrie> vocab_trie(const ikllm_model* model) {
    std::call_once(model->grammar_vocab_once, [&] {
        const tok::Tokenizer& t = *model->m->tokenizer;
        const int32_t n = t.n_vocab();
        std::vector<std::string> pieces((size_t)n);
        std::vector<grammar::TokenKind> kinds((size_t)n, grammar::TokenKind::text);
        for (int32_t i = 0; i < n; ++i) {
            if (t.is_eog(i)) kinds[i] = grammar::TokenKind::eog;
            else if (t.is_special(i) || t.token_type(i) == tok::TokenType::unused) kinds[i] = grammar::TokenKind::excluded;
            else pieces[i] = t.piece(i, false);
        }
        model->grammar_vocab = std::make_shared<const grammar::TokenTrie>(
            grammar::build_token_trie(std::move(pieces), std::move(kinds)));
    });
    return model->grammar_vocab;
}

}  // namespace

std::unique_ptr<grammar::TokenMatcher> sampler_grammar(const ikllm_options* o, const ikllm_model* model) {
    const int32_t K = IKLLM_OPTIONS_SAMPLER;
    const std::string gbnf = opt_string(o, K, "grammar");
    const std::string schema = opt_string(o, K, "json_schema");
    const std::string root = opt_string(o, K, "grammar_root");
    if (gbnf.empty() && schema.empty()) return nullptr;
    if (!gbnf.empty() && !schema.empty())
        fail(Status::invalid_argument, "sampler options 'grammar' and 'json_schema' are exclusive");
    std::shared_ptr<const grammar::ByteGrammar> g;
    if (!schema.empty()) {
        g = grammar::compile_gbnf(grammar::json_schema_to_gbnf(schema), "root");
    } else {
        try {
            g = grammar::compile_gbnf(gbnf, root);
        } catch (const Error& e) {
            fail(e.status, std::string("grammar: ") + e.what());
        }
    }
    if (!model->m->tokenizer) fail(Status::unsupported, "the model has no tokenizer: grammars need one");
    return std::make_unique<grammar::TokenMatcher>(std::move(g), vocab_trie(model));
}

}  // namespace ikllm::api

using namespace ikllm;

extern "C" {

ikllm_status ikllm_json_schema_to_grammar(const char* schema_json, char** out_gbnf) {
    if (out_gbnf) *out_gbnf = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(schema_json && out_gbnf, "NULL argument");
        const std::string g = grammar::json_schema_to_gbnf(schema_json);
        char* p = static_cast<char*>(std::malloc(g.size() + 1));
        if (!p) throw std::bad_alloc();
        std::memcpy(p, g.c_str(), g.size() + 1);
        *out_gbnf = p;
    });
}

}  // extern "C"
