// Tokenizer construction: validation, token attributes (docs/tokenizers.md §2), lookup tables.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <unordered_set>

#include "core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace ikllm::tok {
namespace {

[[noreturn]] void bad(const std::string& msg) { fail(Status::invalid_file, "vocab: " + msg); }

uint32_t attr_from_type(int32_t t) {
    switch (t) {
        case 1: return kAttrNormal;
        case 2: return kAttrUnknown;
        case 3: return kAttrControl;
        case 4: return kAttrUserDefined;
        case 5: return kAttrUnused;
        case 6: return kAttrByte;
        default: return 0;  // UNDEFINED
    }
}

void set_type(uint32_t& a, uint32_t type_bit) { a = (a & ~uint32_t(kAttrTypeMask)) | type_bit; }

std::string ascii_lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return s;
}

// Texts that identify EOT / EOM / FIM tokens when no id key names them (§2).
constexpr std::initializer_list<const char*> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<end_of_utterance>"};
constexpr std::initializer_list<const char*> kEomTexts = {"<|eom_id|>"};
constexpr std::initializer_list<const char*> kFimPreTexts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
    "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::initializer_list<const char*> kFimSufTexts = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
    "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::initializer_list<const char*> kFimMidTexts = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
    "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::initializer_list<const char*> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"};
constexpr std::initializer_list<const char*> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                                             "<REPO>", "<reponame>"};
constexpr std::initializer_list<const char*> kFimSepTexts = {"<|file_sep|>", "<file_sep>", "<FILE_SEP>"};
// End-of-generation texts (forced CONTROL).
constexpr std::initializer_list<const char*> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};

int32_t lookup_cb(const void* ctx, std::string_view s) { return static_cast<const Tokenizer::Impl*>(ctx)->lookup(s); }

}  // namespace

void Tokenizer::Impl::check_id(int32_t id) const {
    if (id < 0 || size_t(id) >= text.size())
        fail(Status::invalid_argument, "token id " + std::to_string(id) + " out of range [0, " +
                                           std::to_string(text.size()) + ")");
}

Tokenizer::~Tokenizer() = default;

