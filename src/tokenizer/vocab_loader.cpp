// GGUF -> VocabData (docs/tokenizers.md §1, §3, §4).
#include <cmath>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace ikllm::tok {
namespace {

constexpr const char* kPrefix = "tokenizer.ggml.";

std::string key(const char* k) { return std::string(kPrefix) + k; }

[[noreturn]] void bad_vocab(const std::string& msg) { fail(Status::invalid_file, "vocab: " + msg); }

const gguf::Value* find_typed(const gguf::File& f, const std::string& k, gguf::ValueType t) {
    const gguf::Value* v = f.find(k);
    if (v && v->type != t)
        bad_vocab("key " + k + " has wrong type " + gguf::value_type_name(v->type) + " (expected " +
            gguf::value_type_name(t) + ")");
    return v;
}

const gguf::Value* find_array(const gguf::File& f, const std::string& k, gguf::ValueType elem) {
    const gguf::Value* v = find_typed(f, k, gguf::ValueType::array);
    if (v && v->elem_type != elem)
        bad_vocab("key " + k + " is an array of " + gguf::value_type_name(v->elem_type) + " (expected " +
            gguf::value_type_name(elem) + ")");
    return v;
}

// An id key applies only when it is an integer within the vocabulary (§1: out of range is ignored).
void read_id(const gguf::File& f, const char* name, int32_t n_tokens, int32_t& id) {
    const gguf::Value* v = f.find(key(name));
    if (!v) return;
    if (!v->is_integer()) bad_vocab("key " + key(name) + " is not an integer");
    const bool is_signed = v->type == gguf::ValueType::i8 || v->type == gguf::ValueType::i16 ||
                           v->type == gguf::ValueType::i32 || v->type == gguf::ValueType::i64;
    const int64_t x = is_signed ? v->i : (v->u > uint64_t(INT32_MAX) ? -1 : int64_t(v->u));
    if (x >= 0 && x < n_tokens) id = int32_t(x);
}

void read_flag(const gguf::File& f, const char* name, bool& flag) {
    if (const gguf::Value* v = find_typed(f, key(name), gguf::ValueType::boolean)) flag = v->u != 0;
}

}  // namespace

void apply_vocab_defaults(VocabData& v) {
    SpecialIds& ids = v.ids;
    ids = SpecialIds{};
    v.add_bos = v.add_eos = v.add_sep = v.add_space_prefix = false;
    switch (v.model) {
        case VocabModel::spm:
            ids.bos = 1; ids.eos = 2; ids.unk = 0;
            v.add_bos = true;
            v.add_space_prefix = true;
            break;
        case VocabModel::bpe:
            ids.bos = 11; ids.eos = 11;  // historical Falcon default (§3)
            v.add_bos = resolve_pre(v.pre).add_bos_default;
            break;
        case VocabModel::wpm:
            ids.bos = 101; ids.unk = 100; ids.sep = 102; ids.pad = 0; ids.mask = 103;
            v.add_bos = true;
            v.add_sep = true;
            break;
        case VocabModel::none:
            break;
    }
    // Defaults that do not exist in a small vocabulary are dropped.
    const int32_t n = int32_t(v.tokens.size());
    for (int32_t* p : {&ids.bos, &ids.eos, &ids.unk, &ids.sep, &ids.pad, &ids.mask})
        if (*p >= n) *p = -1;
}

