// jinja2 3.1's builtin filters with their Python behaviour (argument names and defaults, Undefined
// handling, generators for map/select/items/...), and transformers' `tojson` (plain json.dumps).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "chat/jinja_error.h"
#include "chat/jinja_interp.h"
#include "chat/py_json.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

using FilterFn = Value (*)(Interp&, const Value&, CallArgs&);

[[noreturn]] void filter_arg_error(const std::string& msg) { raise_error("FilterArgumentError", msg); }

// jinja2's soft_str: strings (Markup included) unchanged, anything else through str().
Value soft_str(const Value& v) { return v.is_string() ? v : Value::string(to_str(v)); }

Value generator(std::vector<Value> items) { return Value::list(std::move(items), SeqType::Generator); }

// A generator whose body runs on first consumption (see ListData::produce).
Value lazy(std::function<std::vector<Value>()> fn) {
    Value g = generator({});
    g.list().produce = std::move(fn);
    return g;
}

Value lower_if_str(const Value& v) { return v.is_string() ? Value::string(py::lower(v.str())) : v; }

// make_attrgetter: dotted attribute path resolved with getitem, optional default and case folding.
Value get_attribute(Interp& in, Value item, const Value& attribute, bool ignore_case, const Value* deflt) {
    if (!attribute.is_none() && !attribute.is_undefined()) {
        std::vector<Value> parts;
        if (attribute.is_string()) {
            for (auto& p : py::split_sep(attribute.str(), ".", -1, false)) {
                bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
                parts.push_back(digits ? Value::integer(std::atoll(p.c_str())) : Value::string(p));
            }
        } else {
            parts.push_back(attribute);
        }
        for (const auto& part : parts) {
            item = in.getitem(item, part);
            if (deflt && !deflt->is_none() && item.is_undefined()) item = *deflt;
        }
    }
    return ignore_case ? lower_if_str(item) : item;
}

void sort_by_keys(std::vector<Value>& items, std::vector<Value>& keys, bool reverse) {
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return reverse ? less(keys[b], keys[a]) : less(keys[a], keys[b]);
    });
    std::vector<Value> sorted;
    sorted.reserve(items.size());
    for (size_t i : order) sorted.push_back(items[i]);
    items = std::move(sorted);
}

int64_t int_param(const Value& v, const char* what) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) raise_undefined(v);
    type_error(std::string("'") + type_name(v) + "' object cannot be interpreted as an integer (" + what + ")");
}

// Python float(str): optional whitespace, sign, decimal digits with single underscores, inf/nan.
bool parse_py_float(const std::string& text, double& out) {
    std::string s = py::strip(text, nullptr, true, true);
    std::string clean;
    size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean.push_back(s[i++]);
    std::string rest = py::lower(s.substr(i));
    if (rest == "inf" || rest == "infinity" || rest == "nan") {
        double v = rest == "nan" ? NAN : INFINITY;
        out = (!clean.empty() && clean[0] == '-') ? -v : v;
        return true;
    }
    bool digits = false, prev_digit = false;
    int stage = 0;  // 0 int part, 1 fraction, 2 exponent
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            digits = true;
            prev_digit = true;
            clean.push_back(c);
        } else if (c == '_') {
            if (!prev_digit || i + 1 >= s.size() || !(s[i + 1] >= '0' && s[i + 1] <= '9')) return false;
            prev_digit = false;
        } else if (c == '.' && stage == 0) {
            stage = 1;
            prev_digit = false;
            clean.push_back(c);
        } else if ((c == 'e' || c == 'E') && stage < 2 && digits) {
            stage = 2;
            prev_digit = false;
            digits = false;
            clean.push_back('e');
            if (i + 1 < s.size() && (s[i + 1] == '+' || s[i + 1] == '-')) clean.push_back(s[++i]);
        } else {
            return false;
        }
    }
    if (!digits) return false;
    out = std::strtod(clean.c_str(), nullptr);
    return true;
}

