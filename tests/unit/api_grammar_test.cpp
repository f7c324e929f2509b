// The C ABI of grammar-constrained sampling: options, errors with positions, the state query,
// accept/accept_v2/reset, greedy and the rest of the chain under a grammar, schema conversion.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ikllm.h"
#include "test_support.h"

namespace {

struct Fixture {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    int32_t n_vocab = 0;
    Fixture() {
        EXPECT_EQ(ikllm_lib_create(0, &lib), IKLLM_OK);
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_MODEL, &o);
        ikllm_options_set_int(o, "vocab_only", 1);
        const std::string path = ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf";
        EXPECT_EQ(ikllm_model_load(lib, path.c_str(), o, nullptr, nullptr, nullptr, &model), IKLLM_OK) << ikllm_last_error();
        ikllm_options_free(o);
        n_vocab = model ? ikllm_model_n_vocab(model) : 0;
    }
    ~Fixture() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
    // Sampler with one string option set (plus greedy when asked); returns the status.
    ikllm_status make(const char* key, const char* value, ikllm_sampler** out, bool greedy = false, int top_k = 0) {
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o);
        if (key) {
            EXPECT_EQ(ikllm_options_set_string(o, key, value), IKLLM_OK);
        }
        if (greedy) ikllm_options_set_float(o, "temperature", 0.0);
        if (top_k) ikllm_options_set_int(o, "top_k", top_k);
        const ikllm_status st = ikllm_sampler_create(model, o, out);
        ikllm_options_free(o);
        return st;
    }
    std::string piece(ikllm_token t) {
        char buf[64];
        size_t need = 0;
        EXPECT_EQ(ikllm_token_to_piece(model, t, 0, buf, sizeof buf, &need), IKLLM_OK);
        return std::string(buf, need - 1);
    }
    ikllm_token token_of(const std::string& text) {
        for (ikllm_token t = 0; t < n_vocab; ++t)
            if (piece(t) == text) return t;
        return -1;
    }
    int32_t state(const ikllm_sampler* s) {
        int32_t st = -1;
        EXPECT_EQ(ikllm_sampler_grammar_state(s, &st), IKLLM_OK);
        return st;
    }
};

}  // namespace

TEST(ApiGrammar, BadGrammarFailsWithPosition) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    ikllm_sampler* s = reinterpret_cast<ikllm_sampler*>(1);
    EXPECT_EQ(f.make("grammar", "root ::= \"a\"\nb ::= [z-a]", &s), IKLLM_ERR_GRAMMAR);
    EXPECT_EQ(s, nullptr);
    EXPECT_STREQ(ikllm_last_error(), "grammar: line 2, column 8: character range is reversed");
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o);
    ikllm_options_set_string(o, "grammar", "start ::= \"x\"");
    EXPECT_EQ(ikllm_sampler_create(f.model, o, &s), IKLLM_ERR_GRAMMAR);  // no rule 'root'
    ikllm_options_set_string(o, "grammar_root", "start");
    ASSERT_EQ(ikllm_sampler_create(f.model, o, &s), IKLLM_OK) << ikllm_last_error();
    ikllm_sampler_free(s);
    ikllm_options_set_string(o, "json_schema", "{}");
    EXPECT_EQ(ikllm_sampler_create(f.model, o, &s), IKLLM_ERR_INVALID_ARGUMENT);  // both given
    ikllm_options_free(o);
    EXPECT_EQ(f.make("json_schema", R"({"properties":{"x":{"if":{}}}})", &s), IKLLM_ERR_GRAMMAR);
    EXPECT_STREQ(ikllm_last_error(), "json_schema at '/properties/x': keyword 'if' is not supported");
}

TEST(ApiGrammar, SchemaToGrammar) {
    char* g = nullptr;
    ASSERT_EQ(ikllm_json_schema_to_grammar(R"({"type":"integer","minimum":1,"maximum":3})", &g), IKLLM_OK);
    ASSERT_NE(g, nullptr);
    EXPECT_NE(std::strstr(g, "root ::="), nullptr);
    ikllm_free(g);
    g = reinterpret_cast<char*>(1);
    EXPECT_EQ(ikllm_json_schema_to_grammar("{\"type\":", &g), IKLLM_ERR_GRAMMAR);
    EXPECT_EQ(g, nullptr);
    EXPECT_EQ(ikllm_json_schema_to_grammar(nullptr, &g), IKLLM_ERR_INVALID_ARGUMENT);
}

TEST(ApiGrammar, GreedyAndTopKRespectTheGrammar) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const ikllm_token a = f.token_of("a"), b = f.token_of("b"), x = f.token_of("x");
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    ASSERT_GE(x, 0);
    for (int mode = 0; mode < 2; ++mode) {
        ikllm_sampler* s = nullptr;
        ASSERT_EQ(f.make("grammar", "root ::= [ab] \"b\"", &s, mode == 0, mode == 1 ? 1 : 0), IKLLM_OK);
        std::vector<float> logits((size_t)f.n_vocab, 0.f);
        logits[(size_t)x] = 100.f;  // the model's favourite is not allowed
        logits[(size_t)a] = 5.f;
        logits[(size_t)b] = 4.f;
        ikllm_token t = -1;
        ASSERT_EQ(ikllm_sampler_sample_logits(s, logits.data(), f.n_vocab, &t), IKLLM_OK) << ikllm_last_error();
        EXPECT_EQ(t, a);
        EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_INCOMPLETE);
        ASSERT_EQ(ikllm_sampler_sample_logits(s, logits.data(), f.n_vocab, &t), IKLLM_OK);
        EXPECT_EQ(t, b);  // 'a' is no longer allowed
        EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_DONE);
        // Only end of generation remains.
        ASSERT_EQ(ikllm_sampler_sample_logits(s, logits.data(), f.n_vocab, &t), IKLLM_OK);
        EXPECT_TRUE(ikllm_token_is_eog(f.model, t));
        ikllm_sampler_free(s);
    }
}

