// JSON Schema -> GBNF. Each schema node becomes a GBNF expression; objects, arrays, $ref
// targets and alternatives get named rules (a $ref target is named before it is visited, so
// recursive schemas work). Whitespace between tokens is optional and bounded.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "core/error.h"
#include "grammar/char_sets.h"
#include "grammar/json_value.h"

namespace ikllm::grammar {

namespace {

using T = JsonValue::Type;

// Helper rules, added to the output only when used.
const std::pair<const char*, const char*> kPrimitives[] = {
    {"ws", "\" \"? | \"\\n\" [ \\t]{0,16}"},
    {"char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})"},
    {"string", "\"\\\"\" char* \"\\\"\""},
    {"integer", "\"-\"? (\"0\" | [1-9] [0-9]{0,18})"},
    {"number", "\"-\"? (\"0\" | [1-9] [0-9]{0,18}) (\".\" [0-9]{1,18})? ([eE] [-+]? [0-9]{1,3})?"},
    {"boolean", "\"true\" | \"false\""},
    {"null", "\"null\""},
    {"value", "object | array | string | number | boolean | null"},
    {"object", "\"{\" ws (string ws \":\" ws value (ws \",\" ws string ws \":\" ws value)* ws)? \"}\""},
    {"array", "\"[\" ws (value (ws \",\" ws value)* ws)? \"]\""},
    {"date", "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])"},
    {"time",
     "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? "
     "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])"},
    {"date-time", "date \"T\" time"},
    {"uuid", "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}"},
};
// Rules each primitive refers to.
const std::pair<const char*, const char*> kDeps[] = {
    {"string", "char"}, {"value", "object"}, {"value", "array"}, {"value", "string"}, {"value", "number"},
    {"value", "boolean"}, {"value", "null"}, {"object", "ws"}, {"object", "string"}, {"object", "value"},
    {"array", "ws"}, {"array", "value"}, {"date-time", "date"}, {"date-time", "time"},
};

// Keywords that constrain instances in ways this converter cannot express.
const char* const kUnsupported[] = {"not", "if", "then", "else", "contains", "patternProperties", "propertyNames",
                                    "dependentRequired", "dependentSchemas", "multipleOf", "minProperties",
                                    "maxProperties", "unevaluatedItems", "minContains", "maxContains"};

std::string pointer_escape(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

class Converter {
public:
    explicit Converter(const std::string& text) : doc_(parse_json(text)) {}

    std::string run() {
        const std::string root = visit(doc_, "", "root");
        if (root != "root") define("root", root);
        std::string out;
        for (const auto& [name, body] : order_) out += name + " ::= " + body + "\n";
        return out;
    }

private:
    JsonValue doc_;
    std::deque<JsonValue> owned_;                 // merged allOf schemas
    std::vector<std::pair<std::string, std::string>> order_;  // rules in definition order
    std::set<std::string> names_;
    std::map<std::string, std::string> ref_rules_;  // pointer -> rule name

    // Length and item counts become {m,n} repetitions: bounded like the grammar compiler's.
    static void check_count(const std::string& ptr, const char* key, int64_t n) {
        if (n > (int64_t)kMaxRepeat)
            error(ptr + "/" + key, std::to_string(n) + " is above the grammar's repetition limit of " + std::to_string(kMaxRepeat));
    }
    [[noreturn]] static void error(const std::string& ptr, const std::string& msg) {
        fail(Status::grammar_error, "json_schema at '" + (ptr.empty() ? std::string("#") : ptr) + "': " + msg);
    }

    std::string fresh_name(const std::string& hint) {
        std::string base;
        for (char c : hint) base += (std::isalnum((unsigned char)c) || c == '-') ? c : '-';
        if (base.empty()) base = "r";
        std::string name = base;
        for (int i = 2; names_.count(name) || is_primitive(name); ++i) name = base + "-" + std::to_string(i);
        names_.insert(name);
        return name;
    }
    static bool is_primitive(const std::string& n) {
        for (const auto& p : kPrimitives)
            if (n == p.first) return true;
        return false;
    }
    void define(const std::string& name, const std::string& body) {
        names_.insert(name);
        order_.emplace_back(name, body);
    }
    // Name of a primitive rule, adding it (and what it uses) on first use.
    std::string prim(const std::string& name) {
        if (names_.count(name)) return name;
        names_.insert(name);
        for (const auto& p : kPrimitives)
            if (name == p.first) order_.emplace_back(name, p.second);
        for (const auto& d : kDeps)
            if (name == d.first) prim(d.second);
        return name;
    }
    // Expression as a named rule (keeps the grammar readable and shared).
    std::string rule(const std::string& hint, const std::string& body) {
        const std::string n = fresh_name(hint);
        define(n, body);
        return n;
    }

    const JsonValue& resolve(const std::string& ref, const std::string& ptr, std::string* target_ptr) {
        if (ref.empty() || ref[0] != '#') error(ptr, "only local $ref ('#...') is supported, got '" + ref + "'");
        const JsonValue* v = &doc_;
        size_t p = 1;
        while (p < ref.size()) {
            if (ref[p] != '/') error(ptr, "malformed $ref '" + ref + "'");
            size_t e = ref.find('/', p + 1);
            if (e == std::string::npos) e = ref.size();
            std::string key;
            for (size_t i = p + 1; i < e; ++i) {
                if (ref[i] == '~' && i + 1 < e && ref[i + 1] == '0') { key += '~'; ++i; }
                else if (ref[i] == '~' && i + 1 < e && ref[i + 1] == '1') { key += '/'; ++i; }
                else key += ref[i];
            }
            if (v->is(T::object)) {
                v = v->get(key);
            } else if (v->is(T::array)) {
                char* end = nullptr;
                const unsigned long idx = std::strtoul(key.c_str(), &end, 10);
                v = (*end == 0 && !key.empty() && idx < v->items.size()) ? &v->items[idx] : nullptr;
            } else {
                v = nullptr;
            }
            if (!v) error(ptr, "$ref '" + ref + "' does not resolve");
            p = e;
        }
        *target_ptr = ref.substr(1);
        return *v;
    }

    static int64_t get_int(const JsonValue& s, const char* key, const std::string& ptr, bool* has) {
        const JsonValue* v = s.get(key);
        *has = v != nullptr;
        if (!v) return 0;
        if (!v->is(T::number) || v->num < 0 || v->num != std::floor(v->num) || v->num > 1e9)
            error(ptr + "/" + key, "must be a non-negative integer");
        return (int64_t)v->num;
    }

    std::string visit(const JsonValue& s, const std::string& ptr, const std::string& hint) {
        if (s.is(T::boolean)) {
            if (!s.b) error(ptr, "the schema 'false' matches nothing");
            return prim("value");
        }
        if (!s.is(T::object)) error(ptr, "a schema must be an object or a boolean");
        for (const char* k : kUnsupported)
            if (s.get(k)) error(ptr, std::string("keyword '") + k + "' is not supported");
        if (const JsonValue* u = s.get("uniqueItems"); u && u->is(T::boolean) && u->b)
            error(ptr, "keyword 'uniqueItems' is not supported");
        if (const JsonValue* r = s.get("$ref")) {
            if (!r->is(T::string)) error(ptr + "/$ref", "must be a string");
            std::string target;
            const JsonValue& t = resolve(r->text, ptr, &target);
            auto it = ref_rules_.find(target);
            if (it != ref_rules_.end()) return it->second;
            std::string name_hint = target.substr(target.rfind('/') + 1);
            const std::string n = fresh_name(name_hint.empty() ? "ref" : name_hint);
            ref_rules_[target] = n;
            const size_t slot = order_.size();
            order_.emplace_back(n, "");
            const std::string body = visit(t, target, n);
            order_[slot].second = body;
            return n;
        }
        if (const JsonValue* c = s.get("const")) return gbnf_literal(to_json(*c));
        if (const JsonValue* e = s.get("enum")) {
            if (!e->is(T::array) || e->items.empty()) error(ptr + "/enum", "must be a non-empty array");
            std::string body;
            for (size_t i = 0; i < e->items.size(); ++i) body += (i ? " | " : "") + gbnf_literal(to_json(e->items[i]));
            return rule(hint, body);
        }
        if (const JsonValue* a = s.get("allOf")) return visit(merge_all_of(s, *a, ptr), ptr, hint);
        for (const char* key : {"anyOf", "oneOf"}) {
            const JsonValue* a = s.get(key);
            if (!a) continue;
            if (!a->is(T::array) || a->items.empty()) error(ptr + "/" + key, "must be a non-empty array");
            std::string body;
            for (size_t i = 0; i < a->items.size(); ++i)
                body += (i ? " | " : "") +
                        visit(a->items[i], ptr + "/" + key + "/" + std::to_string(i), hint + "-" + std::to_string(i));
            return rule(hint, body);
        }
        const JsonValue* type = s.get("type");
        if (type && type->is(T::array)) {
            if (type->items.empty()) error(ptr + "/type", "must not be empty");
            std::string body;
            for (size_t i = 0; i < type->items.size(); ++i) {
                if (!type->items[i].is(T::string)) error(ptr + "/type", "must hold type names");
                body += (i ? " | " : "") + typed(s, type->items[i].text, ptr, hint);
            }
            return rule(hint, body);
        }
        if (type && !type->is(T::string)) error(ptr + "/type", "must be a string or an array of strings");
        std::string t = type ? type->text : "";
        if (t.empty()) {  // infer from the keywords present
            if (s.get("properties") || s.get("required") || s.get("additionalProperties")) t = "object";
            else if (s.get("items") || s.get("prefixItems") || s.get("minItems") || s.get("maxItems")) t = "array";
            else if (s.get("minLength") || s.get("maxLength") || s.get("pattern") || s.get("format")) t = "string";
            else if (s.get("minimum") || s.get("maximum") || s.get("exclusiveMinimum") || s.get("exclusiveMaximum")) t = "number";
            else return prim("value");
        }
        return typed(s, t, ptr, hint);
    }

    const JsonValue& merge_all_of(const JsonValue& s, const JsonValue& all, const std::string& ptr) {
        if (!all.is(T::array)) error(ptr + "/allOf", "must be an array");
        JsonValue merged;
        merged.type = T::object;
        auto add = [&](const JsonValue& part, const std::string& pp) {
            const JsonValue* src = &part;
            std::string tp;
            while (const JsonValue* r = src->get("$ref")) {
                if (!r->is(T::string)) error(pp + "/$ref", "must be a string");
                src = &resolve(r->text, pp, &tp);
            }
            if (!src->is(T::object)) error(pp, "allOf parts must be object schemas");
            for (const auto& [k, v] : src->members) {
                if (k == "allOf" || k == "$ref") continue;
                JsonValue* have = nullptr;
                for (auto& m : merged.members)
                    if (m.first == k) have = &m.second;
                if (!have) {
                    merged.members.emplace_back(k, v);
                } else if (k == "properties" && v.is(T::object) && have->is(T::object)) {
                    for (const auto& pv : v.members) have->members.push_back(pv);
                } else if (k == "required" && v.is(T::array) && have->is(T::array)) {
                    for (const auto& r : v.items) have->items.push_back(r);
                } else if (to_json(*have) != to_json(v)) {
                    error(pp, "allOf parts disagree on '" + k + "' (only simple merges are supported)");
                }
            }
        };
        add(s, ptr);
        for (size_t i = 0; i < all.items.size(); ++i) {
            const std::string pp = ptr + "/allOf/" + std::to_string(i);
            if (all.items[i].is(T::object) && all.items[i].get("allOf"))
                add(merge_all_of(all.items[i], *all.items[i].get("allOf"), pp), pp);
            else
                add(all.items[i], pp);
        }
        owned_.push_back(std::move(merged));
        return owned_.back();
    }

    std::string typed(const JsonValue& s, const std::string& t, const std::string& ptr, const std::string& hint) {
        if (t == "string") return string_rule(s, ptr, hint);
        if (t == "integer" || t == "number") return number_rule(s, t == "integer", ptr, hint);
        if (t == "boolean") return prim("boolean");
        if (t == "null") return prim("null");
        if (t == "object") return object_rule(s, ptr, hint);
        if (t == "array") return array_rule(s, ptr, hint);
        error(ptr + "/type", "unknown type '" + t + "'");
    }

    std::string string_rule(const JsonValue& s, const std::string& ptr, const std::string& hint) {
        const std::string q = "\"\\\"\"";
        if (const JsonValue* f = s.get("format"); f && f->is(T::string)) {
            for (const char* known : {"date", "time", "date-time", "uuid"})
                if (f->text == known) return rule(hint, q + " " + prim(known) + " " + q);
            // other formats (email, uri, ...) are annotations here: any string
        }
        if (const JsonValue* p = s.get("pattern")) {
            if (!p->is(T::string)) error(ptr + "/pattern", "must be a string");
            std::string body;
            try {
                body = gbnf_from_regex(p->text, prim("char"));
            } catch (const Error& e) {
                error(ptr + "/pattern", e.what());
            }
            return rule(hint, q + " " + body + " " + q);
        }
        bool has_min, has_max;
        const int64_t mn = get_int(s, "minLength", ptr, &has_min);
        const int64_t mx = get_int(s, "maxLength", ptr, &has_max);
        if (!has_min && !has_max) return prim("string");
        if (has_max && mx < mn) error(ptr, "maxLength is below minLength");
        check_count(ptr, "minLength", mn);
        if (has_max) check_count(ptr, "maxLength", mx);
        const std::string rep = "{" + std::to_string(mn) + "," + (has_max ? std::to_string(mx) : "") + "}";
        return rule(hint, q + " " + prim("char") + rep + " " + q);
    }

    // Bound of a numeric keyword, or false when absent.
    static bool bound(const JsonValue& s, const char* key, const std::string& ptr, double* out) {
        const JsonValue* v = s.get(key);
        if (!v) return false;
        if (!v->is(T::number)) error(ptr + "/" + key, "must be a number");
        *out = v->num;
        return true;
    }

    std::string number_rule(const JsonValue& s, bool integer, const std::string& ptr, const std::string& hint) {
        double v;
        bool has_lo = false, has_hi = false;
        double lo = -INFINITY, hi = INFINITY;
        // Bounds become integers (rounded inwards): every value generated is valid.
        if (bound(s, "minimum", ptr, &v)) { has_lo = true; lo = std::ceil(v); }
        if (bound(s, "exclusiveMinimum", ptr, &v)) { has_lo = true; lo = std::max(lo, std::floor(v) + 1); }
        if (bound(s, "maximum", ptr, &v)) { has_hi = true; hi = std::floor(v); }
        if (bound(s, "exclusiveMaximum", ptr, &v)) { has_hi = true; hi = std::min(hi, std::ceil(v) - 1); }
        if (!has_lo && !has_hi) return prim(integer ? "integer" : "number");
        if ((has_lo && std::fabs(lo) > 9e18) || (has_hi && std::fabs(hi) > 9e18)) error(ptr, "bound too large");
        if (has_lo && has_hi && lo > hi) error(ptr, "no integer-valued bounds fit between minimum and maximum");
        const int64_t ilo = has_lo ? (int64_t)lo : 0, ihi = has_hi ? (int64_t)hi : 0;
        if (integer) return rule(hint, gbnf_int_range(has_lo, ilo, has_hi, ihi));
        // Reals in [lo, hi]: an integer part in [lo, hi) with any fraction, or hi exactly
        // (a fraction of zeros only). Negative values are handled by magnitude.
        const std::string frac = "(\".\" [0-9]{1,18})?", zeros = "(\".\" \"0\"{1,18})?";
        std::vector<std::string> alts;
        auto magnitude = [&](bool has_a, int64_t a, bool has_b, int64_t b, bool negative) {
            // values whose magnitude m satisfies a <= m (< b with fraction | == b)
            const std::string sign = negative ? "\"-\" " : "";
            if (!has_b) {
                alts.push_back(sign + gbnf_int_range(true, has_a ? a : 0, false, 0) + " " + frac);
                return;
            }
            if (b > a) alts.push_back(sign + gbnf_int_range(true, a, true, b - 1) + " " + frac);
            alts.push_back(sign + gbnf_literal(std::to_string(b)) + " " + zeros);
        };
        if (!has_hi || ihi >= 0) magnitude(true, has_lo && ilo > 0 ? ilo : 0, has_hi, ihi, false);
        if (!has_lo || ilo < 0) magnitude(true, has_hi && ihi < 0 ? -ihi : 0, has_lo, has_lo ? -ilo : 0, true);
        std::string body;
        for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
        return rule(hint, body);
    }

    // Strings that are not one of the given keys: a trie over the keys' characters as written,
    // where ending the string at a node that is not a key, or leaving the trie with a character
    // no key continues with (or any escape, where no key has one), is allowed. Inside a key's
    // escape sequence only the key's own characters continue.
    std::string other_key_rule(const std::vector<std::string>& keys, const std::string& hint) {
        struct Node {
            std::map<uint32_t, size_t> next;
            bool end = false, boundary = true;  // boundary: not inside an escape sequence
        };
        std::vector<Node> trie(1);
        for (const std::string& k : keys) {
            const std::string enc = json_quote(k);  // as written, quotes included
            size_t n = 0;
            bool after_backslash = false;
            int hex_left = 0;
            for (size_t i = 1; i + 1 < enc.size();) {
                uint32_t cp = 0;
                const size_t len = decode_utf8((const uint8_t*)enc.data() + i, enc.size() - 1 - i, &cp);
                if (len == 0) fail(Status::internal, "json_schema: key is not UTF-8");
                i += len;
                if (after_backslash) {
                    after_backslash = false;
                    hex_left = cp == 'u' ? 4 : 0;
                } else if (hex_left > 0) {
                    --hex_left;
                } else if (cp == '\\') {
                    after_backslash = true;
                }
                auto it = trie[n].next.find(cp);
                if (it == trie[n].next.end()) {
                    trie.push_back({});
                    trie.back().boundary = !after_backslash && hex_left == 0;
                    it = trie[n].next.emplace(cp, trie.size() - 1).first;
                }
                n = it->second;
            }
            trie[n].end = true;
        }
        const std::string base = fresh_name(hint + "-other-key");
        const std::string ch = prim("char");
        const std::string q = "\"\\\"\"";
        for (size_t i = 0; i < trie.size(); ++i) {
            std::vector<std::string> alts;
            if (!trie[i].end) alts.push_back(q);
            std::vector<CharRange> cut{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
            for (const auto& [cp, child] : trie[i].next) {
                std::string lit;
                append_utf8(lit, cp);
                alts.push_back(gbnf_literal(lit) + " " + base + "-" + std::to_string(child));
                cut.push_back({cp, cp});
            }
            if (trie[i].boundary) {
                const std::vector<CharRange> leave = complement_ranges(normalize_ranges(cut));
                std::vector<std::string> ways;
                if (!leave.empty()) ways.push_back(gbnf_class(leave));
                if (!trie[i].next.count('\\')) ways.push_back("\"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})");
                std::string expr;
                for (size_t k = 0; k < ways.size(); ++k) expr += (k ? " | " : "") + ways[k];
                if (!expr.empty()) alts.push_back("(" + expr + ") " + ch + "* " + q);
            }
            std::string body;
            for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
            define(base + "-" + std::to_string(i), body);
        }
        return q + " " + base + "-0";
    }

    std::string object_rule(const JsonValue& s, const std::string& ptr, const std::string& hint) {
        // Nothing said about the members: any object.
        if (!s.get("properties") && !s.get("required") && !s.get("additionalProperties")) return prim("object");
        std::vector<std::pair<std::string, std::string>> props;  // key, value expression
        std::set<std::string> required;
        if (const JsonValue* r = s.get("required")) {
            if (!r->is(T::array)) error(ptr + "/required", "must be an array");
            for (const auto& k : r->items) {
                if (!k.is(T::string)) error(ptr + "/required", "must hold strings");
                required.insert(k.text);
            }
        }
        std::vector<std::string> keys;
        if (const JsonValue* p = s.get("properties")) {
            if (!p->is(T::object)) error(ptr + "/properties", "must be an object");
            for (const auto& [k, v] : p->members) {
                const std::string pp = ptr + "/properties/" + pointer_escape(k);
                const std::string kv = gbnf_literal(json_quote(k)) + " ws \":\" ws " + visit(v, pp, hint + "-" + k);
                props.emplace_back(k, rule(hint + "-" + k + "-kv", kv));
                keys.push_back(k);
            }
        }
        prim("ws");
        for (const std::string& r : required)
            if (std::find(keys.begin(), keys.end(), r) == keys.end()) {
                // required but not described: any value
                props.emplace_back(r, rule(hint + "-" + r + "-kv", gbnf_literal(json_quote(r)) + " ws \":\" ws " + prim("value")));
                keys.push_back(r);
            }
        // Extra keys only when additionalProperties asks for them (absent: none are generated,
        // which keeps every output valid).
        std::string extra;
        if (const JsonValue* ap = s.get("additionalProperties")) {
            if (!(ap->is(T::boolean) && !ap->b)) {
                const std::string val = ap->is(T::boolean) ? prim("value") : visit(*ap, ptr + "/additionalProperties", hint + "-extra");
                extra = rule(hint + "-extra-kv", other_key_rule(keys, hint) + " ws \":\" ws " + val);
            }
        }
        // Properties in schema order; optional ones may be skipped. first(i): none emitted yet.
        const size_t n = props.size();
        const std::string sep = "ws \",\" ws ";
        std::string tail = extra.empty() ? "" : "(" + sep + extra + ")*";
        std::vector<std::string> after(n + 1);  // after(i): props i.. when something was emitted
        after[n] = tail;
        for (size_t i = n; i-- > 0;) {
            const bool req = required.count(props[i].first) > 0;
            const std::string item = sep + props[i].second;
            after[i] = (req ? item : "(" + item + ")?") + (after[i + 1].empty() ? "" : " " + after[i + 1]);
        }
        std::string first = extra.empty() ? "" : "(" + extra + " " + tail + ")?";
        bool first_nullable = true;
        for (size_t i = n; i-- > 0;) {
            const bool req = required.count(props[i].first) > 0;
            const std::string with = props[i].second + (after[i + 1].empty() ? "" : " " + after[i + 1]);
            if (req) {
                first = with;
                first_nullable = false;
            } else {
                const std::string rest = first.empty() ? "" : first;
                first = rule(hint + "-from-" + std::to_string(i), with + (rest.empty() ? " | \"\"" : " | " + rest));
                first_nullable = first_nullable || rest.empty();
            }
        }
        std::string body = "\"{\" ws ";
        if (!first.empty()) body += "(" + first + " ws)" + (first_nullable ? "?" : "") + " ";
        body += "\"}\"";
        return rule(hint, body);
    }

    std::string array_rule(const JsonValue& s, const std::string& ptr, const std::string& hint) {
        std::vector<std::string> prefix;
        if (const JsonValue* p = s.get("prefixItems")) {
            if (!p->is(T::array)) error(ptr + "/prefixItems", "must be an array");
            for (size_t i = 0; i < p->items.size(); ++i)
                prefix.push_back(visit(p->items[i], ptr + "/prefixItems/" + std::to_string(i), hint + "-" + std::to_string(i)));
        }
        bool has_min, has_max;
        const int64_t mn = get_int(s, "minItems", ptr, &has_min);
        int64_t mx = get_int(s, "maxItems", ptr, &has_max);
        if (has_max && mx < mn) error(ptr, "maxItems is below minItems");
        check_count(ptr, "minItems", mn);
        if (has_max) check_count(ptr, "maxItems", mx);
        std::string item;  // "" = no items after the prefix
        const JsonValue* it = s.get("items");
        if (it && !(it->is(T::boolean) && !it->b)) item = visit(*it, ptr + "/items", hint + "-item");
        else if (!it && (prefix.empty() || (int64_t)prefix.size() < mn)) item = prim("value");
        const int64_t k = (int64_t)prefix.size();
        if (item.empty()) {
            if (mn > k) error(ptr, "minItems is larger than prefixItems allows");
            mx = has_max ? std::min(mx, k) : k;
            has_max = true;
        }
        prim("ws");
        if (has_max && mx == 0) return rule(hint, "\"[\" ws \"]\"");
        const std::string sep = "ws \",\" ws ";
        auto elem = [&](int64_t i) { return i < k ? prefix[(size_t)i] : item; };
        // Elements 1.. after the first: prefix ones nest (each optional past minItems), then
        // the repeated items.
        std::string rest;
        {
            const int64_t from = std::max<int64_t>(k, 1);
            if (!item.empty() && (!has_max || mx > from)) {
                const int64_t lo = std::max<int64_t>(mn - from, 0);
                rest = "(" + sep + item + "){" + std::to_string(lo) + "," + (has_max ? std::to_string(mx - from) : "") + "}";
            }
            for (int64_t i = std::min<int64_t>(k, has_max ? mx : k) - 1; i >= 1; --i) {
                const std::string here = sep + elem(i) + (rest.empty() ? "" : " " + rest);
                rest = i < mn ? here : "(" + here + ")?";
            }
        }
        const std::string body = elem(0) + (rest.empty() ? "" : " " + rest);
        return rule(hint, "\"[\" ws " + (mn == 0 ? "(" + body + " ws)? " : body + " ws ") + "\"]\"");
    }
};

}  // namespace

std::string json_schema_to_gbnf(const std::string& schema_json) { return Converter(schema_json).run(); }

}  // namespace ikllm::grammar
