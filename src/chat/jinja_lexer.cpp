#include "chat/jinja_lexer.h"

#include <cstdio>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

enum class TagKind { Variable, Block, Comment };

// Byte length of the code point at s[i] when it is Python whitespace (regex \s), else 0.
size_t space_len(std::string_view s, size_t i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return py::is_space(c) ? 1 : 0;
    size_t len = c < 0xE0 ? 2 : (c < 0xF0 ? 3 : 4);
    if (i + len > s.size()) return 0;
    std::u32string u = py::decode(s.substr(i, len));
    return (!u.empty() && py::is_space(u[0])) ? len : 0;
}

size_t skip_spaces(std::string_view s, size_t i) {
    while (i < s.size()) {
        size_t l = space_len(s, i);
        if (!l) break;
        i += l;
    }
    return i;
}

bool all_space(std::string_view s) {
    if (s.empty()) return false;
    return skip_spaces(s, 0) == s.size();
}

std::string rstrip_ws(std::string_view s) {
    // Python str.rstrip(): Unicode whitespace
    return py::strip(s, nullptr, false, true);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// (\d+_)*\d+ starting at i; returns end or npos
size_t match_digits(std::string_view s, size_t i) {
    if (i >= s.size() || !is_digit(s[i])) return std::string_view::npos;
    while (true) {
        while (i < s.size() && is_digit(s[i])) ++i;
        if (i + 1 < s.size() && s[i] == '_' && is_digit(s[i + 1])) {
            ++i;
            continue;
        }
        return i;
    }
}

size_t match_float(std::string_view s, size_t i) {
    if (i > 0 && s[i - 1] == '.') return std::string_view::npos;
    size_t p = match_digits(s, i);
    if (p == std::string_view::npos) return p;
    // (\.digits)? e[+-]? digits
    auto exponent = [&](size_t q) -> size_t {
        if (q < s.size() && (s[q] == 'e' || s[q] == 'E')) {
            ++q;
            if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
            return match_digits(s, q);
        }
        return std::string_view::npos;
    };
    if (p < s.size() && s[p] == '.') {
        size_t f = match_digits(s, p + 1);
        if (f != std::string_view::npos) {
            size_t e = exponent(f);
            if (e != std::string_view::npos) return e;
        }
    }
    size_t e = exponent(p);
    if (e != std::string_view::npos) return e;
    if (p < s.size() && s[p] == '.') {
        size_t f = match_digits(s, p + 1);
        if (f != std::string_view::npos) return f;
    }
    return std::string_view::npos;
}

int digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
}

// Integer literal forms of jinja2 (binary, octal, hex, decimal with _ separators); returns end or npos.
size_t match_integer(std::string_view s, size_t i, int& base) {
    auto prefixed = [&](char p, int b) -> size_t {
        if (i + 1 >= s.size() || s[i] != '0' || (s[i + 1] | 0x20) != p) return std::string_view::npos;
        size_t q = i + 2, end = std::string_view::npos;
        while (true) {
            size_t r = q;
            if (r < s.size() && s[r] == '_') ++r;
            if (r < s.size() && digit_value(s[r]) < b) {
                q = r + 1;
                end = q;
            } else {
                break;
            }
        }
        base = b;
        return end;
    };
    size_t e;
    if ((e = prefixed('b', 2)) != std::string_view::npos) return e;
    if ((e = prefixed('o', 8)) != std::string_view::npos) return e;
    if ((e = prefixed('x', 16)) != std::string_view::npos) return e;
    base = 10;
    if (i < s.size() && s[i] >= '1' && s[i] <= '9') {
        size_t q = i + 1;
        while (true) {
            size_t r = q;
            if (r < s.size() && s[r] == '_') ++r;
            if (r < s.size() && is_digit(s[r])) q = r + 1;
            else break;
        }
        return q;
    }
    if (i < s.size() && s[i] == '0') {
        size_t q = i + 1;
        while (true) {
            size_t r = q;
            if (r < s.size() && s[r] == '_') ++r;
            if (r < s.size() && s[r] == '0') q = r + 1;
            else break;
        }
        return q;
    }
    return std::string_view::npos;
}

[[noreturn]] void syntax_error(const std::string& msg, int line) { throw JinjaError("TemplateSyntaxError", msg, line); }