VocabData load_vocab(const gguf::File& f) {
    VocabData v;
    const gguf::Value* model = find_typed(f, key("model"), gguf::ValueType::string);
    if (!model) bad_vocab("missing key " + key("model"));
    v.model_name = model->s;
    if (v.model_name == "llama") v.model = VocabModel::spm;
    else if (v.model_name == "gpt2") v.model = VocabModel::bpe;
    else if (v.model_name == "bert") v.model = VocabModel::wpm;
    else if (v.model_name == "none" || v.model_name == "no_vocab") v.model = VocabModel::none;
    else if (v.model_name == "t5" || v.model_name == "rwkv" || v.model_name == "plamo2" ||
             v.model_name == "gemma4")
        fail(Status::unsupported, "vocab: tokenizer model '" + v.model_name + "' is not supported");
    else
        bad_vocab("unknown tokenizer '" + v.model_name + "'");

    if (const gguf::Value* p = find_typed(f, "general.name", gguf::ValueType::string)) v.general_name = p->s;
    if (const gguf::Value* p = find_typed(f, "tokenizer.chat_template", gguf::ValueType::string))
        v.chat_template = p->s;
    if (v.model == VocabModel::none) return v;

    // Selects the pre-tokenizer of gpt2 vocabularies; other models only use it for quirks.
    if (const gguf::Value* p = find_typed(f, key("pre"), gguf::ValueType::string)) v.pre = p->s;

    const gguf::Value* toks = find_array(f, key("tokens"), gguf::ValueType::string);
    if (!toks) bad_vocab("missing key " + key("tokens"));
    if (toks->strs.empty()) bad_vocab("empty token list");
    if (toks->strs.size() > size_t(INT32_MAX)) bad_vocab("too many tokens");
    v.tokens = toks->strs;
    const size_t n = v.tokens.size();
    for (size_t i = 0; i < n; ++i)
        if (v.tokens[i].empty()) v.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";

    if (const gguf::Value* s = find_array(f, key("scores"), gguf::ValueType::f32)) {
        if (s->nums.size() < n)
            bad_vocab("scores has " + std::to_string(s->nums.size()) + " entries for " + std::to_string(n) + " tokens");
        v.scores.resize(n);
        for (size_t i = 0; i < n; ++i) {
            v.scores[i] = float(s->nums[i]);
            if (std::isnan(v.scores[i])) bad_vocab("score of token " + std::to_string(i) + " is NaN");
        }
    }
    if (const gguf::Value* t = find_array(f, key("token_type"), gguf::ValueType::i32)) {
        if (t->nums.size() < n)
            bad_vocab("token_type has " + std::to_string(t->nums.size()) + " entries for " + std::to_string(n) +
                " tokens");
        v.token_types.resize(n);
        for (size_t i = 0; i < n; ++i) v.token_types[i] = int32_t(t->nums[i]);
    }
    if (v.model == VocabModel::bpe) {
        const gguf::Value* m = find_array(f, key("merges"), gguf::ValueType::string);
        if (!m) bad_vocab("missing key " + key("merges") + " for a gpt2 tokenizer");
        v.merges = m->strs;
    }

    apply_vocab_defaults(v);  // throws unsupported for an unknown pre name
    const int32_t nt = int32_t(n);
    SpecialIds& ids = v.ids;
    read_id(f, "bos_token_id", nt, ids.bos);
    read_id(f, "eos_token_id", nt, ids.eos);
    read_id(f, "eot_token_id", nt, ids.eot);
    read_id(f, "eom_token_id", nt, ids.eom);
    read_id(f, "unknown_token_id", nt, ids.unk);
    read_id(f, "seperator_token_id", nt, ids.sep);
    read_id(f, "padding_token_id", nt, ids.pad);
    read_id(f, "mask_token_id", nt, ids.mask);
    read_id(f, "prefix_token_id", nt, ids.fim_pre);  // deprecated aliases first, new names win
    read_id(f, "suffix_token_id", nt, ids.fim_suf);
    read_id(f, "middle_token_id", nt, ids.fim_mid);
    read_id(f, "fim_pre_token_id", nt, ids.fim_pre);
    read_id(f, "fim_suf_token_id", nt, ids.fim_suf);
    read_id(f, "fim_mid_token_id", nt, ids.fim_mid);
    read_id(f, "fim_pad_token_id", nt, ids.fim_pad);
    read_id(f, "fim_rep_token_id", nt, ids.fim_rep);
    read_id(f, "fim_sep_token_id", nt, ids.fim_sep);
    read_flag(f, "add_bos_token", v.add_bos);
    read_flag(f, "add_eos_token", v.add_eos);
    read_flag(f, "add_sep_token", v.add_sep);
    read_flag(f, "add_space_prefix", v.add_space_prefix);
    return v;
}

}  // namespace ikllm::tok
