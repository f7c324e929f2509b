// Python methods of str, dict, list and tuple as templates call them (`content.strip()`,
// `message.get('x')`, `d.items()`), plus str.format with its format-spec mini-language. The
// ImmutableSandboxedEnvironment blocks methods that mutate a list or dict: looking them up yields an
// undefined value whose use raises SecurityError, exactly as in transformers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "chat/jinja_error.h"
#include "chat/jinja_interp.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

const std::string& str_arg(const Value& v, const char* what) {
    if (!v.is_string()) {
        if (v.is_undefined()) raise_undefined(v);
        type_error(std::string(what) + " must be str, not " + type_name(v));
    }
    return v.str();
}

int64_t int_arg(const Value& v, const char* what) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) raise_undefined(v);
    type_error(std::string(what) + ": '" + type_name(v) + "' object cannot be interpreted as an integer");
}

// Optional slice bounds of find/count/startswith (None allowed).
void bounds(const ArgReader& r, size_t i, int64_t& start, int64_t& end, bool& has_end) {
    start = 0;
    end = 0;
    has_end = false;
    if (r.has(i) && !r.get(i).is_none()) start = int_arg(r.get(i), "slice indices");
    if (r.has(i + 1) && !r.get(i + 1).is_none()) {
        end = int_arg(r.get(i + 1), "slice indices");
        has_end = true;
    }
}

Value strs_to_list(std::vector<std::string> parts, bool markup) {
    std::vector<Value> out;
    out.reserve(parts.size());
    for (auto& p : parts) out.push_back(Value::string(std::move(p), markup));
    return Value::list(std::move(out));
}