// Python int(str, base).
bool parse_py_int(const std::string& text, int base, int64_t& out) {
    std::string s = py::strip(text, nullptr, true, true);
    size_t i = 0;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    auto has_prefix = [&](char p) { return i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 0x20) == p; };
    if (base == 0) {
        if (has_prefix('x')) base = 16;
        else if (has_prefix('o')) base = 8;
        else if (has_prefix('b')) base = 2;
        else base = 10;
        if (base != 10) i += 2;
    } else if ((base == 16 && has_prefix('x')) || (base == 8 && has_prefix('o')) || (base == 2 && has_prefix('b'))) {
        i += 2;
        if (i < s.size() && s[i] == '_') ++i;
    }
    if (base < 2 || base > 36) value_error("int() base must be >= 2 and <= 36, or 0");
    bool any = false, prev_digit = false;
    uint64_t v = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (c == '_') {
            if (!prev_digit) return false;
            prev_digit = false;
            continue;
        }
        int d = (c >= '0' && c <= '9') ? c - '0' : ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ? (c | 0x20) - 'a' + 10 : 99;
        if (d >= base) return false;
        if (v > (static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
            raise_error("OverflowError", "integer too large");
        v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
        any = true;
        prev_digit = true;
    }
    if (!any || !prev_digit) return false;
    out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
}

// Python round(float, ndigits): correctly rounded, ties to even (glibc printf rounds the same way).
double round_float(double x, int64_t nd) {
    if (std::isnan(x) || std::isinf(x)) return x;
    if (nd >= 0) {
        if (nd > 320) return x;
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(nd), x);
        return std::strtod(buf, nullptr);
    }
    double p = std::pow(10.0, static_cast<double>(-nd));
    return std::nearbyint(x / p) * p;
}

// ---- the filters ---------------------------------------------------------------------------------------

Value f_abs(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_abs", a, {});
    if (v.is_float()) return Value::number(std::fabs(v.as_float()));
    if (v.is_big()) return v.big_digits()[0] == '-' ? Value::big_integer(v.big_digits().substr(1), -v.as_float()) : v;
    if (v.is_number()) {
        int64_t i = v.as_int();
        if (i == INT64_MIN) return Value::big_integer("9223372036854775808", 9223372036854775808.0);
        return Value::integer(i < 0 ? -i : i);
    }
    type_error("bad operand type for abs(): '" + type_name(v) + "'");
}

// Python getattr only: unlike `obj.name`, a dict key is not an attribute.
Value f_attr(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_attr", a, {"name"}, 1);
    std::string name = to_str(r.get(0));
    return in.python_getattr(v, name);
}

Value f_batch(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_batch", a, {"linecount", "fill_with"}, 1);
    Value count = r.get(0), fill = r.get_or(1, Value::none()), src = v;
    return lazy([count, fill, src]() {
        std::vector<Value> out, tmp;
        for (auto& item : iterate(src)) {
            if (equals(Value::integer(static_cast<int64_t>(tmp.size())), count)) {
                out.push_back(Value::list(std::move(tmp)));
                tmp.clear();
            }
            tmp.push_back(item);
        }
        if (!tmp.empty()) {
            if (!fill.is_none()) {
                int64_t n = int_param(count, "linecount");
                if (n > 0) check_list_size(static_cast<uint64_t>(n));
                while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(fill);
            }
            out.push_back(Value::list(std::move(tmp)));
        }
        return out;
    });
}

Value f_capitalize(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_capitalize", a, {});
    Value s = soft_str(v);
    return Value::string(py::capitalize(s.str()), s.markup());
}

Value f_center(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_center", a, {"width"});
    Value s = soft_str(v);
    return Value::string(py::pad(s.str(), r.has(0) ? int_param(r.get(0), "width") : 80, ' ', 0), s.markup());
}

Value f_default(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_default", a, {"default_value", "boolean"});
    bool boolean = r.has(1) && truthy(r.get(1));
    if (v.is_undefined() || (boolean && !truthy(v))) return r.get_or(0, Value::string(""));
    return v;
}

