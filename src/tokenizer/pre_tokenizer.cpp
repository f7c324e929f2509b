// tokenizer.ggml.pre name table and the regex-list driver (docs/tokenizers.md §5.1, §5.3).
#include "tokenizer/pre_tokenizer.h"

#include <string>

#include "core/error.h"
#include "tokenizer/unicode_data.h"

namespace ikllm::tok {
namespace {

struct PreName {
    const char* name;
    PreSet set;
    bool clean_spaces, ignore_merges, add_bos;
};

constexpr PreName kPreNames[] = {
    {"default", PreSet::default_set, true, false, false},
    {"llama3", PreSet::llama3, true, true, true},
    {"llama-v3", PreSet::llama3, true, true, true},
    {"llama-bpe", PreSet::llama3, true, true, true},
    {"laguna", PreSet::llama3, true, true, true},
    {"falcon3", PreSet::llama3, true, true, true},
    {"falcon-h1", PreSet::llama3, true, true, true},
    {"pixtral", PreSet::llama3, true, true, true},
    {"midm-2.0", PreSet::llama3, true, true, true},
    {"lfm2", PreSet::llama3, true, true, true},
    {"jina-v5-nano", PreSet::llama3, true, true, true},
    {"dbrx", PreSet::llama3, true, false, false},
    {"smaug-bpe", PreSet::llama3, true, false, false},
    {"qwen2", PreSet::qwen2, false, false, false},
    {"deepseek-r1-qwen", PreSet::qwen2, false, false, false},
    {"kormo", PreSet::qwen2, false, false, false},
    {"openpangu", PreSet::qwen2, false, false, false},
    {"f2llmv2", PreSet::qwen2, false, false, false},
    {"megrez", PreSet::qwen2, true, false, false},
    {"stablelm2", PreSet::qwen2, true, false, false},
    {"deepseek-llm", PreSet::deepseek_llm, false, false, false},
    {"deepseek-coder", PreSet::deepseek_coder, false, false, false},
    {"deepseek-v3", PreSet::deepseek3, false, false, false},
    {"falcon", PreSet::falcon, true, false, false},
    {"gpt-2", PreSet::gpt2, true, false, false},
    {"phi-2", PreSet::gpt2, true, false, false},
    {"jina-es", PreSet::gpt2, true, false, false},
    {"jina-de", PreSet::gpt2, true, false, false},
    {"gigachat", PreSet::gpt2, true, false, false},
    {"jina-v2-es", PreSet::gpt2, true, false, false},
    {"jina-v2-de", PreSet::gpt2, true, false, false},
    {"a.x-4.0", PreSet::gpt2, true, false, false},
    {"mellum", PreSet::gpt2, true, false, false},
    {"modern-bert", PreSet::gpt2, true, false, false},
    {"exaone4", PreSet::gpt2, true, false, false},
    {"mpt", PreSet::gpt2, true, false, false},
    {"olmo", PreSet::gpt2, true, false, false},
    {"jais", PreSet::gpt2, true, false, false},
    {"starcoder", PreSet::starcoder, true, false, false},
    {"refact", PreSet::starcoder, true, false, false},
    {"command-r", PreSet::starcoder, false, false, false},
    {"cohere2_moe", PreSet::starcoder, false, false, false},
    {"smollm", PreSet::starcoder, false, false, false},
    {"codeshell", PreSet::starcoder, true, false, false},
    {"exaone", PreSet::starcoder, true, false, false},
    {"minerva-7b", PreSet::starcoder, true, false, false},
    {"mellum2", PreSet::starcoder, true, false, false},
};

// Applies one regex to every segment: matches and the stretches between them become pieces.
void split_step(const uint32_t* c, const std::vector<Span>& in, std::vector<Span>& out, MatchFn fn) {
    out.clear();
    for (const Span& s : in) {
        size_t pending = s.b, pos = s.b;
        while (pos < s.e) {
            const size_t n = fn(c, pos, s.e);
            if (n == 0) { ++pos; continue; }
            if (pending < pos) out.push_back({uint32_t(pending), uint32_t(pos)});
            out.push_back({uint32_t(pos), uint32_t(pos + n)});
            pos += n;
            pending = pos;
        }
        if (pending < s.e) out.push_back({uint32_t(pending), s.e});
    }
}

// \s+$ : the whitespace run at the end of each segment (written directly to stay linear).
void split_trailing_space(const uint32_t* c, const std::vector<Span>& in, std::vector<Span>& out) {
    out.clear();
    for (const Span& s : in) {
        uint32_t t = s.e;
        while (t > s.b && (c[t - 1] < 128 ? (c[t - 1] == ' ' || (c[t - 1] >= 9 && c[t - 1] <= 13))
                                          : (cpt_flags(c[t - 1]) & kSpace)))
            --t;
        if (t > s.b) out.push_back({s.b, t});
        if (t < s.e) out.push_back({t, s.e});
    }
}

constexpr MatchFn kTrailingSpace = nullptr;  // marker for split_trailing_space

struct SetDef {
    const MatchFn* steps;
    size_t n;
};

SetDef set_def(PreSet set) {
    using namespace match;
    static constexpr MatchFn kDefault[] = {default_punct, gpt2, numbers, three_digits};
    static constexpr MatchFn kGpt2[] = {gpt2};
    static constexpr MatchFn kLlama3[] = {llama3};
    static constexpr MatchFn kQwen2[] = {qwen2};
    static constexpr MatchFn kDsLlm[] = {cr_or_lf, dsllm_letters, dsllm_punct, kTrailingSpace, cjk, numbers};
    static constexpr MatchFn kDsCoder[] = {cr_or_lf, space_letters, space_punct, cjk, one_number};
    static constexpr MatchFn kDs3[] = {numbers_1_3, ds3_cjk, ds3_main};
    static constexpr MatchFn kFalcon[] = {falcon_punct, gpt2, three_digits};
    static constexpr MatchFn kStarcoder[] = {one_number, gpt2};
#define IKLLM_SET(a) SetDef{a, sizeof(a) / sizeof(a[0])}
    switch (set) {
        case PreSet::default_set: return IKLLM_SET(kDefault);
        case PreSet::gpt2: return IKLLM_SET(kGpt2);
        case PreSet::llama3: return IKLLM_SET(kLlama3);
        case PreSet::qwen2: return IKLLM_SET(kQwen2);
        case PreSet::deepseek_llm: return IKLLM_SET(kDsLlm);
        case PreSet::deepseek_coder: return IKLLM_SET(kDsCoder);
        case PreSet::deepseek3: return IKLLM_SET(kDs3);
        case PreSet::falcon: return IKLLM_SET(kFalcon);
        case PreSet::starcoder: return IKLLM_SET(kStarcoder);
    }
#undef IKLLM_SET
    return SetDef{kGpt2, 1};
}

}  // namespace

PreConfig resolve_pre(std::string_view name) {
    if (name.empty()) return PreConfig{};
    for (const PreName& p : kPreNames)
        if (name == p.name) return PreConfig{p.set, p.clean_spaces, p.ignore_merges, p.add_bos};
    fail(Status::unsupported, "unknown pre-tokenizer type '" + std::string(name) + "'");
}

void pre_tokenize(PreSet set, const std::vector<uint32_t>& cpts, std::vector<Span>& words) {
    words.clear();
    if (cpts.empty()) return;
    std::vector<Span> tmp;
    words.push_back({0, uint32_t(cpts.size())});
    const SetDef def = set_def(set);
    for (size_t i = 0; i < def.n; ++i) {
        if (def.steps[i] == kTrailingSpace) split_trailing_space(cpts.data(), words, tmp);
        else split_step(cpts.data(), words, tmp, def.steps[i]);
        words.swap(tmp);
    }
}

}  // namespace ikllm::tok