// Code-point substring [b, e) after Python's index adjustment.
std::string cp_slice(const std::string& s, int64_t b, int64_t e) {
    std::u32string u = py::decode(s);
    int64_t n = static_cast<int64_t>(u.size());
    b = std::clamp<int64_t>(b, 0, n);
    e = std::clamp<int64_t>(e, b, n);
    return py::encode(std::u32string_view(u).substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
}

bool affix_match(const std::string& s, const Value& affix, int64_t start, int64_t end, bool has_end, bool suffix,
                 const char* method) {
    std::string sub = (start == 0 && !has_end) ? s : cp_slice(s, start < 0 ? start + static_cast<int64_t>(py::cp_length(s)) : start,
                                                               has_end ? (end < 0 ? end + static_cast<int64_t>(py::cp_length(s)) : end)
                                                                       : static_cast<int64_t>(py::cp_length(s)));
    auto one = [&](const std::string& a) {
        if (a.size() > sub.size()) return false;
        return suffix ? sub.compare(sub.size() - a.size(), a.size(), a) == 0 : sub.compare(0, a.size(), a) == 0;
    };
    if (affix.is_seq(SeqType::Tuple)) {
        for (const auto& a : affix.list().items) {
            if (!a.is_string())
                type_error(std::string("tuple for ") + method + " must only contain str, not " + type_name(a));
            if (one(a.str())) return true;
        }
        return false;
    }
    if (!affix.is_string()) {
        if (affix.is_undefined()) raise_undefined(affix);
        type_error(std::string(method) + " first arg must be str or a tuple of str, not " + type_name(affix));
    }
    return one(affix.str());
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
    if (s.empty()) return false;
    for (char32_t c : py::decode(s))
        if (!pred(c)) return false;
    return true;
}

Value str_method(Interp& in, const Value& self, const std::string& name, CallArgs& a) {
    const std::string& s = self.str();
    bool mk = self.markup();
    auto out = [&](std::string r) { return Value::string(std::move(r), mk); };
    auto strip_chars = [&](const ArgReader& r, bool left, bool right) {
        if (r.has(0) && !r.get(0).is_none()) {
            const std::string& chars = str_arg(r.get(0), "strip arg");
            return out(py::strip(s, &chars, left, right));
        }
        return out(py::strip(s, nullptr, left, right));
    };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        ArgReader r(name.c_str(), a, {"chars"});
        return strip_chars(r, name != "rstrip", name != "lstrip");
    }
    if (name == "upper") { ArgReader r("upper", a, {}); return out(py::upper(s)); }
    if (name == "lower" || name == "casefold") { ArgReader r(name.c_str(), a, {}); return out(py::lower(s)); }
    if (name == "title") { ArgReader r("title", a, {}); return out(py::title(s)); }
    if (name == "capitalize") { ArgReader r("capitalize", a, {}); return out(py::capitalize(s)); }
    if (name == "swapcase") { ArgReader r("swapcase", a, {}); return out(py::swapcase(s)); }
    if (name == "split" || name == "rsplit") {
        ArgReader r(name.c_str(), a, {"sep", "maxsplit"});
        int64_t maxsplit = r.has(1) ? int_arg(r.get(1), "maxsplit") : -1;
        bool right = name == "rsplit";
        if (!r.has(0) || r.get(0).is_none()) return strs_to_list(py::split_ws(s, maxsplit, right), mk);
        const std::string& sep = str_arg(r.get(0), "sep");
        if (sep.empty()) value_error("empty separator");
        return strs_to_list(py::split_sep(s, sep, maxsplit, right), mk);
    }
    if (name == "splitlines") {
        ArgReader r("splitlines", a, {"keepends"});
        return strs_to_list(py::splitlines(s, r.has(0) && truthy(r.get(0))), mk);
    }
    if (name == "startswith" || name == "endswith") {
        ArgReader r(name.c_str(), a, {"prefix", "start", "end"}, 1);
        int64_t start, end;
        bool has_end;
        bounds(r, 1, start, end, has_end);
        return Value::boolean(affix_match(s, r.get(0), start, end, has_end, name == "endswith", name.c_str()));
    }
    if (name == "replace") {
        ArgReader r("replace", a, {"old", "new", "count"}, 2);
        const std::string& old = str_arg(r.get(0), "replace() argument 1");
        const std::string& neu = str_arg(r.get(1), "replace() argument 2");
        int64_t count = r.has(2) ? int_arg(r.get(2), "count") : -1;
        if (mk) {
            std::string o = r.get(0).markup() ? old : py::escape_html(old);
            std::string n = r.get(1).markup() ? neu : py::escape_html(neu);
            return out(py::replace(s, o, n, count));
        }
        return out(py::replace(s, old, neu, count));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
        ArgReader r(name.c_str(), a, {"sub", "start", "end"}, 1);
        const std::string& sub = str_arg(r.get(0), "must be str");
        int64_t start, end;
        bool has_end;
        bounds(r, 1, start, end, has_end);
        int64_t f = py::find(s, sub, start, end, has_end, name[0] == 'r');
        if (f < 0 && (name == "index" || name == "rindex")) value_error("substring not found");
        return Value::integer(f);
    }
    if (name == "count") {
        ArgReader r("count", a, {"sub", "start", "end"}, 1);
        const std::string& sub = str_arg(r.get(0), "must be str");
        int64_t start, end;
        bool has_end;
        bounds(r, 1, start, end, has_end);
        return Value::integer(py::count(s, sub, start, end, has_end));
    }
    if (name == "join") {
        ArgReader r("join", a, {"iterable"}, 1);
        std::string res;
        size_t i = 0;
        for (const auto& item : iterate(r.get(0))) {
            if (!item.is_string())
                type_error("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(item) + " found");
            check_string_size(res.size() + s.size() + item.str().size());
            if (i++) res += s;
            res += (mk && !item.markup()) ? py::escape_html(item.str()) : item.str();
        }
        return out(std::move(res));
    }
    if (name == "center" || name == "ljust" || name == "rjust") {
        ArgReader r(name.c_str(), a, {"width", "fillchar"}, 1);
        int64_t width = int_arg(r.get(0), "width");
        char32_t fill = ' ';
        if (r.has(1)) {
            const std::string& f = str_arg(r.get(1), "fillchar");
            if (py::cp_length(f) != 1) type_error("The fill character must be exactly one character long");
            fill = py::decode(f)[0];
        }
        return out(py::pad(s, width, fill, name == "center" ? 0 : (name == "ljust" ? -1 : 1)));
    }
    if (name == "zfill") {
        ArgReader r("zfill", a, {"width"}, 1);
        int64_t width = int_arg(r.get(0), "width");
        int64_t len = static_cast<int64_t>(py::cp_length(s));
        if (width <= len) return out(s);
        check_string_size(s.size() + static_cast<uint64_t>(width - len));
        std::string z(static_cast<size_t>(width - len), '0');
        if (!s.empty() && (s[0] == '+' || s[0] == '-')) return out(s.substr(0, 1) + z + s.substr(1));
        return out(z + s);
    }
    if (name == "partition" || name == "rpartition") {
        ArgReader r(name.c_str(), a, {"sep"}, 1);
        const std::string& sep = str_arg(r.get(0), "sep");
        if (sep.empty()) value_error("empty separator");
        size_t f = name == "partition" ? s.find(sep) : s.rfind(sep);
        std::vector<Value> parts;
        if (f == std::string::npos) {
            if (name == "partition") parts = {out(s), out(""), out("")};
            else parts = {out(""), out(""), out(s)};
        } else {
            parts = {out(s.substr(0, f)), out(sep), out(s.substr(f + sep.size()))};
        }
        return Value::tuple(std::move(parts));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        ArgReader r(name.c_str(), a, {"affix"}, 1);
        const std::string& x = str_arg(r.get(0), name.c_str());
        if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return out(s.substr(x.size()));
        if (name == "removesuffix" && !x.empty() && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
            return out(s.substr(0, s.size() - x.size()));
        return out(s);
    }
    if (name == "expandtabs") {
        ArgReader r("expandtabs", a, {"tabsize"});
        int64_t tab = r.has(0) ? int_arg(r.get(0), "tabsize") : 8;
        std::string res;
        int64_t col = 0;
        for (char32_t c : py::decode(s)) {
            if (c == '\t') {
                if (tab > 0) {
                    int64_t n = tab - (col % tab);
                    check_string_size(res.size() + static_cast<uint64_t>(n));
                    res.append(static_cast<size_t>(n), ' ');
                    col += n;
                }
            } else {
                py::append_cp(res, c);
                col = (c == '\n' || c == '\r') ? 0 : col + 1;
            }
        }
        return out(std::move(res));
    }
    if (name == "format") return Value::string(python_str_format(in, s, a, mk), mk);
    ArgReader r(name.c_str(), a, {});
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return Value::boolean(all_chars(s, py::is_digit));
    if (name == "isalpha") return Value::boolean(all_chars(s, py::is_alpha));
    if (name == "isalnum") return Value::boolean(all_chars(s, py::is_alnum));
    if (name == "isspace") return Value::boolean(all_chars(s, py::is_space));
    if (name == "isascii") return Value::boolean(py::is_ascii(s));
    if (name == "isprintable") return Value::boolean(s.empty() || all_chars(s, py::is_printable));
    if (name == "isidentifier") {
        std::u32string u = py::decode(s);
        bool ok = !u.empty() && (u[0] == '_' || py::is_alpha(u[0]));
        for (char32_t c : u) ok = ok && (c == '_' || py::is_alnum(c));
        return Value::boolean(ok);
    }
    if (name == "isupper" || name == "islower") {
        bool any_cased = false, ok = true;
        for (char32_t c : py::decode(s)) {
            if (name == "isupper" ? py::is_lower(c) : py::is_upper(c)) ok = false;
            if (py::is_cased(c)) any_cased = true;
        }
        return Value::boolean(ok && any_cased);
    }
    if (name == "istitle") return Value::boolean(!s.empty() && py::title(s) == s && py::lower(s) != s);
    raise_error("TemplateRuntimeError", "str." + name + "() is not supported");
}

Value dict_method(const Value& self, const std::string& name, CallArgs& a) {
    const DictData& d = self.dict_data();
    if (name == "get") {
        ArgReader r("get", a, {"key", "default"}, 1);
        if (!is_hashable(r.get(0))) type_error("unhashable type: '" + type_name(r.get(0)) + "'");
        if (const Value* v = d.find(r.get(0))) return *v;
        return r.get_or(1, Value::none());
    }
    ArgReader r(name.c_str(), a, name == "fromkeys" ? std::initializer_list<const char*>{"iterable", "value"}
                                                     : std::initializer_list<const char*>{});
    if (name == "items") {
        std::vector<Value> out;
        for (const auto& kv : d.items) out.push_back(Value::tuple({kv.first, kv.second}));
        return Value::list(std::move(out), SeqType::DictItems);
    }
    if (name == "keys" || name == "values") {
        std::vector<Value> out;
        for (const auto& kv : d.items) out.push_back(name == "keys" ? kv.first : kv.second);
        return Value::list(std::move(out), name == "keys" ? SeqType::DictKeys : SeqType::DictValues);
    }
    if (name == "copy") return Value::dict(std::make_shared<DictData>(d));
    if (name == "fromkeys") {
        auto out = std::make_shared<DictData>();
        for (const auto& k : iterate(r.get(0))) out->set(k, r.get_or(1, Value::none()));
        return Value::dict(out);
    }
    raise_error("TemplateRuntimeError", "dict." + name + "() is not supported");
}

Value seq_method(const Value& self, const std::string& name, CallArgs& a) {
    const auto& items = self.list().items;
    if (name == "count") {
        ArgReader r("count", a, {"value"}, 1);
        int64_t n = 0;
        for (const auto& v : items) n += equals(v, r.get(0)) ? 1 : 0;
        return Value::integer(n);
    }
    if (name == "index") {
        ArgReader r("index", a, {"value", "start", "stop"}, 1);
        int64_t len = static_cast<int64_t>(items.size());
        int64_t b = r.has(1) ? int_arg(r.get(1), "slice indices") : 0;
        int64_t e = r.has(2) ? int_arg(r.get(2), "slice indices") : len;
        if (b < 0) b = std::max<int64_t>(0, b + len);
        if (e < 0) e = std::max<int64_t>(0, e + len);
        for (int64_t i = b; i < std::min(e, len); ++i)
            if (equals(items[static_cast<size_t>(i)], r.get(0))) return Value::integer(i);
        value_error(repr(r.get(0)) + " is not in " + type_name(self));
    }
    if (name == "copy") {
        ArgReader r("copy", a, {});
        return Value::list(items);
    }
    raise_error("TemplateRuntimeError", type_name(self) + "." + name + "() is not supported");
}

// ---- str.format ---------------------------------------------------------------------------------------

struct Spec {
    char32_t fill = ' ';
    char align = 0;
    char sign = '-';
    bool alt = false, zero = false, neg_zero = false;
    int64_t width = -1, precision = -1;
    char grouping = 0;
    char type = 0;
};

Spec parse_spec(const std::string& text) {
    Spec sp;
    std::u32string u = py::decode(text);
    size_t i = 0, n = u.size();
    auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
    if (n >= 2 && is_align(u[1])) {
        sp.fill = u[0];
        sp.align = static_cast<char>(u[1]);
        i = 2;
    } else if (n >= 1 && is_align(u[0])) {
        sp.align = static_cast<char>(u[0]);
        i = 1;
    }
    if (i < n && (u[i] == '+' || u[i] == '-' || u[i] == ' ')) sp.sign = static_cast<char>(u[i++]);
    if (i < n && u[i] == 'z') { sp.neg_zero = true; ++i; }
    if (i < n && u[i] == '#') { sp.alt = true; ++i; }
    if (i < n && u[i] == '0') { sp.zero = true; ++i; }
    while (i < n && u[i] >= '0' && u[i] <= '9') sp.width = push_width_digit(sp.width, u[i++]);
    if (i < n && (u[i] == ',' || u[i] == '_')) sp.grouping = static_cast<char>(u[i++]);
    if (i < n && u[i] == '.') {
        ++i;
        sp.precision = 0;
        if (i >= n || u[i] < '0' || u[i] > '9') value_error("Format specifier missing precision");
        while (i < n && u[i] >= '0' && u[i] <= '9') sp.precision = push_width_digit(sp.precision, u[i++]);
    }
    check_string_size(static_cast<uint64_t>(std::max<int64_t>(sp.width, 0)));
    check_string_size(static_cast<uint64_t>(std::max<int64_t>(sp.precision, 0)));
    if (i < n) sp.type = static_cast<char>(u[i++]);
    if (i < n) value_error("Invalid format specifier");
    if (sp.zero && !sp.align) {
        sp.fill = '0';
        sp.align = '=';
    }
    return sp;
}

std::string group_digits(const std::string& digits, char sep, int every) {
    std::string out;
    int n = static_cast<int>(digits.size());
    for (int i = 0; i < n; ++i) {
        if (i > 0 && (n - i) % every == 0) out.push_back(sep);
        out.push_back(digits[i]);
    }
    return out;
}

std::string align_number(const Spec& sp, const std::string& sign, std::string body) {
    int64_t len = static_cast<int64_t>(py::cp_length(sign) + py::cp_length(body));
    if (sp.width <= len) return sign + body;
    std::string padding;
    for (int64_t i = 0; i < sp.width - len; ++i) py::append_cp(padding, sp.fill);
    char align = sp.align ? sp.align : '>';
    if (align == '=') return sign + padding + body;
    return py::pad(sign + body, sp.width, sp.fill, align == '<' ? -1 : (align == '^' ? 0 : 1));
}

std::string format_int(int64_t v, const Spec& sp) {
    char type = sp.type ? sp.type : 'd';
    bool neg = v < 0;
    uint64_t mag = neg ? 0ULL - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    std::string digits, prefix;
    char buf[80];
    switch (type) {
        case 'd':
        case 'n': std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(mag)); digits = buf; break;
        case 'x': std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(mag)); digits = buf; prefix = "0x"; break;
        case 'X': std::snprintf(buf, sizeof buf, "%llX", static_cast<unsigned long long>(mag)); digits = buf; prefix = "0X"; break;
        case 'o': std::snprintf(buf, sizeof buf, "%llo", static_cast<unsigned long long>(mag)); digits = buf; prefix = "0o"; break;
        case 'b': {
            if (mag == 0) digits = "0";
            for (uint64_t m = mag; m; m >>= 1) digits.insert(digits.begin(), static_cast<char>('0' + (m & 1)));
            prefix = "0b";
            break;
        }
        case 'c': {
            std::string s;
            py::append_cp(s, static_cast<char32_t>(v));
            return align_number(sp, "", s);
        }
        default: value_error(std::string("Unknown format code '") + type + "' for object of type 'int'");
    }
    if (sp.grouping) digits = group_digits(digits, sp.grouping, (type == 'd' || type == 'n') ? 3 : 4);
    std::string sign = neg ? "-" : (sp.sign == '+' ? "+" : (sp.sign == ' ' ? " " : ""));
    if (sp.alt) sign += prefix;
    return align_number(sp, sign, digits);
}