// Python's "unicode-escape" decoding of a string literal body (jinja2 applies it to every literal).
std::string unescape(std::string_view raw, int line) {
    std::string out;
    size_t i = 0, n = raw.size();
    char buf[16];
    while (i < n) {
        char c = raw[i];
        if (c != '\\') {
            out.push_back(c);
            ++i;
            continue;
        }
        if (i + 1 >= n) syntax_error("\\ at end of string", line);
        char e = raw[i + 1];
        i += 2;
        switch (e) {
            case '\n': break;
            case '\\': out.push_back('\\'); break;
            case '\'': out.push_back('\''); break;
            case '"': out.push_back('"'); break;
            case 'a': out.push_back('\a'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'v': out.push_back('\v'); break;
            case 'x':
            case 'u':
            case 'U': {
                int len = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
                uint32_t cp = 0;
                for (int k = 0; k < len; ++k) {
                    if (i + k >= n || digit_value(raw[i + k]) > 15)
                        syntax_error(std::string("truncated \\") + (e == 'x' ? "xXX" : (e == 'u' ? "uXXXX" : "UXXXXXXXX")) +
                                         " escape",
                                     line);
                    cp = cp * 16 + static_cast<uint32_t>(digit_value(raw[i + k]));
                }
                i += len;
                if (cp > 0x10FFFF) syntax_error("illegal Unicode character", line);
                if (cp >= 0xD800 && cp <= 0xDFFF) syntax_error("surrogate code points are not supported", line);
                py::append_cp(out, cp);
                break;
            }
            case 'N': syntax_error("\\N{...} escapes are not supported", line);
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int k = 0; k < 2 && i < n && raw[i] >= '0' && raw[i] <= '7'; ++k) cp = cp * 8 + (raw[i++] - '0');
                    py::append_cp(out, cp);
                } else if (static_cast<unsigned char>(e) >= 0x80) {
                    // backslash + non-ASCII: jinja2 first backslash-escapes the character, so the
                    // backslash pair collapses and the escape text itself remains
                    size_t len = static_cast<unsigned char>(e) < 0xE0 ? 2 : (static_cast<unsigned char>(e) < 0xF0 ? 3 : 4);
                    std::u32string u = py::decode(raw.substr(i - 1, len));
                    uint32_t cp = u.empty() ? 0 : u[0];
                    if (cp <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02x", cp);
                    else if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04x", cp);
                    else std::snprintf(buf, sizeof buf, "\\U%08x", cp);
                    out += buf;
                    i += len - 1;
                } else {
                    out.push_back('\\');
                    out.push_back(e);
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string src) : s_(std::move(src)) {}

    std::vector<Token> run() {
        size_t pos = 0;
        while (pos < s_.size()) {
            size_t k = find_tag(pos);
            if (k == std::string::npos) {
                emit_data(std::string_view(s_).substr(pos), pos);
                break;
            }
            char kind_c = s_[k + 1];
            char sign = (k + 2 < s_.size() && (s_[k + 2] == '-' || s_[k + 2] == '+')) ? s_[k + 2] : 0;
            size_t raw_end = kind_c == '%' ? match_raw_begin(k) : std::string::npos;
            TagKind kind = kind_c == '{' ? TagKind::Variable : (kind_c == '%' ? TagKind::Block : TagKind::Comment);
            std::string text = control_whitespace(std::string_view(s_).substr(pos, k - pos), sign, kind != TagKind::Variable);
            emit_data(text, pos);
            line_starting_ = false;
            if (raw_end != std::string::npos) {
                line_starting_ = s_[raw_end - 1] == '\n';
                pos = lex_raw(raw_end);
                continue;
            }
            size_t body = k + 2 + (sign ? 1 : 0);
            if (kind == TagKind::Comment) pos = skip_comment(body, line_at(k));
            else pos = lex_tag(body, kind, k);
        }
        Token eof;
        eof.type = Tok::Eof;
        eof.line = line_at(s_.size());
        out_.push_back(eof);
        return std::move(out_);
    }

private:
    std::string s_;
    std::vector<Token> out_;
    bool line_starting_ = true;
    size_t line_pos_ = 0;  // incremental line counting
    int line_ = 1;

    int line_at(size_t p) {
        if (p < line_pos_) {
            line_pos_ = 0;
            line_ = 1;
        }
        for (; line_pos_ < p && line_pos_ < s_.size(); ++line_pos_)
            if (s_[line_pos_] == '\n') ++line_;
        return line_;
    }

    size_t find_tag(size_t pos) const {
        while (true) {
            size_t k = s_.find('{', pos);
            if (k == std::string::npos || k + 1 >= s_.size()) return std::string::npos;
            char c = s_[k + 1];
            if (c == '{' || c == '%' || c == '#') return k;
            pos = k + 1;
        }
    }

    // `{%[-+]?\s*raw\s*(-%}\s*|%})` at k: returns the end of the match or npos.
    size_t match_raw_begin(size_t k) const {
        size_t p = k + 2;
        if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
        p = skip_spaces(s_, p);
        if (s_.compare(p, 3, "raw") != 0) return std::string::npos;
        p = skip_spaces(s_, p + 3);
        if (s_.compare(p, 3, "-%}") == 0) return skip_spaces(s_, p + 3);
        if (s_.compare(p, 2, "%}") == 0) return p + 2;
        return std::string::npos;
    }

    // lstrip_blocks / `-` handling of the text in front of a tag.
    std::string control_whitespace(std::string_view text, char sign, bool lstrip_applies) const {
        if (sign == '-') return rstrip_ws(text);
        if (sign != '+' && lstrip_applies) {
            size_t nl = text.rfind('\n');
            size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && all_space(text.substr(l_pos))) return std::string(text.substr(0, l_pos));
        }
        return std::string(text);
    }

    void emit_data(std::string_view text, size_t src_pos) {
        if (text.empty()) return;
        Token t;
        t.type = Tok::Data;
        t.text = std::string(text);
        t.line = line_at(src_pos);
        out_.push_back(std::move(t));
    }

    void push(Tok type, size_t at, std::string text = {}) {
        Token t;
        t.type = type;
        t.text = std::move(text);
        t.line = line_at(at);
        out_.push_back(std::move(t));
    }

    size_t lex_raw(size_t pos) {
        size_t search = pos;
        while (true) {
            size_t k = s_.find("{%", search);
            if (k == std::string::npos) syntax_error("Missing end of raw directive", line_at(pos));
            size_t p = k + 2;
            char sign = 0;
            if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) sign = s_[p++];
            p = skip_spaces(s_, p);
            if (s_.compare(p, 6, "endraw") == 0) {
                size_t q = skip_spaces(s_, p + 6);
                size_t end = std::string::npos;
                if (s_.compare(q, 3, "+%}") == 0) end = q + 3;
                else if (s_.compare(q, 3, "-%}") == 0) end = skip_spaces(s_, q + 3);
                else if (s_.compare(q, 2, "%}") == 0) end = (q + 2 < s_.size() && s_[q + 2] == '\n') ? q + 3 : q + 2;
                if (end != std::string::npos) {
                    std::string text = control_whitespace(std::string_view(s_).substr(pos, k - pos), sign, true);
                    emit_data(text, pos);
                    line_starting_ = s_[end - 1] == '\n';
                    return end;
                }
            }
            search = k + 1;
        }
    }

    size_t skip_comment(size_t pos, int start_line) {
        for (size_t j = pos; j < s_.size(); ++j) {
            if (s_.compare(j, 3, "+#}") == 0) {
                line_starting_ = false;
                return j + 3;
            }
            if (s_.compare(j, 3, "-#}") == 0) {
                size_t e = skip_spaces(s_, j + 3);
                line_starting_ = s_[e - 1] == '\n';
                return e;
            }
            if (s_.compare(j, 2, "#}") == 0) {
                size_t e = j + 2;
                if (e < s_.size() && s_[e] == '\n') ++e;
                line_starting_ = s_[e - 1] == '\n';
                return e;
            }
        }
        syntax_error("Missing end of comment tag", start_line);
    }

    size_t lex_tag(size_t pos, TagKind kind, size_t tag_start) {
        push(kind == TagKind::Block ? Tok::BlockBegin : Tok::VarBegin, tag_start);
        std::vector<char> balance;
        static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};
        while (true) {
            if (pos >= s_.size()) syntax_error("unexpected end of template", line_at(s_.size()));
            if (balance.empty()) {
                size_t end = std::string::npos;
                if (kind == TagKind::Block) {
                    if (s_.compare(pos, 3, "+%}") == 0) end = pos + 3;
                    else if (s_.compare(pos, 3, "-%}") == 0) end = skip_spaces(s_, pos + 3);
                    else if (s_.compare(pos, 2, "%}") == 0) end = (pos + 2 < s_.size() && s_[pos + 2] == '\n') ? pos + 3 : pos + 2;
                } else {
                    if (s_.compare(pos, 3, "-}}") == 0) end = skip_spaces(s_, pos + 3);
                    else if (s_.compare(pos, 2, "}}") == 0) end = pos + 2;
                }
                if (end != std::string::npos) {
                    push(kind == TagKind::Block ? Tok::BlockEnd : Tok::VarEnd, pos);
                    line_starting_ = s_[end - 1] == '\n';
                    return end;
                }
            }
            size_t ws = skip_spaces(s_, pos);
            if (ws != pos) {
                pos = ws;
                continue;
            }
            char c = s_[pos];
            size_t e = match_float(s_, pos);
            if (e != std::string::npos) {
                std::string digits;
                for (size_t k = pos; k < e; ++k)
                    if (s_[k] != '_') digits.push_back(s_[k]);
                Token t;
                t.type = Tok::Float;
                t.fval = std::strtod(digits.c_str(), nullptr);
                t.line = line_at(pos);
                out_.push_back(t);
                pos = e;
                continue;
            }
            int base = 10;
            e = match_integer(s_, pos, base);
            if (e != std::string::npos) {
                uint64_t v = 0;
                size_t k = pos + (base == 10 ? 0 : 2);
                bool big = false;
                for (; k < e; ++k) {
                    if (s_[k] == '_') continue;
                    int d = digit_value(s_[k]);
                    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base) ||
                        v * base + d > static_cast<uint64_t>(INT64_MAX)) {
                        if (base != 10) syntax_error("integer literal too large", line_at(pos));
                        big = true;
                        break;
                    }
                    v = v * base + static_cast<uint64_t>(d);
                }
                Token t;
                t.type = Tok::Integer;
                t.ival = static_cast<int64_t>(v);
                if (big) {  // beyond 64 bits: kept as decimal text (Value::big_integer)
                    for (size_t q = pos; q < e; ++q)
                        if (s_[q] != '_') t.text.push_back(s_[q]);
                    t.fval = std::strtod(t.text.c_str(), nullptr);
                }
                t.line = line_at(pos);
                out_.push_back(t);
                pos = e;
                continue;
            }
            if (is_name_start(c)) {
                size_t q = pos;
                while (q < s_.size() && is_name_char(s_[q])) ++q;
                push(Tok::Name, pos, s_.substr(pos, q - pos));
                pos = q;
                continue;
            }
            if (c == '\'' || c == '"') {
                size_t q = pos + 1;
                while (q < s_.size() && s_[q] != c) q += (s_[q] == '\\') ? 2 : 1;
                if (q < s_.size()) {
                    int line = line_at(pos);
                    Token t;
                    t.type = Tok::String;
                    t.text = unescape(std::string_view(s_).substr(pos + 1, q - pos - 1), line);
                    t.line = line;
                    out_.push_back(std::move(t));
                    pos = q + 1;
                    continue;
                }
            }
            bool matched = false;
            for (const char* op : kOps) {
                size_t len = std::char_traits<char>::length(op);
                if (s_.compare(pos, len, op) != 0) continue;
                if (len == 1 && (c == '{' || c == '(' || c == '[')) balance.push_back(c == '{' ? '}' : (c == '(' ? ')' : ']'));
                if (len == 1 && (c == '}' || c == ')' || c == ']')) {
                    if (balance.empty()) syntax_error(std::string("unexpected '") + c + "'", line_at(pos));
                    char expected = balance.back();
                    balance.pop_back();
                    if (expected != c)
                        syntax_error(std::string("unexpected '") + c + "', expected '" + expected + "'", line_at(pos));
                }
                push(Tok::Op, pos, op);
                pos += len;
                matched = true;
                break;
            }
            if (!matched) syntax_error(std::string("unexpected char ") + py::repr(std::string(1, c)), line_at(pos));
        }
    }
};

// jinja2 splits the source on \r\n, \r and \n, drops one trailing newline and joins with \n.
std::string normalize_source(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\r') {
            out.push_back('\n');
            if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
        } else {
            out.push_back(src[i]);
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_source(source)).run(); }

}  // namespace ikllm::chat
