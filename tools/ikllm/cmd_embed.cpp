// `ikllm embed`: one pooled embedding per input (or per-token final hidden states with
// --pooling none), printed as JSON or TSV.
#include <algorithm>

#include "cli.h"

namespace cli {

namespace {

struct Input {
    std::vector<int32_t> ids;
};

std::vector<int32_t> tokenize(ikllm_model* m, const std::string& text, uint32_t flags) {
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(m, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st != IKLLM_OK && st != IKLLM_ERR_BUFFER_TOO_SMALL) check(st, "tokenize");
    std::vector<int32_t> ids(n);
    check(ikllm_tokenize(m, text.data(), text.size(), flags, ids.data(), ids.size(), &n), "tokenize");
    return ids;
}

void print_row(const float* v, int32_t n, bool json) {
    for (int32_t j = 0; j < n; ++j) std::printf(json ? (j ? ",%.9g" : "%.9g") : "\t%.9g", v[j]);
}

}  // namespace

int cmd_embed(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--no-mmap", "--whole", "--normalize", "--no-normalize", "--no-bos",
                                "--special"});
    if (a.has("-f") == a.has("--tokens")) die("embed: needs -f TEXT_FILE (one input per line, or --whole) or --tokens IDS");
    if (a.has("--normalize") && a.has("--no-normalize")) die("embed: --normalize and --no-normalize exclude each other");
    const std::string format = a.get("--format", "json");
    if (format != "json" && format != "tsv") die("embed: --format must be json or tsv");
    const bool json = format == "json";
    Loaded L;
    load(a, L);

    std::vector<Input> inputs;
    if (a.has("--tokens")) {
        inputs.push_back({read_ids(a.get("--tokens"))});
    } else {
        uint32_t flags = a.has("--no-bos") ? 0 : IKLLM_TOKENIZE_ADD_SPECIAL;
        if (a.has("--special")) flags |= IKLLM_TOKENIZE_PARSE_SPECIAL;
        const std::string text = read_file(a.get("-f"));
        std::vector<std::string> texts;
        if (a.has("--whole")) {
            texts.push_back(text);
        } else {
            size_t start = 0;
            while (start <= text.size()) {
                size_t end = text.find('\n', start);
                if (end == std::string::npos) end = text.size();
                std::string line = text.substr(start, end - start);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (!line.empty()) texts.push_back(line);  // blank lines are skipped
                start = end + 1;
            }
        }
        for (const std::string& t : texts) inputs.push_back({tokenize(L.model, t, flags)});
    }
    size_t longest = 0;
    for (const Input& in : inputs) {
        if (in.ids.empty()) die("embed: an input has no tokens");
        longest = std::max(longest, in.ids.size());
    }
    if (inputs.empty()) die("embed: no input");

    // Several inputs share one decode call, each its own sequence; a sequence is pooled over
    // the tokens of one call, so every input fits one call whole.
    const int32_t budget = (int32_t)std::max<size_t>(longest, (size_t)a.get_int("-c", 512));
    const int32_t n_seq = (int32_t)std::min<size_t>(inputs.size(), 64);
    ikllm_options* so = session_options(a, n_seq, budget);
    check(ikllm_options_set_int(so, "n_ctx", budget), "option n_ctx");
    if (!a.has("-b")) check(ikllm_options_set_int(so, "n_batch", budget), "option n_batch");
    check(ikllm_options_set_int(so, "embeddings", 1), "option embeddings");
    if (a.has("--pooling")) check(ikllm_options_set_string(so, "pooling", a.get("--pooling").c_str()), "option --pooling");
    if (a.has("--no-normalize")) check(ikllm_options_set_int(so, "embd_normalize", 0), "option embd_normalize");
    ikllm_session* s = nullptr;
    ikllm_status st = ikllm_session_create(L.model, so, &s);
    ikllm_options_free(so);
    check(st, "session");
    const int32_t pooling = ikllm_session_pooling(s);
    const int32_t n_embd = ikllm_model_n_embd(L.model);
    static const char* kPoolNames[] = {"none", "mean", "cls", "last"};

    if (json)
        std::printf("{\"n_embd\": %d, \"pooling\": \"%s\", \"normalized\": %s, \"data\": [", n_embd,
                    kPoolNames[pooling], pooling != IKLLM_POOLING_NONE && !a.has("--no-normalize") ? "true" : "false");
    size_t next = 0;
    while (next < inputs.size()) {
        // Pack inputs into one call: sequences 0..k-1.
        std::vector<int32_t> tokens, seqs;
        std::vector<size_t> first;  // batch index of each packed input's first token
        size_t end = next;
        while (end < inputs.size() && (int32_t)first.size() < n_seq &&
               tokens.size() + inputs[end].ids.size() <= (size_t)budget) {
            first.push_back(tokens.size());
            tokens.insert(tokens.end(), inputs[end].ids.begin(), inputs[end].ids.end());
            seqs.insert(seqs.end(), inputs[end].ids.size(), (int32_t)(end - next));
            ++end;
        }
        std::vector<int32_t> want(tokens.size(), 0);  // no logits: the LM head is skipped
        check(ikllm_session_decode(s, tokens.data(), nullptr, seqs.data(), want.data(), (int32_t)tokens.size(), 0),
              "decode");
        for (size_t k = 0; k < end - next; ++k) {
            const size_t idx = next + k;
            if (json) std::printf("%s\n  {\"index\": %zu, \"n_tokens\": %zu, ", idx ? "," : "", idx, inputs[idx].ids.size());
            if (pooling == IKLLM_POOLING_NONE) {
                if (json) std::printf("\"hidden\": [");
                for (size_t t = 0; t < inputs[idx].ids.size(); ++t) {
                    const float* h = nullptr;
                    check(ikllm_session_hidden_state(s, (int32_t)(first[k] + t), &h, nullptr), "hidden state");
                    if (json) std::printf(t ? ", [" : "[");
                    else std::printf("%zu\t%zu", idx, t);
                    print_row(h, n_embd, json);
                    std::printf(json ? "]" : "\n");
                }
                if (json) std::printf("]}");
            } else {
                const float* e = nullptr;
                check(ikllm_session_embeddings(s, (int32_t)k, &e, nullptr), "embedding");
                if (json) std::printf("\"embedding\": [");
                else std::printf("%zu", idx);
                print_row(e, n_embd, json);
                std::printf(json ? "]}" : "\n");
            }
        }
        check(ikllm_session_clear(s), "clear");
        next = end;
    }
    if (json) std::printf("\n]}\n");
    ikllm_session_free(s);
    return 0;
}

}  // namespace cli