std::string format_float(double v, const Spec& sp) {
    char type = sp.type;
    std::string body;
    char buf[512];
    bool neg = std::signbit(v) && !(sp.neg_zero && v == 0.0);
    double mag = std::fabs(v);
    int prec = static_cast<int>(sp.precision < 0 ? 6 : std::min<int64_t>(sp.precision, 300));
    if (std::isnan(v) || std::isinf(v)) {
        body = std::isnan(v) ? "nan" : "inf";
        if (type == 'E' || type == 'F' || type == 'G') body = py::upper(body);
    } else if (type == 0 && sp.precision < 0) {
        body = py::float_repr(mag);
    } else if (type == 0) {
        // no type with a precision: like 'g', but exponent notation from exp >= p-1 and always a '.0'
        int p = std::max(prec, 1);
        std::snprintf(buf, sizeof buf, "%.*e", p - 1, mag);
        int exp = std::atoi(std::strchr(buf, 'e') + 1);
        if (exp < -4 || exp >= p - 1) {
            std::string m(buf, std::strchr(buf, 'e'));
            if (m.find('.') != std::string::npos && !sp.alt) {
                while (m.back() == '0') m.pop_back();
                if (m.back() == '.') m.pop_back();
            }
            char e[16];
            std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
            body = m + e;
        } else {
            std::snprintf(buf, sizeof buf, "%.*f", std::max(p - 1 - exp, 0), mag);
            body = buf;
            if (body.find('.') != std::string::npos && !sp.alt) {
                while (body.back() == '0') body.pop_back();
                if (body.back() == '.') body.pop_back();
            }
            if (body.find('.') == std::string::npos) body += ".0";
        }
    } else if (type == 'g' || type == 'G' || type == 'n') {
        int p = sp.precision < 0 ? 6 : std::max(prec, 1);
        std::snprintf(buf, sizeof buf, sp.alt ? "%#.*g" : "%.*g", p, mag);
        body = buf;
        if (type == 'G') body = py::upper(body);
    } else if (type == 'e' || type == 'E' || type == 'f' || type == 'F' || type == '%') {
        double x = type == '%' ? mag * 100 : mag;
        char c = type == '%' ? 'f' : type;
        std::string f = std::string(sp.alt ? "%#." : "%.") + std::to_string(prec) + c;
        std::snprintf(buf, sizeof buf, f.c_str(), x);
        body = buf;
        if (type == '%') body += '%';
    } else {
        value_error(std::string("Unknown format code '") + type + "' for object of type 'float'");
    }
    if (sp.grouping) {
        size_t dot = body.find_first_of(".e%");
        std::string intpart = body.substr(0, dot == std::string::npos ? body.size() : dot);
        if (!intpart.empty() && std::isdigit(static_cast<unsigned char>(intpart[0])))
            body = group_digits(intpart, sp.grouping, 3) + (dot == std::string::npos ? "" : body.substr(dot));
    }
    std::string sign = neg ? "-" : (sp.sign == '+' ? "+" : (sp.sign == ' ' ? " " : ""));
    return align_number(sp, sign, body);
}