Value f_dictsort(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_dictsort", a, {"case_sensitive", "by", "reverse"});
    bool cs = r.has(0) && truthy(r.get(0));
    std::string by = r.has(1) ? to_str(r.get(1)) : "key";
    bool reverse = r.has(2) && truthy(r.get(2));
    int pos;
    if (by == "key") pos = 0;
    else if (by == "value") pos = 1;
    else filter_arg_error("You can only sort by either \"key\" or \"value\"");
    if (v.is_undefined()) raise_undefined(v);
    if (!v.is_dict()) raise_error("AttributeError", "'" + type_name(v) + "' object has no attribute 'items'");
    std::vector<Value> items, keys;
    for (const auto& kv : v.dict_data().items) {
        items.push_back(Value::tuple({kv.first, kv.second}));
        Value k = pos == 0 ? kv.first : kv.second;
        keys.push_back(cs ? k : lower_if_str(k));
    }
    sort_by_keys(items, keys, reverse);
    (void)in;
    return Value::list(std::move(items));
}

Value f_escape(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("escape", a, {});
    return escape_value(v);
}

Value f_forceescape(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_forceescape", a, {});
    return Value::string(py::escape_html(to_str(v)), true);
}

Value f_filesizeformat(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_filesizeformat", a, {"binary"});
    bool binary = r.has(0) && truthy(r.get(0));
    double bytes;
    if (v.is_number()) bytes = v.as_float();
    else if (!(v.is_string() && parse_py_float(v.str(), bytes))) value_error("could not convert to float");
    double base = binary ? 1024 : 1000;
    static const char* const kDec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char* const kBin[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    if (bytes == 1) return Value::string("1 Byte");
    if (bytes < base) return Value::string(std::to_string(static_cast<int64_t>(bytes)) + " Bytes");
    char buf[64];
    for (int i = 0; i < 8; ++i) {
        double unit = std::pow(base, i + 2);
        if (bytes < unit || i == 7) {
            std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, binary ? kBin[i] : kDec[i]);
            return Value::string(buf);
        }
    }
    return Value::string("");
}

