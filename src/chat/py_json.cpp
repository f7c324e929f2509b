#include "chat/py_json.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "chat/jinja_error.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
    out.push_back('"');
    char buf[16];
    if (!ensure_ascii) {
        for (char ch : s) {
            unsigned char c = static_cast<unsigned char>(ch);
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c < 0x20) {
                        std::snprintf(buf, sizeof buf, "\\u%04x", c);
                        out += buf;
                    } else {
                        out.push_back(ch);
                    }
            }
        }
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
        case Kind::Int: return std::to_string(k.as_int());
        case Kind::Float: return float_json(k.as_float());
        case Kind::Bool: return k.as_bool() ? "true" : "false";
        case Kind::None: return "null";
        default: type_error("keys must be str, int, float, bool or None, not " + type_name(k));
    }
}

void dump(const Value& v, const JsonDumpOptions& opt, int level, std::string& out) {
    if (level > kMaxNesting) raise_error("RecursionError", "maximum recursion depth exceeded while encoding a JSON object");
    auto newline = [&](int lvl) {
        out.push_back('\n');
        for (int i = 0; i < lvl; ++i) out += opt.indent;
    };
    switch (v.kind()) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(v.as_int()); return;
        case Kind::Float: out += float_json(v.as_float()); return;
        case Kind::String: dump_string(v.str(), opt.ensure_ascii, out); return;
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

Value from_json(const nlohmann::ordered_json& j, int depth) {
    if (depth > kMaxNesting) raise_error("RecursionError", "JSON input nested too deeply");
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
            return Value::number(static_cast<double>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& x : j) items.push_back(from_json(x, depth + 1));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            auto d = std::make_shared<DictData>();
            d->items.reserve(j.size());
            for (auto it = j.begin(); it != j.end(); ++it) d->set(Value::string(it.key()), from_json(it.value(), depth + 1));
            return Value::dict(d);
        }
        default: raise_error("JSONDecodeError", "unsupported JSON value");
    }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
    std::string out;
    dump(v, opt, 0, out);
    return out;
}

Value json_parse(std::string_view text) {
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        raise_error("JSONDecodeError", e.what());
    }
    return from_json(j, 0);
}

}  // namespace ikllm::chat