std::string apply_format_spec(const Value& v, const std::string& spec_text) {
    if (spec_text.empty()) return to_str(v);
    Spec sp = parse_spec(spec_text);
    if (v.is_string()) {
        if (sp.type && sp.type != 's') value_error(std::string("Unknown format code '") + sp.type + "' for object of type 'str'");
        if (sp.sign != '-') value_error("Sign not allowed in string format specifier");
        if (sp.align == '=') value_error("'=' alignment not allowed in string format specifier");
        std::string s = v.str();
        if (sp.precision >= 0) s = cp_slice(s, 0, sp.precision);
        char align = sp.align ? sp.align : '<';
        return py::pad(s, sp.width, sp.fill, align == '<' ? -1 : (align == '^' ? 0 : 1));
    }
    if (v.is_int() || v.is_bool()) {
        if (sp.type && std::string("eEfFgG%").find(sp.type) != std::string::npos)
            return format_float(static_cast<double>(v.as_int()), sp);
        return format_int(v.as_int(), sp);
    }
    if (v.is_float()) {
        if (sp.type && std::string("eEfFgGn%").find(sp.type) == std::string::npos)
            value_error(std::string("Unknown format code '") + sp.type + "' for object of type 'float'");
        return format_float(v.as_float(), sp);
    }
    type_error("unsupported format string passed to " + type_name(v) + ".__format__");
}

}  // namespace

