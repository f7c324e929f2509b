#include "chat/py_json.h"

#include "core/json_escape.h"

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
    out.push_back('"');
    char buf[16];
    if (!ensure_ascii) {
        json_escape_append(s, out);
    } else {
        for (char32_t c : py::decode(s)) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c >= 0x20 && c < 0x7F) {
                        out.push_back(static_cast<char>(c));
                    } else if (c < 0x10000) {
                        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                        out += buf;
                    } else {
                        char32_t v = c - 0x10000;
                        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                                      static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
                        out += buf;
                    }
            }
        }
    }
    out.push_back('"');
}

std::string float_json(double f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    return py::float_repr(f);
}

// Python converts non-string keys: int -> "1", float -> repr, True -> "true", None -> "null".
std::string key_string(const Value& k) {
    switch (k.kind()) {
        case Kind::String: return k.str();
        case Kind::Int: return k.is_big() ? k.big_digits() : std::to_string(k.as_int());
        case Kind::Float: return float_json(k.as_float());
        case Kind::Bool: return k.as_bool() ? "true" : "false";
        case Kind::None: return "null";
        default: type_error("keys must be str, int, float, bool or None, not " + type_name(k));
    }
}

void dump(const Value& v, const JsonDumpOptions& opt, int level, std::string& out) {
    if (level > kMaxNesting) raise_error("RecursionError", "maximum recursion depth exceeded while encoding a JSON object");
    check_string_size(out.size());  // containers sharing big strings must not encode unboundedly
    auto newline = [&](int lvl) {
        check_string_size(out.size() + 1 + static_cast<uint64_t>(lvl) * opt.indent.size());
        out.push_back('\n');
        for (int i = 0; i < lvl; ++i) out += opt.indent;
    };
    switch (v.kind()) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Kind::Int: out += v.is_big() ? v.big_digits() : std::to_string(v.as_int()); return;
        case Kind::Float: out += float_json(v.as_float()); return;
        case Kind::String:
            check_string_size(out.size() + v.str().size());
            dump_string(v.str(), opt.ensure_ascii, out);
            return;
        case Kind::List: {
            if (!v.is_seq(SeqType::List) && !v.is_seq(SeqType::Tuple)) break;
            const auto& items = v.list().items;
            if (items.empty()) {
                out += "[]";
                return;
            }
            out.push_back('[');
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += opt.item_sep;
                if (opt.has_indent) newline(level + 1);
                dump(items[i], opt, level + 1, out);
            }
            if (opt.has_indent) newline(level);
            out.push_back(']');
            return;
        }
        case Kind::Dict: {
            const auto& items = v.dict_data().items;
            if (items.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<Value, Value>*> order;
            for (const auto& kv : items) order.push_back(&kv);
            if (opt.sort_keys)
                std::stable_sort(order.begin(), order.end(),
                                 [](const auto* a, const auto* b) { return less(a->first, b->first); });
            out.push_back('{');
            bool first = true;
            for (const auto* kv : order) {
                if (!first) out += opt.item_sep;
                first = false;
                if (opt.has_indent) newline(level + 1);
                dump_string(key_string(kv->first), opt.ensure_ascii, out);
                out += opt.key_sep;
                dump(kv->second, opt, level + 1, out);
            }
            if (opt.has_indent) newline(level);
            out.push_back('}');
            return;
        }
        default: break;
    }
    type_error("Object of type " + type_name(v) + " is not JSON serializable");
}

// Python's json.loads: RFC 8259 plus NaN/Infinity/-Infinity; integers of any size (beyond 64 bits they
// keep their exact digits); duplicate keys keep the first position and the last value. Strings must be
// valid UTF-8 without raw control characters; a lone UTF-16 surrogate escape is refused (it cannot be
// represented in UTF-8).
class JsonParser {
public:
    explicit JsonParser(std::string_view t) : t_(t) {}