Value f_first(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_first", a, {});
    if (v.is_list()) {
        ListData& l = v.list();
        l.materialize();
        bool single = l.type == SeqType::Generator || l.type == SeqType::ReverseIter;
        size_t start = single ? l.pos : 0;
        if (start < l.items.size()) {
            if (single) l.pos = start + 1;
            return l.items[start];
        }
        return Value::undefined("No first item, sequence was empty.");
    }
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Value f_last(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_last", a, {});
    if (v.is_list() && !has_len(v)) type_error("'" + type_name(v) + "' object is not reversible");
    if (!(v.is_list() || v.is_string() || v.is_dict() || v.is_undefined()))
        type_error("'" + type_name(v) + "' object is not reversible");
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_float(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_float", a, {"default"});
    Value deflt = r.get_or(0, Value::number(0.0));
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_number()) return Value::number(v.as_float());
    double d;
    if (v.is_string() && parse_py_float(v.str(), d)) return Value::number(d);
    return deflt;
}

Value f_format(Interp&, const Value& v, CallArgs& a) {
    if (!a.pos.empty() && !a.kw.empty()) filter_arg_error("can't handle positional and keyword arguments at the same time");
    Value s = soft_str(v);
    Value args;
    if (!a.kw.empty()) {
        auto d = std::make_shared<DictData>();
        for (auto& kv : a.kw) d->set(Value::string(kv.first), kv.second);
        args = Value::dict(d);
    } else {
        args = Value::tuple(a.pos);
    }
    return Value::string(percent_format(s.str(), args, s.markup()), s.markup());
}

Value f_groupby(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_groupby", a, {"attribute", "default", "case_sensitive"}, 1);
    Value deflt = r.get_or(1, Value::none());
    bool cs = r.has(2) && truthy(r.get(2));
    std::vector<Value> items = iterate(v), keys;
    for (const auto& item : items) keys.push_back(get_attribute(in, item, r.get(0), !cs, &deflt));
    sort_by_keys(items, keys, false);
    keys.clear();
    for (const auto& item : items) keys.push_back(get_attribute(in, item, r.get(0), !cs, &deflt));
    std::vector<Value> groups;
    for (size_t i = 0; i < items.size();) {
        size_t j = i;
        std::vector<Value> members;
        while (j < items.size() && equals(keys[j], keys[i])) members.push_back(items[j++]);
        Value grouper = cs ? keys[i] : get_attribute(in, members.front(), r.get(0), false, &deflt);
        Value g = Value::tuple({grouper, Value::list(std::move(members))});
        g.list().group = true;
        groups.push_back(g);
        i = j;
    }
    return Value::list(std::move(groups));
}

Value f_indent(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_indent", a, {"width", "first", "blank"});
    std::string indention;
    if (r.has(0) && r.get(0).is_string()) indention = r.get(0).str();
    else {
        const int64_t width = std::max<int64_t>(0, r.has(0) ? int_param(r.get(0), "width") : 4);
        check_string_size(static_cast<uint64_t>(width));
        indention = std::string(static_cast<size_t>(width), ' ');
    }
    bool first = r.has(1) && truthy(r.get(1));
    bool blank = r.has(2) && truthy(r.get(2));
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_seq(SeqType::List)) raise_error("AttributeError", "'list' object has no attribute 'splitlines'");
    if (!v.is_string()) type_error("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
    std::string s = v.str() + "\n";  // jinja2 appends a newline so splitlines keeps a trailing empty line
    std::vector<std::string> lines = py::splitlines(s, false);
    if (!indention.empty() && lines.size() + 1 > kMaxString / indention.size()) check_string_size(UINT64_MAX);
    check_string_size(s.size() + (lines.size() + 1) * indention.size());
    std::string rv;
    if (blank) {
        for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
    }
    if (first) rv = indention + rv;
    return Value::string(std::move(rv), v.markup());
}

Value f_int(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_int", a, {"default", "base"});
    Value deflt = r.get_or(0, Value::integer(0));
    int64_t base = r.has(1) ? int_param(r.get(1), "base") : 10;
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_big()) return v;
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_float()) {
        double d = v.as_float();
        if (std::isnan(d)) return deflt;
        if (std::isinf(d)) raise_error("OverflowError", "cannot convert float infinity to integer");
        if (std::fabs(d) >= 9.2e18) raise_error("OverflowError", "integer too large");
        return Value::integer(static_cast<int64_t>(std::trunc(d)));
    }
    if (v.is_string()) {
        int64_t i;
        if (parse_py_int(v.str(), static_cast<int>(base), i)) return Value::integer(i);
        double d;
        if (parse_py_float(v.str(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value::integer(static_cast<int64_t>(std::trunc(d)));
        if (parse_py_float(v.str(), d) && std::isinf(d)) raise_error("OverflowError", "cannot convert float infinity to integer");
    }
    return deflt;
}

Value f_items(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_items", a, {});
    Value src = v;
    return lazy([src]() {
        std::vector<Value> out;
        if (src.is_undefined()) return out;
        if (!src.is_dict()) type_error("Can only get item pairs from a mapping.");
        for (const auto& kv : src.dict_data().items) out.push_back(Value::tuple({kv.first, kv.second}));
        return out;
    });
}

Value f_join(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_join", a, {"d", "attribute"});
    std::string sep = r.has(0) ? to_str(r.get(0)) : "";
    std::string out;
    bool first = true;
    for (auto& item : iterate(v)) {
        std::string s = to_str(r.has(1) ? get_attribute(in, item, r.get(1), false, nullptr) : item);
        check_string_size(out.size() + sep.size() + s.size());
        if (!first) out += sep;
        first = false;
        out += s;
    }
    return Value::string(std::move(out));
}

Value f_length(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("len", a, {});
    return Value::integer(length(v));
}

Value f_list(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_list", a, {});
    return Value::list(iterate(v));
}

Value f_lower(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_lower", a, {});
    Value s = soft_str(v);
    return Value::string(py::lower(s.str()), s.markup());
}

Value f_upper(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_upper", a, {});
    Value s = soft_str(v);
    return Value::string(py::upper(s.str()), s.markup());
}

Value f_map(Interp& in, const Value& v, CallArgs& a) {
    Value src = v;
    CallArgs args = a;
    Interp* interp = &in;
    return lazy([interp, src, args]() {
        std::vector<Value> out;
        if (!truthy(src)) return out;  // jinja2 only looks at a truthy input (None maps to nothing)
        std::vector<Value> items = iterate(src);
        bool by_attr = args.pos.empty() &&
                       std::any_of(args.kw.begin(), args.kw.end(), [](const auto& kv) { return kv.first == "attribute"; });
        if (by_attr) {
            Value attribute, deflt = Value::none();
            for (auto& kv : args.kw) {
                if (kv.first == "attribute") attribute = kv.second;
                else if (kv.first == "default") deflt = kv.second;
                else filter_arg_error("Unexpected keyword argument " + py::repr(kv.first));
            }
            for (auto& item : items) out.push_back(get_attribute(*interp, item, attribute, false, &deflt));
            return out;
        }
        if (args.pos.empty()) filter_arg_error("map requires a filter argument");
        std::string name = to_str(args.pos[0]);
        CallArgs rest;
        rest.pos.assign(args.pos.begin() + 1, args.pos.end());
        rest.kw = args.kw;
        for (auto& item : items) {
            CallArgs copy = rest;
            out.push_back(interp->call_filter(name, item, copy));
        }
        return out;
    });
}

Value min_max(Interp& in, const Value& v, CallArgs& a, bool want_max) {
    ArgReader r(want_max ? "do_max" : "do_min", a, {"case_sensitive", "attribute"});
    bool cs = r.has(0) && truthy(r.get(0));
    Value attribute = r.get_or(1, Value::none());
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = get_attribute(in, items[0], attribute, !cs, nullptr);
    for (size_t i = 1; i < items.size(); ++i) {
        Value k = get_attribute(in, items[i], attribute, !cs, nullptr);
        if (want_max ? less(best_key, k, ">") : less(k, best_key, "<")) {
            best = i;
            best_key = k;
        }
    }
    return items[best];
}
Value f_max(Interp& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }
Value f_min(Interp& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }

Value select_reject(Interp& in, const Value& v, CallArgs& a, bool lookup_attr, bool select) {
    Value src = v;
    CallArgs args = a;
    Interp* interp = &in;
    return lazy([interp, src, args, lookup_attr, select]() {
        std::vector<Value> out;
        if (!truthy(src)) return out;  // jinja2 only looks at a truthy input (None selects nothing)
        size_t off = 0;
        Value attribute;
        if (lookup_attr) {
            if (args.pos.empty()) filter_arg_error("Missing parameter for attribute name");
            attribute = args.pos[0];
            off = 1;
        }
        bool has_test = args.pos.size() > off;
        std::string test = has_test ? to_str(args.pos[off]) : "";
        CallArgs targs;
        if (has_test) targs.pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(off + 1), args.pos.end());
        targs.kw = args.kw;
        for (auto& item : iterate(src)) {
            Value x = lookup_attr ? get_attribute(*interp, item, attribute, false, nullptr) : item;
            bool ok;
            if (has_test) {
                CallArgs copy = targs;
                ok = interp->call_test(test, x, copy);
            } else {
                ok = truthy(x);
            }
            if (ok == select) out.push_back(item);
        }
        return out;
    });
}
Value f_select(Interp& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, false, true); }
Value f_reject(Interp& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, false, false); }
Value f_selectattr(Interp& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, true, true); }
Value f_rejectattr(Interp& in, const Value& v, CallArgs& a) { return select_reject(in, v, a, true, false); }

