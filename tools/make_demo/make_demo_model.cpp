// Writes the interim demo model: a one-layer llama GGUF (F16) whose weights are built by hand
// so that greedy decoding recites the opening of "A Tale of Two Cities" (Charles Dickens,
// 1859, public domain), one clause per token. The attention block runs on small random
// weights but its output projection is zero; embeddings are one-hot and the LM head maps
// each token to its successor. It exercises the whole engine (tokenizer, batch decode, KV
// cache, sampling, streaming) with readable output until the trained demo model exists.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "gguf/gguf_writer.h"

using namespace ikllm;

static const char* kClauses[] = {
    "It was the best of times,", "it was the worst of times,", "it was the age of wisdom,",
    "it was the age of foolishness,", "it was the epoch of belief,", "it was the epoch of incredulity,",
    "it was the season of Light,", "it was the season of Darkness,", "it was the spring of hope,",
    "it was the winter of despair,", "we had everything before us,", "we had nothing before us,",
    "we were all going direct to Heaven,", "we were all going direct the other way --",
    "in short, the period was so far like the present period,",
    "that some of its noisiest authorities insisted on its being received,",
    "for good or for evil, in the superlative degree of comparison only.",
};

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: ikllm-make-demo OUT.gguf\n");
        return 2;
    }
    // Vocabulary: <unk> <s> </s>, 256 byte tokens, one token per clause ("▁"-prefixed words).
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<float> scores = {0, 0, 0};
    std::vector<int32_t> types = {2, 3, 3};  // UNKNOWN, CONTROL, CONTROL
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        scores.push_back(0);
        types.push_back(6);  // BYTE
    }
    const int first_clause = (int)tokens.size();
    const int n_clauses = (int)(sizeof(kClauses) / sizeof(kClauses[0]));
    for (int c = 0; c < n_clauses; ++c) {
        std::string piece;
        for (const char* p = kClauses[c]; *p; ++p) piece += *p == ' ' ? std::string("\xE2\x96\x81") : std::string(1, *p);
        tokens.push_back("\xE2\x96\x81" + piece);
        scores.push_back(-(float)c);
        types.push_back(1);  // NORMAL
    }
    const int V = (int)tokens.size();
    const int E = (V + 31) / 32 * 32, H = 4, D = E / H, FF = 64;

    // successor(i): every non-clause token starts the recitation; the last clause ends it.
    auto succ = [&](int i) {
        if (i < first_clause) return first_clause;
        return i + 1 < V ? i + 1 : 2;
    };
    auto f16 = [](const std::vector<float>& v) {
        std::vector<uint16_t> h(v.size());
        for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
        return h;
    };
    std::mt19937 rng(1859);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    auto randn = [&](size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = nd(rng);
        return v;
    };

    gguf::Writer w;
    w.set_str("general.architecture", "llama");
    w.set_str("general.name", "ikllm interim demo (recites Dickens)");
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.context_length", 512);
    w.set_u32("llama.embedding_length", E);
    w.set_u32("llama.feed_forward_length", FF);
    w.set_u32("llama.attention.head_count", H);
    w.set_u32("llama.attention.head_count_kv", H);
    w.set_u32("llama.rope.dimension_count", D);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_str("tokenizer.ggml.model", "llama");
    w.set_str_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);

    std::vector<float> emb((size_t)E * V, 0.0f), out((size_t)E * V, 0.0f);
    for (int i = 0; i < V; ++i) emb[(size_t)i * E + i] = 1.0f;         // one-hot rows
    for (int i = 0; i < V; ++i) out[(size_t)succ(i) * E + i] = 1.0f;   // row j reads token i
    auto add16 = [&](const std::string& name, std::vector<int64_t> ne, const std::vector<float>& v) {
        auto h = f16(v);
        w.add_tensor(name, 1, ne, h.data(), h.size() * 2);
    };
    auto add32 = [&](const std::string& name, std::vector<int64_t> ne, const std::vector<float>& v) {
        w.add_tensor(name, 0, ne, v.data(), v.size() * 4);
    };
    add16("token_embd.weight", {E, V}, emb);
    add32("output_norm.weight", {E}, std::vector<float>(E, 1.0f));
    add16("output.weight", {E, V}, out);
    add32("blk.0.attn_norm.weight", {E}, std::vector<float>(E, 1.0f));
    add16("blk.0.attn_q.weight", {E, E}, randn((size_t)E * E));
    add16("blk.0.attn_k.weight", {E, E}, randn((size_t)E * E));
    add16("blk.0.attn_v.weight", {E, E}, randn((size_t)E * E));
    add16("blk.0.attn_output.weight", {E, E}, std::vector<float>((size_t)E * E, 0.0f));
    add32("blk.0.ffn_norm.weight", {E}, std::vector<float>(E, 1.0f));
    add16("blk.0.ffn_gate.weight", {E, FF}, randn((size_t)E * FF));
    add16("blk.0.ffn_up.weight", {E, FF}, randn((size_t)E * FF));
    add16("blk.0.ffn_down.weight", {FF, E}, std::vector<float>((size_t)E * FF, 0.0f));
    w.write(argv[1]);
    return 0;
}
