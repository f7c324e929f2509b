#include "chat/json_scan.h"

#include "chat/jinja_error.h"
#include "chat/py_json.h"

namespace ikllm::chat {

namespace {

constexpr int kMaxDepth = 500;

bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_json_digit(char c) { return c >= '0' && c <= '9'; }
bool is_json_hex(char c) { return is_json_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Recursive-descent scanner over a growing text. Every path that reaches the end of the text reports
// `incomplete`; a byte that no JSON continuation accepts reports `invalid`.
class Scanner {
public:
    explicit Scanner(std::string_view t) : t_(t) {}

    JsonScan value(size_t& i, int depth) {
        if (depth > kMaxDepth) return JsonScan::invalid;
        if (i >= t_.size()) return JsonScan::incomplete;
        switch (t_[i]) {
            case '{': return container(i, depth, '}', true);
            case '[': return container(i, depth, ']', false);
            case '"': return string(i);
            case 't': return literal(i, "true");
            case 'f': return literal(i, "false");
            case 'n': return literal(i, "null");
            default: return number(i);
        }
    }

private:
    std::string_view t_;

    JsonScan literal(size_t& i, std::string_view word) {
        for (char c : word) {
            if (i >= t_.size()) return JsonScan::incomplete;
            if (t_[i] != c) return JsonScan::invalid;
            ++i;
        }
        return JsonScan::complete;
    }

    // A number is complete only when a byte after it shows that it ended (top-level values in this
    // parser are objects and arrays, so the end of text inside a number means "wait").
    JsonScan number(size_t& i) {
        if (i < t_.size() && t_[i] == '-') ++i;
        if (i >= t_.size()) return JsonScan::incomplete;
        if (t_[i] == '0') {
            ++i;
        } else if (is_json_digit(t_[i])) {
            while (i < t_.size() && is_json_digit(t_[i])) ++i;
        } else {
            return JsonScan::invalid;
        }
        if (i >= t_.size()) return JsonScan::incomplete;
        if (t_[i] == '.') {
            ++i;
            if (i >= t_.size()) return JsonScan::incomplete;
            if (!is_json_digit(t_[i])) return JsonScan::invalid;
            while (i < t_.size() && is_json_digit(t_[i])) ++i;
            if (i >= t_.size()) return JsonScan::incomplete;
        }
        if (t_[i] == 'e' || t_[i] == 'E') {
            ++i;
            if (i < t_.size() && (t_[i] == '+' || t_[i] == '-')) ++i;
            if (i >= t_.size()) return JsonScan::incomplete;
            if (!is_json_digit(t_[i])) return JsonScan::invalid;
            while (i < t_.size() && is_json_digit(t_[i])) ++i;
            if (i >= t_.size()) return JsonScan::incomplete;
        }
        return JsonScan::complete;
    }

    JsonScan string(size_t& i) {
        ++i;  // opening quote
        while (i < t_.size()) {
            const unsigned char c = static_cast<unsigned char>(t_[i]);
            if (c == '"') {
                ++i;
                return JsonScan::complete;
            }
            if (c < 0x20) return JsonScan::invalid;
            if (c == '\\') {
                if (++i >= t_.size()) return JsonScan::incomplete;
                const char e = t_[i++];
                if (e == 'u') {
                    for (int k = 0; k < 4; ++k, ++i) {
                        if (i >= t_.size()) return JsonScan::incomplete;
                        if (!is_json_hex(t_[i])) return JsonScan::invalid;
                    }
                } else if (!(e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                             e == 't')) {
                    return JsonScan::invalid;
                }
                continue;
            }
            ++i;
        }
        return JsonScan::incomplete;
    }

    JsonScan container(size_t& i, int depth, char close, bool is_object) {
        ++i;
        i = skip_json_ws(t_, i);
        if (i >= t_.size()) return JsonScan::incomplete;
        if (t_[i] == close) {
            ++i;
            return JsonScan::complete;
        }
        for (;;) {
            if (is_object) {
                if (i >= t_.size()) return JsonScan::incomplete;
                if (t_[i] != '"') return JsonScan::invalid;
                if (JsonScan r = string(i); r != JsonScan::complete) return r;
                i = skip_json_ws(t_, i);
                if (i >= t_.size()) return JsonScan::incomplete;
                if (t_[i] != ':') return JsonScan::invalid;
                i = skip_json_ws(t_, i + 1);
            }
            if (JsonScan r = value(i, depth + 1); r != JsonScan::complete) return r;
            i = skip_json_ws(t_, i);
            if (i >= t_.size()) return JsonScan::incomplete;
            if (t_[i] == close) {
                ++i;
                return JsonScan::complete;
            }
            if (t_[i] != ',') return JsonScan::invalid;
            i = skip_json_ws(t_, i + 1);
        }
    }
};

bool parses(std::string_view text) {
    try {
        json_parse(text);
        return true;
    } catch (const JinjaError&) {
        return false;
    }
}

}  // namespace

size_t skip_json_ws(std::string_view text, size_t pos) {
    while (pos < text.size() && is_json_ws(text[pos])) ++pos;
    return pos;
}

JsonScan scan_json_value(std::string_view text, size_t pos, size_t* end) {
    size_t i = pos;
    const JsonScan r = Scanner(text).value(i, 0);
    if (r == JsonScan::complete && end) *end = i;
    return r;
}

bool json_string_value(std::string_view literal, std::string& out) {
    size_t end = 0;
    if (literal.empty() || literal[0] != '"' || scan_json_value(literal, 0, &end) != JsonScan::complete ||
        end != literal.size())
        return false;
    try {
        const Value v = json_parse(literal);
        out = v.str();
        return true;
    } catch (const JinjaError&) {
        return false;  // e.g. an unpaired surrogate escape or invalid UTF-8
    }
}

bool json_object_members(std::string_view object, std::vector<std::pair<std::string, std::string_view>>& out) {
    out.clear();
    size_t i = skip_json_ws(object, 0), end = 0;
    if (i >= object.size() || object[i] != '{' || scan_json_value(object, i, &end) != JsonScan::complete ||
        skip_json_ws(object, end) != object.size() || !parses(object))
        return false;
    // The object is valid: walk its members without further checks.
    i = skip_json_ws(object, i + 1);
    while (i < end && object[i] == '"') {
        size_t key_end = 0, value_end = 0;
        scan_json_value(object, i, &key_end);
        std::string key;
        json_string_value(object.substr(i, key_end - i), key);
        const size_t v = skip_json_ws(object, skip_json_ws(object, key_end) + 1);  // past ':'
        scan_json_value(object, v, &value_end);
        out.emplace_back(std::move(key), object.substr(v, value_end - v));
        i = skip_json_ws(object, value_end);
        if (object[i] == ',') i = skip_json_ws(object, i + 1);
    }
    return true;
}

bool json_array_items(std::string_view array, std::vector<std::string_view>& out) {
    out.clear();
    size_t i = skip_json_ws(array, 0), end = 0;
    if (i >= array.size() || array[i] != '[' || scan_json_value(array, i, &end) != JsonScan::complete ||
        skip_json_ws(array, end) != array.size() || !parses(array))
        return false;
    i = skip_json_ws(array, i + 1);
    while (i < end && array[i] != ']') {
        size_t item_end = 0;
        scan_json_value(array, i, &item_end);
        out.push_back(array.substr(i, item_end - i));
        i = skip_json_ws(array, item_end);
        if (array[i] == ',') i = skip_json_ws(array, i + 1);
    }
    return true;
}

}  // namespace ikllm::chat