Value f_replace(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_replace", a, {"old", "new", "count"}, 2);
    int64_t count = (r.has(2) && !r.get(2).is_none()) ? int_param(r.get(2), "count") : -1;
    return Value::string(py::replace(to_str(v), to_str(r.get(0)), to_str(r.get(1)), count));
}

Value f_reverse(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_reverse", a, {});
    if (v.is_string()) {
        std::u32string u = py::decode(v.str());
        std::reverse(u.begin(), u.end());
        return Value::string(py::encode(u), v.markup());
    }
    bool reversible = v.is_undefined() || v.is_dict() || (v.is_list() && has_len(v));
    if (!reversible && !v.is_list()) filter_arg_error("argument must be iterable");
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items), reversible ? SeqType::ReverseIter : SeqType::List);
}

Value f_round(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_round", a, {"precision", "method"});
    int64_t prec = r.has(0) ? int_param(r.get(0), "precision") : 0;
    std::string method = r.has(1) ? to_str(r.get(1)) : "common";
    if (method != "common" && method != "ceil" && method != "floor") filter_arg_error("method must be common, ceil or floor");
    if (v.is_undefined()) type_error("type Undefined doesn't define __round__ method");
    if (!v.is_number()) type_error("type " + type_name(v) + " doesn't define __round__ method");
    if (method == "common") {
        if (v.is_float()) return Value::number(round_float(v.as_float(), prec));
        if (v.is_big()) {
            if (prec >= 0) return v;
            raise_error("OverflowError", "arithmetic on integers beyond 64 bits is not supported");
        }
        int64_t i = v.as_int();
        if (prec >= 0) return Value::integer(i);
        int64_t p = 1;
        for (int64_t k = 0; k < -prec && p < INT64_MAX / 10; ++k) p *= 10;
        int64_t q = i / p, rem = i % p;
        if (rem < 0) {
            rem += p;
            --q;
        }
        if (rem * 2 > p || (rem * 2 == p && (q % 2 != 0))) ++q;
        return Value::integer(q * p);
    }
    double scale = std::pow(10.0, static_cast<double>(prec));
    double x = v.as_float() * scale;
    double y = method == "ceil" ? std::ceil(x) : std::floor(x);
    return Value::number(y / scale);
}

