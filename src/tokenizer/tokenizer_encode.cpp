// Top-level tokenize (docs/tokenizers.md §4): special-token partition, per-fragment model
// algorithm, BOS/EOS.
#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"

namespace ikllm::tok {

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    const Impl& v = impl();
    if (v.model == VocabModel::none) fail(Status::unsupported, "tokenizer: the model has no vocabulary");
    if (text.size() > size_t(UINT32_MAX)) fail(Status::invalid_argument, "tokenizer: text too long");

    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    const bool wpm = v.model == VocabModel::wpm;
    if (add_special && (wpm || v.add_bos)) {
        if (v.ids.bos < 0) fail(Status::invalid_file, "tokenizer: the vocabulary asks for BOS but has none");
        out.push_back(v.ids.bos);
    }

    std::vector<Fragment> frags;
    v.specials.partition(text, parse_special, frags);
    bool prev_special = true;  // the first fragment counts as following a special token (§6 step 1)
    std::string buf;
    for (const Fragment& f : frags) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        const std::string_view raw = text.substr(f.off, f.len);
        switch (v.model) {
            case VocabModel::spm: {
                // Optional space prefix, then ' ' -> U+2581.
                buf.clear();
                if (v.add_space_prefix && prev_special) buf += "\xE2\x96\x81";
                for (char c : raw) {
                    if (c == ' ') buf += "\xE2\x96\x81";
                    else buf.push_back(c);
                }
                spm_encode(v, buf, out);
                break;
            }
            case VocabModel::bpe: bpe_encode(v, raw, out); break;
            case VocabModel::wpm: wpm_encode(v, raw, out); break;
            case VocabModel::none: break;
        }
        prev_special = false;
    }

    if (add_special && wpm) {
        if (v.ids.sep < 0) fail(Status::invalid_file, "tokenizer: the vocabulary has no SEP token");
        out.push_back(v.ids.sep);
    } else if (add_special && v.add_eos) {
        if (v.ids.eos < 0) fail(Status::invalid_file, "tokenizer: the vocabulary asks for EOS but has none");
        out.push_back(v.ids.eos);
    }
    return out;
}

}  // namespace ikllm::tok