Tokenizer::Tokenizer(const VocabData& d) {
    auto im = std::make_shared<Impl>();
    Impl& v = *im;
    v.model = d.model;
    v.pre_name = d.pre;
    if (v.model == VocabModel::bpe) v.pre = resolve_pre(d.pre);
    v.add_bos = d.add_bos;
    v.add_eos = d.add_eos;
    v.add_sep = d.add_sep;
    v.add_space_prefix = d.add_space_prefix;
    v.clean_spaces = v.model == VocabModel::bpe ? v.pre.clean_spaces : v.model == VocabModel::wpm;
    v.byte_token.fill(-1);

    const size_t n = d.tokens.size();
    if (v.model != VocabModel::none && n == 0) bad("no tokens");
    if (n > size_t(INT32_MAX)) bad("too many tokens");
    if (!d.scores.empty() && d.scores.size() != n) bad("scores and tokens differ in length");
    if (!d.token_types.empty() && d.token_types.size() != n) bad("token types and tokens differ in length");

    v.text = d.tokens;
    v.score = d.scores.empty() ? std::vector<float>(n, 0.0f) : d.scores;
    v.attr.resize(n);
    v.to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]";
        v.attr[i] = d.token_types.empty() ? kAttrNormal : attr_from_type(d.token_types[i]);
    }
    for (size_t i = 0; i < n; ++i) {
        auto [it, inserted] = v.to_id.emplace(std::string_view(v.text[i]), int32_t(i));
        if (!inserted)
            bad("tokens " + std::to_string(it->second) + " and " + std::to_string(i) + " have the same text '" +
                v.text[i] + "'");
    }

    v.ids = d.ids;
    SpecialIds& ids = v.ids;
    for (int32_t id : {ids.bos, ids.eos, ids.unk, ids.sep, ids.pad, ids.mask, ids.eot, ids.eom, ids.fim_pre,
                       ids.fim_suf, ids.fim_mid, ids.fim_pad, ids.fim_rep, ids.fim_sep})
        if (id < -1 || id >= int32_t(n)) bad("special token id " + std::to_string(id) + " out of range");

    // Name-based strip flags (§2).
    const std::string gname = ascii_lower(d.general_name);
    if (gname.find("phi-3") != std::string::npos || gname.find("phi3") != std::string::npos) {
        for (size_t i = 0; i < n; ++i) {
            const std::string& t = v.text[i];
            if (t == "<unk>" || t == "<s>" || t == "<|endoftext|>") continue;
            if ((v.attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) || t == "</s>") v.attr[i] |= kAttrRstrip;
        }
    }
    if (d.pre == "jina-v2-de" || d.pre == "jina-v2-es" || d.pre == "jina-v2-code")
        if (int32_t m = v.lookup("<mask>"); m >= 0) v.attr[size_t(m)] |= kAttrLstrip;
    // gpt-oss channel markers are plain user-defined text.
    for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
        if (int32_t id = v.lookup(t); id >= 0) set_type(v.attr[size_t(id)], kAttrUserDefined);

    // EOT / EOM / FIM detection by text when no key named them; detected tokens become CONTROL.
    auto detect = [&](int32_t& slot, std::initializer_list<const char*> texts) {
        if (slot >= 0) return;
        for (const char* t : texts)
            if (int32_t id = v.lookup(t); id >= 0) {
                slot = id;
                set_type(v.attr[size_t(id)], kAttrControl);
                return;
            }
    };
    detect(ids.eot, kEotTexts);
    detect(ids.eom, kEomTexts);
    detect(ids.fim_pre, kFimPreTexts);
    detect(ids.fim_suf, kFimSufTexts);
    detect(ids.fim_mid, kFimMidTexts);
    detect(ids.fim_pad, kFimPadTexts);
    detect(ids.fim_rep, kFimRepTexts);
    detect(ids.fim_sep, kFimSepTexts);

    for (size_t i = 0; i < n; ++i)
        if ((v.attr[i] & kAttrControl) && v.text[i].find("unused") != std::string::npos) v.attr[i] |= kAttrUnused;

    // End-of-generation set.
    std::unordered_set<int32_t> eog;
    for (int32_t id : {ids.eos, ids.eot, ids.eom, ids.fim_pad, ids.fim_rep, ids.fim_sep})
        if (id >= 0) eog.insert(id);
    for (const char* t : kEogTexts)
        if (int32_t id = v.lookup(t); id >= 0) {
            eog.insert(id);
            set_type(v.attr[size_t(id)], kAttrControl);
        }
    if (v.lookup("<|return|>") >= 0 && v.lookup("<|call|>") >= 0)
        if (int32_t id = v.lookup("<|end|>"); id >= 0) eog.erase(id);
    if (v.lookup("<|tool_response>") >= 0)
        if (int32_t id = v.lookup("</s>"); id >= 0) eog.erase(id);
    for (int32_t id : eog) v.attr[size_t(id)] |= kAttrEog;

    // Special-token candidates, longest text first (ties: lower id first).
    std::vector<int32_t> sp;
    for (size_t i = 0; i < n; ++i)
        if (v.attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) sp.push_back(int32_t(i));
    std::stable_sort(sp.begin(), sp.end(),
                     [&](int32_t a, int32_t b) { return v.text[size_t(a)].size() > v.text[size_t(b)].size(); });
    std::vector<SpecialMatcher::Candidate> cands;
    cands.reserve(sp.size());
    for (int32_t id : sp) {
        const uint32_t a = v.attr[size_t(id)];
        cands.push_back({id, v.text[size_t(id)], (a & (kAttrControl | kAttrUnknown)) != 0, (a & kAttrLstrip) != 0,
                         (a & kAttrRstrip) != 0});
    }
    v.specials.build(std::move(cands));

    switch (v.model) {
        case VocabModel::spm:
            for (int b = 0; b < 256; ++b) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "<0x%02X>", b);
                int32_t id = v.lookup(hex);
                if (id < 0) id = v.lookup(std::string(1, char(b)));
                v.byte_token[size_t(b)] = id;
            }
            v.spm_split_words = spm_can_split_words(v.text);
            break;
        case VocabModel::bpe: {
            for (int b = 0; b < 256; ++b) {
                std::string s;
                utf8_append(s, byte_to_cpt(uint8_t(b)));
                v.byte_token[size_t(b)] = v.lookup(s);
            }
            v.bpe.build(d.merges, lookup_cb, &v);
            break;
        }
        case VocabModel::wpm:
            for (const std::string& t : v.text) v.max_token_len = std::max(v.max_token_len, t.size());
            break;
        case VocabModel::none:
            break;
    }
    impl_ = std::move(im);
}

VocabModel Tokenizer::model() const { return impl().model; }
const std::string& Tokenizer::pre() const { return impl().pre_name; }
int32_t Tokenizer::n_vocab() const { return int32_t(impl().text.size()); }
const SpecialIds& Tokenizer::special_ids() const { return impl().ids; }
bool Tokenizer::add_bos() const { return impl().add_bos; }
bool Tokenizer::add_eos() const { return impl().add_eos; }
bool Tokenizer::add_space_prefix() const { return impl().add_space_prefix; }

bool Tokenizer::is_eog(int32_t id) const {
    return id >= 0 && size_t(id) < impl().attr.size() && (impl().attr[size_t(id)] & kAttrEog);
}

const std::string& Tokenizer::token_text(int32_t id) const {
    impl().check_id(id);
    return impl().text[size_t(id)];
}

float Tokenizer::token_score(int32_t id) const {
    impl().check_id(id);
    return impl().score[size_t(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
    impl().check_id(id);
    const uint32_t a = impl().attr[size_t(id)];
    if (a & kAttrControl) return TokenType::control;
    if (a & kAttrUserDefined) return TokenType::user_defined;
    if (a & kAttrUnknown) return TokenType::unknown;
    if (a & kAttrByte) return TokenType::byte;
    if (a & kAttrUnused) return TokenType::unused;
    if (a & kAttrNormal) return TokenType::normal;
    return TokenType::undefined;
}

bool Tokenizer::is_control(int32_t id) const {
    impl().check_id(id);
    return impl().attr[size_t(id)] & kAttrControl;
}

bool Tokenizer::is_special(int32_t id) const {
    impl().check_id(id);
    return impl().attr[size_t(id)] & (kAttrControl | kAttrUserDefined | kAttrUnknown);
}

bool Tokenizer::is_byte(int32_t id) const {
    impl().check_id(id);
    return impl().attr[size_t(id)] & kAttrByte;
}

int32_t Tokenizer::find_token(std::string_view text) const { return impl().lookup(text); }

}  // namespace ikllm::tok