Value f_safe(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_mark_safe", a, {});
    return Value::string(to_str(v), true);
}

Value f_slice(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_slice", a, {"slices", "fill_with"}, 1);
    Value count = r.get(0), fill = r.get_or(1, Value::none()), src = v;
    return lazy([count, fill, src]() {
        std::vector<Value> seq = iterate(src), out;
        int64_t slices = int_param(count, "slices");
        int64_t len = static_cast<int64_t>(seq.size());
        if (slices == 0) raise_error("ZeroDivisionError", "integer division or modulo by zero");
        if (slices < 0) return out;
        check_list_size(static_cast<uint64_t>(slices));  // one list per slice, however short the input
        int64_t per = len / slices, extra = len % slices, offset = 0;
        for (int64_t n = 0; n < slices; ++n) {
            int64_t start = offset + n * per;
            if (n < extra) ++offset;
            int64_t end = offset + (n + 1) * per;
            std::vector<Value> tmp(seq.begin() + std::min(start, len), seq.begin() + std::min(end, len));
            if (!fill.is_none() && n >= extra) tmp.push_back(fill);
            out.push_back(Value::list(std::move(tmp)));
        }
        return out;
    });
}

Value f_sort(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_sort", a, {"reverse", "case_sensitive", "attribute"});
    bool reverse = r.has(0) && truthy(r.get(0));
    bool cs = r.has(1) && truthy(r.get(1));
    Value attribute = r.get_or(2, Value::none());
    std::vector<Value> items = iterate(v), keys;
    for (const auto& item : items) keys.push_back(get_attribute(in, item, attribute, !cs, nullptr));
    sort_by_keys(items, keys, reverse);
    return Value::list(std::move(items));
}