    Value parse_document() {
        skip_ws();
        if (i_ >= t_.size()) fail("Expecting value");
        Value v = value(0);
        skip_ws();
        if (i_ != t_.size()) fail("Extra data");
        return v;
    }

private:
    std::string_view t_;
    size_t i_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t k = 0; k < i_ && k < t_.size(); ++k) {
            if (t_[k] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        raise_error("JSONDecodeError", what + ": line " + std::to_string(line) + " column " + std::to_string(col) +
                                           " (char " + std::to_string(i_) + ")");
    }
    void skip_ws() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
    }
    bool consume(std::string_view word) {
        if (t_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }

    Value value(int depth) {
        if (depth > kMaxNesting) raise_error("RecursionError", "JSON input nested too deeply");
        if (i_ >= t_.size()) fail("Expecting value");
        const char c = t_[i_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Value::string(string());
        if (consume("null")) return Value::none();
        if (consume("true")) return Value::boolean(true);
        if (consume("false")) return Value::boolean(false);
        if (consume("NaN")) return Value::number(std::nan(""));
        if (consume("Infinity")) return Value::number(HUGE_VAL);
        if (consume("-Infinity")) return Value::number(-HUGE_VAL);
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        fail("Expecting value");
    }

    Value number() {
        const size_t start = i_;
        auto digits = [&] {
            size_t n = 0;
            while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_, ++n;
            return n;
        };
        if (t_[i_] == '-') ++i_;
        if (i_ < t_.size() && t_[i_] == '0') {
            ++i_;
        } else if (digits() == 0) {
            i_ = start;
            fail("Expecting value");
        }
        bool is_float = false;
        if (i_ + 1 < t_.size() && t_[i_] == '.' && t_[i_ + 1] >= '0' && t_[i_ + 1] <= '9') {
            ++i_;
            digits();
            is_float = true;
        }
        if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
            size_t save = i_++;
            if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
            if (digits() == 0) {
                i_ = save;  // Python: the number ends before the 'e' (then "Extra data")
            } else {
                is_float = true;
            }
        }
        const std::string text(t_.substr(start, i_ - start));
        if (is_float) return Value::number(std::strtod(text.c_str(), nullptr));
        errno = 0;
        const long long v = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE) {
            std::string digits_only = text;
            // Python prints int("-0...") without the sign for zero; a big integer is never zero.
            return Value::big_integer(std::move(digits_only), std::strtod(text.c_str(), nullptr));
        }
        return Value::integer(v);
    }

    unsigned hex4() {
        if (i_ + 4 > t_.size()) fail("Invalid \\uXXXX escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = t_[i_ + k];
            v <<= 4;
            if (h >= '0' && h <= '9') v |= unsigned(h - '0');
            else if (h >= 'a' && h <= 'f') v |= unsigned(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') v |= unsigned(h - 'A' + 10);
            else fail("Invalid \\uXXXX escape");
        }
        i_ += 4;
        return v;
    }

    std::string string() {
        ++i_;  // opening quote
        std::string out;
        size_t run = i_;  // start of the pending run of plain bytes
        for (;;) {
            if (i_ >= t_.size()) fail("Unterminated string starting at");
            const unsigned char c = static_cast<unsigned char>(t_[i_]);
            if (c == '"' || c == '\\') {
                out.append(t_.substr(run, i_ - run));
                if (c == '"') {
                    ++i_;
                    break;
                }
                if (++i_ >= t_.size()) fail("Unterminated string starting at");
                const char e = t_[i_++];
                switch (e) {
                    case '"': out.push_back('"'); break;
                    case '\\': out.push_back('\\'); break;
                    case '/': out.push_back('/'); break;
                    case 'b': out.push_back('\b'); break;
                    case 'f': out.push_back('\f'); break;
                    case 'n': out.push_back('\n'); break;
                    case 'r': out.push_back('\r'); break;
                    case 't': out.push_back('\t'); break;
                    case 'u': {
                        char32_t cp = hex4();
                        if (cp >= 0xD800 && cp < 0xDC00 && t_.substr(i_, 2) == "\\u") {
                            const size_t save = i_;
                            i_ += 2;
                            const unsigned lo = hex4();
                            if (lo >= 0xDC00 && lo < 0xE000) {
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            } else {
                                i_ = save;
                            }
                        }
                        if (cp >= 0xD800 && cp < 0xE000) fail("Unpaired UTF-16 surrogate escape");
                        py::append_cp(out, cp);
                        break;
                    }
                    default: --i_; fail("Invalid \\escape");
                }
                run = i_;
            } else if (c < 0x20) {
                fail("Invalid control character at");
            } else {
                ++i_;
            }
        }
        if (!py::valid_utf8(out)) fail("Invalid UTF-8 in string");
        return out;
    }

    Value array(int depth) {
        ++i_;
        std::vector<Value> items;
        skip_ws();
        if (i_ < t_.size() && t_[i_] == ']') {
            ++i_;
            return Value::list(std::move(items));
        }
        for (;;) {
            skip_ws();
            items.push_back(value(depth + 1));
            skip_ws();
            if (i_ < t_.size() && t_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < t_.size() && t_[i_] == ']') {
                ++i_;
                return Value::list(std::move(items));
            }
            fail("Expecting ',' delimiter");
        }
    }

    Value object(int depth) {
        ++i_;
        auto d = std::make_shared<DictData>();
        skip_ws();
        if (i_ < t_.size() && t_[i_] == '}') {
            ++i_;
            return Value::dict(d);
        }
        for (;;) {
            skip_ws();
            if (i_ >= t_.size() || t_[i_] != '"') fail("Expecting property name enclosed in double quotes");
            Value key = Value::string(string());
            skip_ws();
            if (i_ >= t_.size() || t_[i_] != ':') fail("Expecting ':' delimiter");
            ++i_;
            skip_ws();
            d->set(key, value(depth + 1));
            skip_ws();
            if (i_ < t_.size() && t_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < t_.size() && t_[i_] == '}') {
                ++i_;
                return Value::dict(d);
            }
            fail("Expecting ',' delimiter");
        }
    }
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
    std::string out;
    dump(v, opt, 0, out);
    return out;
}

Value json_parse(std::string_view text) { return JsonParser(text).parse_document(); }

}  // namespace ikllm::chat