TEST(ApiGrammar, AcceptAdvancesAndResetRestarts) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    const ikllm_token a = f.token_of("a"), b = f.token_of("b");
    ikllm_sampler* s = nullptr;
    ASSERT_EQ(f.make(nullptr, nullptr, &s), IKLLM_OK);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_NONE);
    ikllm_sampler_free(s);
    ASSERT_EQ(f.make("grammar", "root ::= \"a\"+", &s), IKLLM_OK);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_INCOMPLETE);
    // Prompt tokens: penalties only.
    EXPECT_EQ(ikllm_sampler_accept_v2(s, &b, 1, IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR), IKLLM_OK);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_INCOMPLETE);
    EXPECT_EQ(ikllm_sampler_accept_v2(s, &b, 1, 8u), IKLLM_ERR_INVALID_ARGUMENT);
    // Forced tokens advance the grammar.
    EXPECT_EQ(ikllm_sampler_accept(s, &a, 1), IKLLM_OK);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_COMPLETE);
    EXPECT_EQ(ikllm_sampler_accept(s, &b, 1), IKLLM_ERR_GRAMMAR);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_FAILED);
    std::vector<float> logits((size_t)f.n_vocab, 0.f);
    ikllm_token t;
    EXPECT_EQ(ikllm_sampler_sample_logits(s, logits.data(), f.n_vocab, &t), IKLLM_ERR_GRAMMAR);
    EXPECT_EQ(ikllm_sampler_reset(s), IKLLM_OK);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_INCOMPLETE);
    ASSERT_EQ(ikllm_sampler_sample_logits(s, logits.data(), f.n_vocab, &t), IKLLM_OK);
    const std::string p = f.piece(t);
    EXPECT_TRUE(!p.empty() && p.find_first_not_of('a') == std::string::npos) << p;
    ikllm_sampler_free(s);
}

TEST(ApiGrammar, OptionsAreListed) {
    int found = 0;
    for (int32_t i = 0; i < ikllm_option_count(IKLLM_OPTIONS_SAMPLER); ++i) {
        const char* name = nullptr;
        const char* def = nullptr;
        ASSERT_EQ(ikllm_option_info(IKLLM_OPTIONS_SAMPLER, i, &name, nullptr, &def, nullptr, nullptr, nullptr), IKLLM_OK);
        if (!std::strcmp(name, "grammar") || !std::strcmp(name, "json_schema")) found += *def == 0;
        if (!std::strcmp(name, "grammar_root")) found += !std::strcmp(def, "root");
    }
    EXPECT_EQ(found, 3);
}

// A grammar ambiguous enough to exceed the automaton's limit (grammar::Automaton::kMaxStacks):
// at creation when its start already does, else at the token that gets there; the error names
// the limit, the sampler keeps its state and works again after a reset.
TEST(ApiGrammar, AmbiguityLimitIsACleanError) {
    IKLLM_REQUIRE_REFDATA();
    Fixture f;
    ikllm_sampler* s = nullptr;
    EXPECT_EQ(f.make("grammar", "root ::= (\"a\"?){0,5000} \"c\"", &s), IKLLM_ERR_GRAMMAR);
    EXPECT_NE(std::string(ikllm_last_error()).find("too ambiguous: more than the limit of 4096"), std::string::npos)
        << ikllm_last_error();
    EXPECT_EQ(s, nullptr);
    ASSERT_EQ(f.make("grammar", "root ::= \"b\" (\"a\"?){0,5000} \"c\" | \"a\"", &s), IKLLM_OK) << ikllm_last_error();
    const ikllm_token b = f.token_of("b");
    EXPECT_EQ(ikllm_sampler_accept(s, &b, 1), IKLLM_ERR_GRAMMAR);
    EXPECT_NE(std::string(ikllm_last_error()).find("too ambiguous"), std::string::npos) << ikllm_last_error();
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_INCOMPLETE);  // still at the start
    std::vector<float> logits((size_t)f.n_vocab, 0.f);
    logits[(size_t)b] = 100.f;
    ikllm_token t = -1;
    const ikllm_status st = ikllm_sampler_sample_logits(s, logits.data(), f.n_vocab, &t);
    EXPECT_EQ(st, IKLLM_ERR_GRAMMAR) << ikllm_status_name(st);  // the mask walk steps into "b" too
    EXPECT_EQ(ikllm_sampler_reset(s), IKLLM_OK);
    const ikllm_token a = f.token_of("a");
    EXPECT_EQ(ikllm_sampler_accept(s, &a, 1), IKLLM_OK);
    EXPECT_EQ(f.state(s), IKLLM_GRAMMAR_DONE);
    ikllm_sampler_free(s);
}
