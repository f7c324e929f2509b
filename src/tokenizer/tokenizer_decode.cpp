// Detokenization (docs/tokenizers.md §10).
#include "core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace ikllm::tok {
namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// "<0xXX>" -> the byte; other texts -> "".
std::string byte_piece(const std::string& t) {
    if (t.size() == 6 && t[0] == '<' && t[1] == '0' && t[2] == 'x' && t[5] == '>') {
        const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
        if (hi >= 0 && lo >= 0) return std::string(1, char(hi * 16 + lo));
    }
    return std::string();
}

std::string replace_spm_space(const std::string& t) {
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
        if (i + 2 < t.size() && t.compare(i, 3, "\xE2\x96\x81") == 0) {
            out.push_back(' ');
            i += 2;
        } else {
            out.push_back(t[i]);
        }
    }
    return out;
}

// Inverse of the GPT-2 byte alphabet; a code point outside it is rendered as the
// reference does: "[UNK_BYTE_0x<hex of its UTF-8>" + token text + "]".
std::string byte_level_decode(const std::string& t) {
    std::string out;
    out.reserve(t.size());
    const auto* s = reinterpret_cast<const uint8_t*>(t.data());
    for (size_t i = 0; i < t.size();) {
        uint32_t cp = 0;
        size_t len = utf8_decode_one(s + i, t.size() - i, &cp);
        const int b = len ? cpt_to_byte(cp) : -1;
        if (len == 0) len = 1;
        if (b >= 0) {
            out.push_back(char(b));
        } else {
            static const char* hex = "0123456789abcdef";
            out += "[UNK_BYTE_0x";
            for (size_t k = 0; k < len; ++k) {
                out.push_back(hex[s[i + k] >> 4]);
                out.push_back(hex[s[i + k] & 15]);
            }
            out += t;
            out += "]";
        }
        i += len;
    }
    return out;
}

// §10.2 step 4: " ?" " !" " ." " ," lose the space; " ' " loses both; " 's" " 'm" " 're" " 've" lose it.
std::string clean_up_spaces(const std::string& in) {
    std::string a;
    a.reserve(in.size());
    for (char c : in) {
        if ((c == '?' || c == '!' || c == '.' || c == ',') && !a.empty() && a.back() == ' ') a.pop_back();
        a.push_back(c);
    }
    std::string b;
    b.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == ' ' && i + 2 < a.size() && a[i + 1] == '\'' && a[i + 2] == ' ') {
            b.push_back('\'');
            i += 2;
            continue;
        }
        b.push_back(a[i]);
    }
    std::string c;
    c.reserve(b.size());
    for (size_t i = 0; i < b.size(); ++i) {
        if (b[i] == ' ' && i + 2 < b.size() && b[i + 1] == '\'') {
            const char x = b[i + 2];
            const char y = i + 3 < b.size() ? b[i + 3] : '\0';
            if (x == 's' || x == 'm' || (x == 'r' && y == 'e') || (x == 'v' && y == 'e')) continue;
        }
        c.push_back(b[i]);
    }
    return c;
}

}  // namespace

std::string Tokenizer::piece(int32_t id, bool render_special) const {
    const Impl& v = impl();
    v.check_id(id);
    const uint32_t a = v.attr[size_t(id)];
    const std::string& t = v.text[size_t(id)];
    if ((a & (kAttrUnknown | kAttrControl)) && !render_special) return std::string();
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
    if (a & kAttrNormal) return v.model == VocabModel::bpe ? byte_level_decode(t) : replace_spm_space(t);
    if (a & kAttrByte) return byte_piece(t);
    return std::string();  // UNUSED / UNDEFINED
}

std::string Tokenizer::decode(const int32_t* ids, size_t n, bool strip_leading_space, bool render_special,
                              bool remove_bos_eos) const {
    const Impl& v = impl();
    for (size_t i = 0; i < n; ++i) v.check_id(ids[i]);
    bool remove_space = strip_leading_space && v.add_space_prefix;
    size_t begin = 0, end = n;
    if (remove_bos_eos && v.add_bos && end > begin && ids[begin] == v.ids.bos) {
        ++begin;
        remove_space = false;
    }
    if (remove_bos_eos && v.add_eos && end > begin && ids[end - 1] == v.ids.eos) --end;
    std::string out;
    for (size_t i = begin; i < end; ++i) {
        std::string p = piece(ids[i], render_special);
        if (remove_space) {
            if (!p.empty() && p[0] == ' ') p.erase(0, 1);
            remove_space = false;  // only the first token, even if it rendered empty
        }
        out += p;
    }
    return v.clean_spaces ? clean_up_spaces(out) : out;
}

}  // namespace ikllm::tok
