#include "grammar/json_value.h"

#include "core/json_escape.h"

#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "grammar/char_sets.h"

namespace ikllm::grammar {

JsonValue::JsonValue() = default;
JsonValue::~JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;

namespace {

class JsonParser {
public:
    explicit JsonParser(const std::string& s) : s_(s) {}
    JsonValue run() {
        JsonValue v = value(0);
        ws();
        if (p_ < s_.size()) error("unexpected text after the JSON value");
        return v;
    }

private:
    const std::string& s_;
    size_t p_ = 0;

    [[noreturn]] void error(const std::string& msg) const {
        int line = 1, col = 1;
        for (size_t i = 0; i < p_ && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                col = 1;
            } else if (((unsigned char)s_[i] & 0xC0) != 0x80) {
                ++col;
            }
        }
        fail(Status::grammar_error,
             "json_schema: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + msg);
    }
    void ws() {
        while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r')) ++p_;
    }
    bool lit(const char* w) {
        const size_t n = std::char_traits<char>::length(w);
        if (s_.compare(p_, n, w) != 0) return false;
        p_ += n;
        return true;
    }
    JsonValue value(int depth) {
        if (depth > 512) error("JSON nested too deeply");
        ws();
        if (p_ >= s_.size()) error("unexpected end of JSON text");
        JsonValue v;
        const char c = s_[p_];
        if (c == '{') {
            v.type = JsonValue::Type::object;
            ++p_;
            ws();
            if (p_ < s_.size() && s_[p_] == '}') {
                ++p_;
                return v;
            }
            for (;;) {
                ws();
                if (p_ >= s_.size() || s_[p_] != '"') error("expected a string key");
                std::string k = string();
                ws();
                if (p_ >= s_.size() || s_[p_] != ':') error("expected ':'");
                ++p_;
                v.members.emplace_back(std::move(k), value(depth + 1));
                ws();
                if (p_ < s_.size() && s_[p_] == ',') { ++p_; continue; }
                if (p_ < s_.size() && s_[p_] == '}') { ++p_; break; }
                error("expected ',' or '}'");
            }
        } else if (c == '[') {
            v.type = JsonValue::Type::array;
            ++p_;
            ws();
            if (p_ < s_.size() && s_[p_] == ']') {
                ++p_;
                return v;
            }
            for (;;) {
                v.items.push_back(value(depth + 1));
                ws();
                if (p_ < s_.size() && s_[p_] == ',') { ++p_; continue; }
                if (p_ < s_.size() && s_[p_] == ']') { ++p_; break; }
                error("expected ',' or ']'");
            }
        } else if (c == '"') {
            v.type = JsonValue::Type::string;
            v.text = string();
        } else if (lit("true")) {
            v.type = JsonValue::Type::boolean;
            v.b = true;
        } else if (lit("false")) {
            v.type = JsonValue::Type::boolean;
        } else if (lit("null")) {
            v.type = JsonValue::Type::null;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            const size_t b = p_;
            if (s_[p_] == '-') ++p_;
            auto digits = [&] {
                const size_t d = p_;
                while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') ++p_;
                if (p_ == d) error("malformed number");
            };
            if (p_ < s_.size() && s_[p_] == '0') ++p_;
            else digits();
            if (p_ < s_.size() && s_[p_] == '.') { ++p_; digits(); }
            if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
                ++p_;
                if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
                digits();
            }
            v.type = JsonValue::Type::number;
            v.text = s_.substr(b, p_ - b);
            v.num = std::strtod(v.text.c_str(), nullptr);
        } else {
            error(std::string("unexpected character '") + c + "'");
        }
        return v;
    }
    uint32_t hex4() {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i, ++p_) {
            const char c = p_ < s_.size() ? s_[p_] : '\0';
            int d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else error("\\u needs 4 hex digits");
            v = v * 16 + (uint32_t)d;
        }
        return v;
    }
    std::string string() {
        ++p_;
        std::string out;
        for (;;) {
            if (p_ >= s_.size()) error("unterminated string");
            const unsigned char c = (unsigned char)s_[p_];
            if (c == '"') { ++p_; return out; }
            if (c < 0x20) error("control character in string");
            if (c != '\\') {
                uint32_t cp;
                const size_t n = decode_utf8((const uint8_t*)s_.data() + p_, s_.size() - p_, &cp);
                if (n == 0) error("invalid UTF-8");
                out.append(s_, p_, n);
                p_ += n;
                continue;
            }
            ++p_;
            const char e = p_ < s_.size() ? s_[p_++] : '\0';
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF && s_.compare(p_, 2, "\\u") == 0) {
                        p_ += 2;
                        const uint32_t lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) error("unpaired surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                        error("unpaired surrogate");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: --p_; error("invalid escape");
            }
        }
    }
};

}  // namespace

JsonValue parse_json(const std::string& text) { return JsonParser(text).run(); }

std::string json_quote(const std::string& s) {
    std::string out = "\"";
    json_escape_append(s, out);
    return out + "\"";
}

std::string to_json(const JsonValue& v) {
    switch (v.type) {
        case JsonValue::Type::null: return "null";
        case JsonValue::Type::boolean: return v.b ? "true" : "false";
        case JsonValue::Type::number: return v.text;
        case JsonValue::Type::string: return json_quote(v.text);
        case JsonValue::Type::array: {
            std::string s = "[";
            for (size_t i = 0; i < v.items.size(); ++i) s += (i ? "," : "") + to_json(v.items[i]);
            return s + "]";
        }
        case JsonValue::Type::object: {
            std::string s = "{";
            for (size_t i = 0; i < v.members.size(); ++i)
                s += (i ? "," : "") + json_quote(v.members[i].first) + ":" + to_json(v.members[i].second);
            return s + "}";
        }
    }
    return "null";
}

}  // namespace ikllm::grammar