std::string python_str_format(Interp& in, const std::string& fmt, CallArgs& args, bool markup) {
    std::string out;
    size_t i = 0, n = fmt.size();
    int auto_index = 0;
    bool manual = false, automatic = false;
    while (i < n) {
        char c = fmt[i];
        if (c == '}') {
            if (i + 1 < n && fmt[i + 1] == '}') {
                out.push_back('}');
                i += 2;
                continue;
            }
            value_error("Single '}' encountered in format string");
        }
        if (c != '{') {
            out.push_back(c);
            ++i;
            continue;
        }
        if (i + 1 < n && fmt[i + 1] == '{') {
            out.push_back('{');
            i += 2;
            continue;
        }
        // find the matching close brace (the spec may nest one level of {})
        size_t j = i + 1;
        int depth = 1;
        while (j < n && depth > 0) {
            if (fmt[j] == '{') ++depth;
            else if (fmt[j] == '}') --depth;
            if (depth > 0) ++j;
        }
        if (j >= n) value_error("expected '}' before end of string");
        std::string field = fmt.substr(i + 1, j - i - 1);
        i = j + 1;
        std::string spec, conv;
        size_t colon = std::string::npos, bang = std::string::npos;
        for (size_t k = 0, br = 0; k < field.size(); ++k) {
            if (field[k] == '[') ++br;
            else if (field[k] == ']' && br) --br;
            else if (!br && field[k] == '!' && bang == std::string::npos && colon == std::string::npos) bang = k;
            else if (!br && field[k] == ':') {
                colon = k;
                break;
            }
        }
        if (colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field = field.substr(0, colon);
        }
        if (bang != std::string::npos) {
            conv = field.substr(bang + 1);
            field = field.substr(0, bang);
        }
        if (spec.find('{') != std::string::npos) {
            CallArgs copy = args;
            spec = python_str_format(in, spec, copy, false);
        }
        // arg_name then .attr / [key] accessors
        size_t k = 0;
        while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
        std::string arg_name = field.substr(0, k);
        Value v;
        if (arg_name.empty() || std::all_of(arg_name.begin(), arg_name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
            size_t idx;
            if (arg_name.empty()) {
                if (manual) value_error("cannot switch from manual field specification to automatic field numbering");
                automatic = true;
                idx = static_cast<size_t>(auto_index++);
            } else {
                if (automatic) value_error("cannot switch from automatic field numbering to manual field specification");
                manual = true;
                if (arg_name.size() > 18) value_error("Too many decimal digits in format string");  // as Python
                idx = static_cast<size_t>(std::stoull(arg_name));
            }
            if (idx >= args.pos.size())
                raise_error("IndexError", "Replacement index " + std::to_string(idx) + " out of range for positional args tuple");
            v = args.pos[idx];
        } else {
            bool found = false;
            for (auto& kv : args.kw)
                if (kv.first == arg_name) {
                    v = kv.second;
                    found = true;
                }
            if (!found) raise_error("KeyError", py::repr(arg_name));
        }
        while (k < field.size()) {
            if (field[k] == '.') {
                size_t e = k + 1;
                while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
                v = in.getattr(v, field.substr(k + 1, e - k - 1));
                k = e;
            } else {
                size_t e = field.find(']', k);
                if (e == std::string::npos) value_error("Missing ']' in format string");
                std::string key = field.substr(k + 1, e - k - 1);
                bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
                if (numeric && key.size() > 18) value_error("Too many decimal digits in format string");  // as Python
                v = in.getitem(v, numeric ? Value::integer(std::stoll(key)) : Value::string(key));
                k = e + 1;
            }
        }
        if (conv == "r" || conv == "a") v = Value::string(repr(v));
        else if (conv == "s") v = Value::string(to_str(v));
        else if (!conv.empty()) value_error("Unknown conversion specifier " + conv);
        std::string piece = apply_format_spec(v, spec);
        if (markup && !(v.is_string() && v.markup())) piece = py::escape_html(piece);
        check_string_size(out.size() + piece.size());
        out += piece;
    }
    return out;
}

bool find_method(const Value& obj, const std::string& name, Value& out) {
    static const std::unordered_set<std::string> kStr = {
        "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
        "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
        "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans",
        "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit",
        "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper", "zfill"};
    static const std::unordered_set<std::string> kDict = {"clear", "copy", "fromkeys", "get", "items", "keys",
                                                          "pop", "popitem", "setdefault", "update", "values"};
    static const std::unordered_set<std::string> kDictUnsafe = {"clear", "pop", "popitem", "setdefault", "update"};
    static const std::unordered_set<std::string> kList = {"append", "clear", "copy", "count", "extend", "index",
                                                          "insert", "pop", "remove", "reverse", "sort"};
    static const std::unordered_set<std::string> kListUnsafe = {"append", "clear", "extend", "insert", "pop",
                                                                "remove", "reverse", "sort"};
    auto unsafe = [&](const std::string& owner) {
        out = Value::undefined("access to attribute " + py::repr(name) + " of " + py::repr(owner) + " object is unsafe.", true);
        return true;
    };
    Value self = obj;
    switch (obj.kind()) {
        case Kind::String:
            if (!kStr.count(name)) return false;
            out = make_builtin(name, [self, name](Interp& in, CallArgs& a) { return str_method(in, self, name, a); },
                               type_name(obj));
            return true;
        case Kind::Dict:
            if (!kDict.count(name)) return false;
            if (kDictUnsafe.count(name)) return unsafe("dict");
            out = make_builtin(name, [self, name](Interp&, CallArgs& a) { return dict_method(self, name, a); }, "dict");
            return true;
        case Kind::List: {
            SeqType t = obj.list().type;
            if (t == SeqType::List) {
                if (!kList.count(name)) return false;
                if (kListUnsafe.count(name)) return unsafe("list");
            } else if (t == SeqType::Tuple || t == SeqType::Range) {
                if (name != "count" && name != "index") {
                    if (t == SeqType::Range && (name == "start" || name == "stop" || name == "step")) {
                        const ListData& l = obj.list();
                        out = Value::integer(name == "start" ? l.start : (name == "stop" ? l.stop : l.step));
                        return true;
                    }
                    return false;
                }
            } else {
                return false;
            }
            out = make_builtin(name, [self, name](Interp&, CallArgs& a) { return seq_method(self, name, a); }, type_name(obj));
            return true;
        }
        default: return false;
    }
}

}  // namespace ikllm::chat