Value f_string(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("soft_str", a, {});
    return soft_str(v);
}

Value f_striptags(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_striptags", a, {});
    std::string s = to_str(v), noTags;
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 4, "<!--") == 0) {
            size_t e = s.find("-->", i + 4);
            if (e != std::string::npos) {
                i = e + 3;
                continue;
            }
        }
        if (s[i] == '<') {
            size_t e = s.find('>', i + 1);
            if (e != std::string::npos) {
                i = e + 1;
                continue;
            }
        }
        noTags.push_back(s[i++]);
    }
    std::string joined;
    for (const auto& w : py::split_ws(noTags, -1, false)) joined += (joined.empty() ? "" : " ") + w;
    static const std::pair<const char*, const char*> kEntities[] = {
        {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"}, {"&apos;", "'"}, {"&amp;", "&"}};
    for (const auto& e : kEntities) joined = py::replace(joined, e.first, e.second, -1);
    return Value::string(joined);
}

Value f_sum(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_sum", a, {"attribute", "start"});
    Value total = r.get_or(1, Value::integer(0));
    if (total.is_string()) type_error("sum() can't sum strings [use ''.join(seq) instead]");
    for (const auto& item : iterate(v))
        total = op_add(total, r.has(0) && !r.get(0).is_none() ? get_attribute(in, item, r.get(0), false, nullptr) : item);
    return total;
}

Value f_title(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_title", a, {});
    // jinja2 splits before runs of [-\s({[<] and upper-cases the first character of every piece
    std::u32string u = py::decode(to_str(v));
    auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c); };
    std::u32string out;
    bool at_start = true;
    for (size_t i = 0; i < u.size(); ++i) {
        char32_t c = u[i];
        if (is_sep(c)) {
            out.push_back(c);
            at_start = true;
            continue;
        }
        out.push_back(at_start ? py::to_upper(c) : py::to_lower(c));
        at_start = false;
    }
    return Value::string(py::encode(out));
}

Value f_tojson(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonDumpOptions opt;
    opt.ensure_ascii = r.has(0) && truthy(r.get(0));
    if (r.has(1) && !r.get(1).is_none()) {
        opt.has_indent = true;
        if (r.get(1).is_string()) opt.indent = r.get(1).str();
        else {
            const int64_t width = std::max<int64_t>(0, int_param(r.get(1), "indent"));
            check_string_size(static_cast<uint64_t>(width));
            opt.indent = std::string(static_cast<size_t>(width), ' ');
        }
        opt.item_sep = ",";
    }
    if (r.has(2) && !r.get(2).is_none()) {
        std::vector<Value> seps = iterate(r.get(2));
        if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
            value_error("separators must be a pair of strings");
        opt.item_sep = seps[0].str();
        opt.key_sep = seps[1].str();
    }
    opt.sort_keys = r.has(3) && truthy(r.get(3));
    return Value::string(json_dumps(v, opt));
}

Value f_trim(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_trim", a, {"chars"});
    Value s = soft_str(v);
    if (r.has(0) && !r.get(0).is_none()) {
        if (!r.get(0).is_string()) type_error("strip arg must be None or str");
        return Value::string(py::strip(s.str(), &r.get(0).str(), true, true), s.markup());
    }
    return Value::string(py::strip(s.str(), nullptr, true, true), s.markup());
}

