// `ikllm run` (stream generated text) and `ikllm logits` (dump logits for reference checks).
#include <algorithm>
#include <fstream>

#include "cli.h"

namespace cli {

int cmd_run(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--no-mmap", "--no-bos", "--special"});
    if (!a.has("-p") && !a.has("-f")) die("run: missing -p PROMPT");
    Loaded L;
    load(a, L);
    const std::string prompt = a.has("-p") ? a.get("-p") : read_file(a.get("-f"));
    const int n_predict = (int)a.get_int("-n", 128);

    ikllm_options* so = session_options(a);
    ikllm_session* s = nullptr;
    ikllm_status st = ikllm_session_create(L.model, so, &s);
    ikllm_options_free(so);
    check(st, "session");

    // Structured output: stdout then carries only the generated text (no prompt echo, no newline).
    const bool constrained = a.has("--grammar") || a.has("--json-schema");
    ikllm_sampler* smp = make_sampler(a, L.model);

    uint32_t flags = a.has("--no-bos") ? 0 : IKLLM_TOKENIZE_ADD_SPECIAL;
    if (a.has("--special")) flags |= IKLLM_TOKENIZE_PARSE_SPECIAL;
    const std::vector<int32_t> toks = tokenize(L.model, prompt, flags);
    if (toks.empty()) die("run: the prompt produced no tokens");
    // The prompt counts for penalties but is not part of the grammar's text.
    check(ikllm_sampler_accept_v2(smp, toks.data(), toks.size(), IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR), "sampler");

    ikllm_detok* dt = nullptr;
    // Generated text continues the prompt, so its first piece keeps its leading space.
    check(ikllm_detok_create(L.model, IKLLM_DETOK_KEEP_LEADING_SPACE, &dt), "detokenizer");
    if (!constrained) std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    check(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, (int32_t)toks.size(), 0), "decode");
    const char* text;
    size_t len;
    for (int i = 0; i < n_predict; ++i) {
        int32_t tok;
        check(ikllm_sampler_sample(smp, s, -1, &tok), "sample");
        if (ikllm_token_is_eog(L.model, tok)) break;
        check(ikllm_detok_push(dt, tok, &text, &len), "detokenize");
        std::fwrite(text, 1, len, stdout);
        std::fflush(stdout);
        int32_t gs = IKLLM_GRAMMAR_NONE;
        check(ikllm_sampler_grammar_state(smp, &gs), "grammar");
        if (gs == IKLLM_GRAMMAR_DONE) break;  // only end of generation could follow
        st = ikllm_session_decode(s, &tok, nullptr, nullptr, nullptr, 1, 0);
        if (st == IKLLM_CONTEXT_FULL) break;
        check(st, "decode");
    }
    check(ikllm_detok_flush(dt, &text, &len), "detokenize");
    std::fwrite(text, 1, len, stdout);
    if (!constrained) std::printf("\n");
    ikllm_detok_free(dt);
    ikllm_sampler_free(smp);
    ikllm_session_free(s);
    return 0;
}

static void write_f32(std::ofstream& f, const float* p, size_t n, const std::string& path) {
    f.write(reinterpret_cast<const char*>(p), (std::streamsize)(n * sizeof(float)));
    if (!f) die("cannot write '" + path + "'");
}

int cmd_logits(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--no-mmap"});
    if (!a.has("--tokens") || !a.has("--out")) die("logits: needs --tokens IDS_FILE --out OUT.f32");
    if (a.has("--then") != a.has("--then-out")) die("logits: --then and --then-out go together");
    Loaded L;
    load(a, L);
    const std::vector<int32_t> ids = read_ids(a.get("--tokens"));
    if (ids.empty()) die("logits: no token ids in '" + a.get("--tokens") + "'");
    const std::vector<int32_t> then = a.has("--then") ? read_ids(a.get("--then")) : std::vector<int32_t>();
    const int ctx = (int)a.get_int("-c", 512);
    ikllm_options* so = session_options(a, 1, ctx);
    // The whole prompt is one batch, as the reference computed it.
    check(ikllm_options_set_int(so, "n_batch", (int64_t)std::max<size_t>(ids.size(), 1)), "option n_batch");
    ikllm_session* s = nullptr;
    ikllm_status st = ikllm_session_create(L.model, so, &s);
    ikllm_options_free(so);
    check(st, "session");
    const int32_t n_vocab = ikllm_model_n_vocab(L.model);

    // --logits-from N: logits of positions N.. only (as `perplexity` requests them: some kernels'
    // numerics depend on the number of rows of a product, the LM head's included).
    const int64_t from = a.get_int("--logits-from", 0);
    if (from < 0 || from >= (int64_t)ids.size()) die("logits: --logits-from must be in [0, number of tokens)");
    std::vector<int32_t> want(ids.size(), 0);
    for (size_t i = (size_t)from; i < ids.size(); ++i) want[i] = 1;
    check(ikllm_session_decode(s, ids.data(), nullptr, nullptr, want.data(), (int32_t)ids.size(), 0), "decode");
    {
        std::ofstream f(a.get("--out"), std::ios::binary);
        for (size_t i = (size_t)from; i < ids.size(); ++i) {
            const float* lg;
            check(ikllm_session_logits(s, (int32_t)i, &lg, nullptr), "logits");
            write_f32(f, lg, n_vocab, a.get("--out"));
        }
    }
    if (!then.empty()) {
        std::ofstream f(a.get("--then-out"), std::ios::binary);
        for (int32_t tok : then) {
            check(ikllm_session_decode(s, &tok, nullptr, nullptr, nullptr, 1, 0), "decode");
            const float* lg;
            check(ikllm_session_logits(s, -1, &lg, nullptr), "logits");
            write_f32(f, lg, n_vocab, a.get("--then-out"));
        }
    }
    ikllm_session_free(s);
    return 0;
}

}  // namespace cli