Value f_truncate(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_truncate", a, {"length", "killwords", "end", "leeway"});
    int64_t len = r.has(0) ? int_param(r.get(0), "length") : 255;
    bool killwords = r.has(1) && truthy(r.get(1));
    std::string end = r.has(2) ? to_str(r.get(2)) : "...";
    int64_t leeway = (r.has(3) && !r.get(3).is_none()) ? int_param(r.get(3), "leeway") : 5;
    if (v.is_undefined()) return v;  // len(Undefined) == 0: returned as is
    if (!v.is_string()) {
        // jinja2 applies len() and slicing to the value itself, without str()
        if (!has_len(v)) type_error("object of type '" + type_name(v) + "' has no len()");
        if (length(v) <= len + leeway) return v;
        if (killwords || !v.is_indexable_seq()) type_error("unsupported operand for truncate on '" + type_name(v) + "'");
        raise_error("AttributeError", "'" + type_name(v) + "' object has no attribute 'rsplit'");
    }
    std::u32string s = py::decode(v.str());
    int64_t end_len = static_cast<int64_t>(py::cp_length(end));
    if (len < end_len) raise_error("AssertionError", "expected length >= " + std::to_string(end_len) + ", got " + std::to_string(len));
    if (leeway < 0) raise_error("AssertionError", "expected leeway >= 0, got " + std::to_string(leeway));
    if (static_cast<int64_t>(s.size()) <= len + leeway) return Value::string(py::encode(s));
    std::u32string head = s.substr(0, static_cast<size_t>(len - end_len));
    if (killwords) return Value::string(py::encode(head) + end);
    size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head = head.substr(0, sp);
    return Value::string(py::encode(head) + end);
}

Value f_unique(Interp& in, const Value& v, CallArgs& a) {
    ArgReader r("do_unique", a, {"case_sensitive", "attribute"});
    bool cs = r.has(0) && truthy(r.get(0));
    Value attribute = r.get_or(1, Value::none()), src = v;
    Interp* interp = &in;
    return lazy([interp, cs, attribute, src]() {
        std::vector<Value> seen, out;
        for (auto& item : iterate(src)) {
            Value key = get_attribute(*interp, item, attribute, !cs, nullptr);
            if (!is_hashable(key)) type_error("unhashable type: '" + type_name(key) + "'");
            bool dup = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); });
            if (!dup) {
                seen.push_back(key);
                out.push_back(item);
            }
        }
        return out;
    });
}

Value f_wordcount(Interp&, const Value& v, CallArgs& a) {
    ArgReader r("do_wordcount", a, {});
    int64_t n = 0;
    bool in_word = false;
    for (char32_t c : py::decode(to_str(v))) {
        bool w = py::is_word(c);
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value::integer(n);
}

const std::unordered_map<std::string, FilterFn>& registry() {
    static const std::unordered_map<std::string, FilterFn> kFilters = {
        {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize}, {"center", f_center},
        {"count", f_length}, {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort}, {"e", f_escape},
        {"escape", f_escape}, {"filesizeformat", f_filesizeformat}, {"first", f_first}, {"float", f_float},
        {"forceescape", f_forceescape}, {"format", f_format}, {"groupby", f_groupby}, {"indent", f_indent},
        {"int", f_int}, {"items", f_items}, {"join", f_join}, {"last", f_last}, {"length", f_length},
        {"list", f_list}, {"lower", f_lower}, {"map", f_map}, {"max", f_max}, {"min", f_min},
        {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
        {"round", f_round}, {"safe", f_safe}, {"select", f_select}, {"selectattr", f_selectattr},
        {"slice", f_slice}, {"sort", f_sort}, {"string", f_string}, {"striptags", f_striptags}, {"sum", f_sum},
        {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim}, {"truncate", f_truncate}, {"unique", f_unique},
        {"upper", f_upper}, {"wordcount", f_wordcount},
    };
    return kFilters;
}

}  // namespace

bool has_filter(const std::string& name) { return registry().count(name) != 0 || name == "pprint" || name == "random" ||
                                                  name == "urlencode" || name == "urlize" || name == "wordwrap" ||
                                                  name == "xmlattr"; }

Value apply_filter(Interp& in, const std::string& name, const Value& v, CallArgs& args) {
    auto it = registry().find(name);
    if (it == registry().end())
        raise_error("TemplateRuntimeError", "filter '" + name + "' is not supported by this template engine");
    return it->second(in, v, args);
}

}  // namespace ikllm::chat
