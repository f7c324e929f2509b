#include "chat/py_ops.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "chat/jinja_error.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

[[noreturn]] void recursion_error() { raise_error("RecursionError", "maximum recursion depth exceeded"); }

const char* seq_type_name(SeqType t) {
    switch (t) {
        case SeqType::List: return "list";
        case SeqType::Tuple: return "tuple";
        case SeqType::Range: return "range";
        case SeqType::Generator: return "generator";
        case SeqType::ReverseIter: return "list_reverseiterator";
        case SeqType::DictKeys: return "dict_keys";
        case SeqType::DictValues: return "dict_values";
        case SeqType::DictItems: return "dict_items";
    }
    return "list";
}

std::string int_str(int64_t i) { return std::to_string(i); }

void repr_into(const Value& v, std::string& out, int depth);

void repr_items(const std::vector<Value>& items, size_t from, std::string& out, int depth) {
    for (size_t i = from; i < items.size(); ++i) {
        if (i > from) out += ", ";
        repr_into(items[i], out, depth + 1);
    }
}

void repr_dict(const DictData& d, std::string& out, int depth) {
    out += '{';
    bool first = true;
    for (const auto& kv : d.items) {
        if (!first) out += ", ";
        first = false;
        repr_into(kv.first, out, depth + 1);
        out += ": ";
        repr_into(kv.second, out, depth + 1);
    }
    out += '}';
}

void repr_into(const Value& v, std::string& out, int depth) {
    if (depth > kMaxNesting) recursion_error();
    check_string_size(out.size());  // containers sharing big strings must not print unboundedly
    switch (v.kind()) {
        case Kind::Undefined: out += "Undefined"; return;
        case Kind::None: out += "None"; return;
        case Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
        case Kind::Int: out += v.is_big() ? v.big_digits() : int_str(v.as_int()); return;
        case Kind::Float: out += py::float_repr(v.as_float()); return;
        case Kind::String:
            check_string_size(out.size() + v.str().size());
            if (v.markup()) {
                out += "Markup(" + py::repr(v.str()) + ")";
            } else {
                out += py::repr(v.str());
            }
            return;
        case Kind::List: {
            const ListData& l = v.list();
            switch (l.type) {
                case SeqType::List:
                    out += '[';
                    repr_items(l.items, 0, out, depth);
                    out += ']';
                    return;
                case SeqType::Tuple:
                    out += '(';
                    repr_items(l.items, 0, out, depth);
                    if (l.items.size() == 1) out += ',';
                    out += ')';
                    return;
                case SeqType::Range:
                    out += "range(" + int_str(l.start) + ", " + int_str(l.stop);
                    if (l.step != 1) out += ", " + int_str(l.step);
                    out += ')';
                    return;
                case SeqType::Generator: out += "<generator object at 0x0>"; return;
                case SeqType::ReverseIter: out += "<list_reverseiterator object at 0x0>"; return;
                case SeqType::DictKeys:
                case SeqType::DictValues:
                case SeqType::DictItems:
                    out += seq_type_name(l.type);
                    out += "([";
                    repr_items(l.items, 0, out, depth);
                    out += "])";
                    return;
            }
            return;
        }
        case Kind::Dict: repr_dict(v.dict_data(), out, depth); return;
        case Kind::Namespace:
            out += "<Namespace ";
            repr_dict(v.dict_data(), out, depth);
            out += '>';
            return;
        case Kind::Object: out += v.obj().repr(); return;
    }
}

bool equals_depth(const Value& a, const Value& b, int depth);

bool seq_equal(const std::vector<Value>& x, const std::vector<Value>& y, int depth) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
        if (!equals_depth(x[i], y[i], depth + 1)) return false;
    return true;
}

// Exact comparison of an int with a float, as Python does (no rounding of the int).
int cmp_int_float(int64_t i, double f) {
    if (std::isnan(f)) return 2;  // unordered
    if (f >= 9.3e18) return -1;
    if (f <= -9.3e18) return 1;
    double fl = std::floor(f);
    int64_t fi = static_cast<int64_t>(fl);
    if (i < fi) return -1;
    if (i > fi) return 1;
    return fl == f ? 0 : -1;
}

// Integers beyond 64 bits: exact between two of them (decimal text), by magnitude against int64 values,
// approximately against floats.
int cmp_big(const Value& a, const Value& b) {
    if (a.is_big() && b.is_big()) {
        const std::string &x = a.big_digits(), &y = b.big_digits();
        const bool nx = x[0] == '-', ny = y[0] == '-';
        if (nx != ny) return nx ? -1 : 1;
        int c = x.size() != y.size() ? (x.size() < y.size() ? -1 : 1) : (x < y ? -1 : (x > y ? 1 : 0));
        return nx ? -c : c;
    }
    if (a.is_float() || b.is_float()) {
        double x = a.as_float(), y = b.as_float();
        if (std::isnan(x) || std::isnan(y)) return 2;
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_big()) return a.big_digits()[0] == '-' ? -1 : 1;
    return b.big_digits()[0] == '-' ? 1 : -1;
}

// Python arithmetic on integers beyond 64 bits is not reproduced: fail instead of computing wrong digits.
void check_not_big(const Value& a, const Value& b) {
    if (a.is_big() || b.is_big())
        raise_error("OverflowError", "arithmetic on integers beyond 64 bits is not supported");
}

int cmp_numbers(const Value& a, const Value& b) {
    if (a.is_big() || b.is_big()) return cmp_big(a, b);
    if (!a.is_float() && !b.is_float()) {
        int64_t x = a.as_int(), y = b.as_int();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_float() && b.is_float()) {
        double x = a.as_float(), y = b.as_float();
        if (std::isnan(x) || std::isnan(y)) return 2;
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_float()) {
        int c = cmp_int_float(b.as_int(), a.as_float());
        return c == 2 ? 2 : -c;
    }
    return cmp_int_float(a.as_int(), b.as_float());
}

bool equals_depth(const Value& a, const Value& b, int depth) {
    if (depth > kMaxNesting) recursion_error();
    if (a.is_number() && b.is_number()) return cmp_numbers(a, b) == 0;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return a.str() == b.str();
        case Kind::List: {
            const ListData& x = a.list();
            const ListData& y = b.list();
            if (x.type == SeqType::Generator || x.type == SeqType::ReverseIter || y.type == SeqType::Generator ||
                y.type == SeqType::ReverseIter || x.type == SeqType::DictValues)
                return a.identity() == b.identity();
            bool xa = x.type == SeqType::List, ya = y.type == SeqType::List;
            bool xt = x.type == SeqType::Tuple, yt = y.type == SeqType::Tuple;
            if (xa != ya || xt != yt) return false;
            if (x.type == SeqType::Range && y.type != SeqType::Range) return false;
            return seq_equal(x.items, y.items, depth);
        }
        case Kind::Dict: {
            const DictData& x = a.dict_data();
            const DictData& y = b.dict_data();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& kv : x.items) {
                const Value* other = y.find(kv.first);
                if (!other || !equals_depth(kv.second, *other, depth + 1)) return false;
            }
            return true;
        }
        case Kind::Namespace:
        case Kind::Object: return a.identity() == b.identity();
        default: return false;
    }
}

[[noreturn]] void unsupported_operand(const char* op, const Value& a, const Value& b) {
    type_error(std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) + "' and '" +
               type_name(b) + "'");
}

void check_undefined(const Value& a, const Value& b) {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
}

Value repeat_seq(const Value& seq, int64_t n) {
    if (n < 0) n = 0;
    if (seq.is_string()) {
        const std::string& s = seq.str();
        // An empty string stays empty however large n is (no n-step loop: "" * 10**12 is instant).
        if (s.empty()) return Value::string(std::string(), seq.markup());
        if (!s.empty() && static_cast<uint64_t>(n) > kMaxString / s.size()) raise_error("MemoryError", "string too large");
        std::string out;
        out.reserve(s.size() * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value::string(std::move(out), seq.markup());
    }
    const auto& items = seq.list().items;
    if (items.empty()) return Value::list({}, seq.list().type);
    if (static_cast<uint64_t>(n) > kMaxListItems / items.size()) check_list_size(UINT64_MAX);
    std::vector<Value> out;
    out.reserve(items.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq.list().type);
}

bool is_list_or_tuple(const Value& v) { return v.is_seq(SeqType::List) || v.is_seq(SeqType::Tuple); }

}  // namespace

// ---- names, truth, printing ---------------------------------------------------------------------------

std::string type_name(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return v.markup() ? "Markup" : "str";
        case Kind::List: return seq_type_name(v.list().type);
        case Kind::Dict: return "dict";
        case Kind::Namespace: return "Namespace";
        case Kind::Object: return v.obj().type_name();
    }
    return "object";
}

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return v.as_bool();
        case Kind::Int: return v.as_int() != 0;
        case Kind::Float: return v.as_float() != 0.0;
        case Kind::String: return !v.str().empty();
        case Kind::List: {
            SeqType t = v.list().type;
            if (t == SeqType::Generator || t == SeqType::ReverseIter) return true;
            return !v.list().items.empty();
        }
        case Kind::Dict: return !v.dict_data().items.empty();
        case Kind::Namespace:
        case Kind::Object: return true;
    }
    return false;
}

std::string to_str(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return "";
        case Kind::String: return v.str();
        default: {
            std::string out;
            repr_into(v, out, 0);
            return out;
        }
    }
}

std::string repr(const Value& v) {
    std::string out;
    repr_into(v, out, 0);
    return out;
}

bool equals(const Value& a, const Value& b) { return equals_depth(a, b, 0); }

int compare_order(const Value& a, const Value& b, const char* op) {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    if (a.is_number() && b.is_number()) return cmp_numbers(a, b);
    if (a.is_string() && b.is_string()) {
        int c = a.str().compare(b.str());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if ((a.is_seq(SeqType::List) && b.is_seq(SeqType::List)) || (a.is_seq(SeqType::Tuple) && b.is_seq(SeqType::Tuple))) {
        const auto& x = a.list().items;
        const auto& y = b.list().items;
        size_t n = std::min(x.size(), y.size());
        for (size_t i = 0; i < n; ++i)
            if (!equals(x[i], y[i])) return compare_order(x[i], y[i], op);
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    type_error(std::string("'") + op + "' not supported between instances of '" + type_name(a) + "' and '" +
               type_name(b) + "'");
}

bool less(const Value& a, const Value& b, const char* op) { return compare_order(a, b, op) == -1; }

bool is_hashable(const Value& v) {
    if (v.is_dict()) return false;
    if (!v.is_list()) return true;
    switch (v.list().type) {
        case SeqType::List:
        case SeqType::DictKeys:
        case SeqType::DictItems: return false;
        case SeqType::Tuple:
            for (const auto& x : v.list().items)
                if (!is_hashable(x)) return false;
            return true;
        default: return true;
    }
}

// ---- arithmetic -----------------------------------------------------------------------------------------

Value op_add(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return Value::number(a.as_float() + b.as_float());
        check_not_big(a, b);
        int64_t r;
        if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) raise_error("OverflowError", "integer overflow");
        return Value::integer(r);
    }
    if (a.is_string() && b.is_string()) {
        // markupsafe: Markup + str escapes the plain side and stays Markup
        if (a.markup() != b.markup()) {
            std::string l = a.markup() ? a.str() : py::escape_html(a.str());
            std::string r = b.markup() ? b.str() : py::escape_html(b.str());
            return Value::string(l + r, true);
        }
        if (a.str().size() + b.str().size() > kMaxString) raise_error("MemoryError", "string too large");
        return Value::string(a.str() + b.str(), a.markup());
    }
    if ((a.is_seq(SeqType::List) && b.is_seq(SeqType::List)) || (a.is_seq(SeqType::Tuple) && b.is_seq(SeqType::Tuple)))
        check_list_size(a.list().items.size() + b.list().items.size());
    if (a.is_seq(SeqType::List) && b.is_seq(SeqType::List)) {
        std::vector<Value> out = a.list().items;
        out.insert(out.end(), b.list().items.begin(), b.list().items.end());
        return Value::list(std::move(out));
    }
    if (a.is_seq(SeqType::Tuple) && b.is_seq(SeqType::Tuple)) {
        std::vector<Value> out = a.list().items;
        out.insert(out.end(), b.list().items.begin(), b.list().items.end());
        return Value::tuple(std::move(out));
    }
    if (a.is_string() && !a.markup()) type_error("can only concatenate str (not \"" + type_name(b) + "\") to str");
    if (a.is_seq(SeqType::List)) type_error("can only concatenate list (not \"" + type_name(b) + "\") to list");
    if (a.is_seq(SeqType::Tuple)) type_error("can only concatenate tuple (not \"" + type_name(b) + "\") to tuple");
    unsupported_operand("+", a, b);
}

Value op_sub(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (!a.is_number() || !b.is_number()) unsupported_operand("-", a, b);
    if (a.is_float() || b.is_float()) return Value::number(a.as_float() - b.as_float());
    check_not_big(a, b);
    int64_t r;
    if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) raise_error("OverflowError", "integer overflow");
    return Value::integer(r);
}

Value op_mul(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return Value::number(a.as_float() * b.as_float());
        check_not_big(a, b);
        int64_t r;
        if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) raise_error("OverflowError", "integer overflow");
        return Value::integer(r);
    }
    check_not_big(a, b);
    if ((a.is_string() || is_list_or_tuple(a)) && (b.is_int() || b.is_bool())) return repeat_seq(a, b.as_int());
    if ((b.is_string() || is_list_or_tuple(b)) && (a.is_int() || a.is_bool())) return repeat_seq(b, a.as_int());
    if (a.is_string() || is_list_or_tuple(a))
        type_error("can't multiply sequence by non-int of type '" + type_name(b) + "'");
    unsupported_operand("*", a, b);
}

Value op_truediv(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (!a.is_number() || !b.is_number()) unsupported_operand("/", a, b);
    double y = b.as_float();
    if (y == 0.0) raise_error("ZeroDivisionError", a.is_float() || b.is_float() ? "float division by zero" : "division by zero");
    return Value::number(a.as_float() / y);
}

Value op_floordiv(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (!a.is_number() || !b.is_number()) unsupported_operand("//", a, b);
    if (a.is_float() || b.is_float()) {
        double x = a.as_float(), y = b.as_float();
        if (y == 0.0) raise_error("ZeroDivisionError", "float floor division by zero");
        double m = std::fmod(x, y);
        double d = (x - m) / y;
        if (m != 0.0 && ((y < 0) != (m < 0))) d -= 1.0;
        double fl = std::floor(d);
        if (d - fl > 0.5) fl += 1.0;
        return Value::number(d == 0.0 ? std::copysign(0.0, x / y) : fl);
    }
    check_not_big(a, b);
    int64_t x = a.as_int(), y = b.as_int();
    if (y == 0) raise_error("ZeroDivisionError", "integer division or modulo by zero");
    if (x == std::numeric_limits<int64_t>::min() && y == -1) raise_error("OverflowError", "integer overflow");
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return Value::integer(q);
}

Value op_mod(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (a.is_string()) return Value::string(percent_format(a.str(), b, a.markup()), a.markup());
    if (!a.is_number() || !b.is_number()) unsupported_operand("%", a, b);
    if (a.is_float() || b.is_float()) {
        double x = a.as_float(), y = b.as_float();
        if (y == 0.0) raise_error("ZeroDivisionError", "float modulo");
        double m = std::fmod(x, y);
        if (m != 0.0) {
            if ((y < 0) != (m < 0)) m += y;
        } else {
            m = std::copysign(0.0, y);
        }
        return Value::number(m);
    }
    check_not_big(a, b);
    int64_t x = a.as_int(), y = b.as_int();
    if (y == 0) raise_error("ZeroDivisionError", "integer modulo by zero");
    if (y == -1) return Value::integer(0);
    int64_t m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value::integer(m);
}

Value op_pow(const Value& a, const Value& b) {
    check_undefined(a, b);
    if (!a.is_number() || !b.is_number()) unsupported_operand("** or pow()", a, b);
    check_not_big(a, b);
    if (!a.is_float() && !b.is_float() && b.as_int() >= 0) {
        int64_t base = a.as_int(), e = b.as_int(), r = 1;
        while (e > 0) {
            if (e & 1)
                if (__builtin_mul_overflow(r, base, &r)) raise_error("OverflowError", "integer overflow");
            e >>= 1;
            if (e > 0 && __builtin_mul_overflow(base, base, &base)) raise_error("OverflowError", "integer overflow");
        }
        return Value::integer(r);
    }
    double x = a.as_float(), y = b.as_float();
    if (x == 0.0 && y < 0) raise_error("ZeroDivisionError", "0.0 cannot be raised to a negative power");
    return Value::number(std::pow(x, y));
}

Value op_neg(const Value& a) {
    if (a.is_undefined()) raise_undefined(a);
    if (a.is_float()) return Value::number(-a.as_float());
    if (a.is_big()) {
        const std::string& d = a.big_digits();
        return Value::big_integer(d[0] == '-' ? d.substr(1) : "-" + d, -a.as_float());
    }
    if (a.is_number()) {
        if (a.as_int() == std::numeric_limits<int64_t>::min()) raise_error("OverflowError", "integer overflow");
        return Value::integer(-a.as_int());
    }
    type_error("bad operand type for unary -: '" + type_name(a) + "'");
}

Value op_pos(const Value& a) {
    if (a.is_undefined()) raise_undefined(a);
    if (a.is_float() || a.is_big()) return a;
    if (a.is_number()) return Value::integer(a.as_int());
    type_error("bad operand type for unary +: '" + type_name(a) + "'");
}

bool op_contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::String:
            if (!item.is_string())
                type_error("'in <string>' requires string as left operand, not " + type_name(item));
            return container.str().find(item.str()) != std::string::npos;
        case Kind::List: {
            ListData& l = container.list();
            l.materialize();
            bool single_pass = l.type == SeqType::Generator || l.type == SeqType::ReverseIter;
            for (size_t i = single_pass ? l.pos : 0; i < l.items.size(); ++i) {
                if (equals(l.items[i], item)) {
                    if (single_pass) l.pos = i + 1;
                    return true;
                }
            }
            if (single_pass) l.pos = l.items.size();
            return false;
        }
        case Kind::Dict:
            if (!is_hashable(item)) type_error("unhashable type: '" + type_name(item) + "'");
            return container.dict_data().find(item) != nullptr;
        case Kind::Undefined: return false;  // jinja2's Undefined iterates as empty
        default: type_error("argument of type '" + type_name(container) + "' is not iterable");
    }
}

// ---- len / iter -------------------------------------------------------------------------------------------

bool has_len(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::String:
        case Kind::Dict: return true;
        case Kind::List: return v.list().type != SeqType::Generator && v.list().type != SeqType::ReverseIter;
        default: return false;
    }
}

int64_t length(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return 0;
        case Kind::String: return static_cast<int64_t>(py::cp_length(v.str()));
        case Kind::Dict: return static_cast<int64_t>(v.dict_data().items.size());
        case Kind::List:
            if (has_len(v)) return static_cast<int64_t>(v.list().items.size());
            break;
        default: break;
    }
    type_error("object of type '" + type_name(v) + "' has no len()");
}

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return {};
        case Kind::String: {
            std::vector<Value> out;
            for (char32_t c : py::decode(v.str())) {
                std::string s;
                py::append_cp(s, c);
                out.push_back(Value::string(std::move(s)));
            }
            return out;
        }
        case Kind::List: {
            ListData& l = v.list();
            l.materialize();
            if (l.type == SeqType::Generator || l.type == SeqType::ReverseIter) {
                std::vector<Value> out(l.items.begin() + static_cast<std::ptrdiff_t>(std::min(l.pos, l.items.size())),
                                       l.items.end());
                l.pos = l.items.size();
                return out;
            }
            return l.items;
        }
        case Kind::Dict: {
            std::vector<Value> out;
            for (const auto& kv : v.dict_data().items) out.push_back(kv.first);
            return out;
        }
        default: type_error("'" + type_name(v) + "' object is not iterable");
    }
}

int64_t to_index(const Value& v, const char* what) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) raise_undefined(v);
    type_error(std::string(what) + " must be integers, not " + type_name(v));
}

// ---- printf-style formatting ------------------------------------------------------------------------------

// int(x) for `%d` of a float: Python's errors for NaN and infinity; beyond 64 bits (which Python would
// print as a big integer) is an OverflowError here, never an out-of-range conversion.
static long long float_to_int(double x) {
    if (std::isnan(x)) value_error("cannot convert float NaN to integer");
    if (std::isinf(x)) raise_error("OverflowError", "cannot convert float infinity to integer");
    const double t = std::trunc(x);
    if (t < -9223372036854775808.0 || t >= 9223372036854775808.0) raise_error("OverflowError", "integer too large");
    return static_cast<long long>(t);
}

std::string percent_format(const std::string& fmt, const Value& args, bool escape_args) {
    std::vector<Value> pos;
    const DictData* mapping = nullptr;
    if (args.is_seq(SeqType::Tuple)) {
        pos = args.list().items;
    } else {
        if (args.is_dict()) mapping = &args.dict_data();
        pos.push_back(args);
    }
    size_t next = 0;
    bool used_mapping = false;
    std::string out;
    size_t i = 0, n = fmt.size();
    auto take = [&]() -> Value {
        if (next >= pos.size()) type_error("not enough arguments for format string");
        return pos[next++];
    };
    while (i < n) {
        char c = fmt[i];
        if (c != '%') {
            out.push_back(c);
            ++i;
            continue;
        }
        ++i;
        if (i >= n) value_error("incomplete format");
        Value arg;
        bool have_arg = false;
        if (fmt[i] == '(') {
            size_t close = fmt.find(')', i);
            if (close == std::string::npos) value_error("incomplete format key");
            if (!mapping) type_error("format requires a mapping");
            std::string key = fmt.substr(i + 1, close - i - 1);
            const Value* found = mapping->find(key);
            if (!found) raise_error("KeyError", py::repr(key));
            arg = *found;
            have_arg = true;
            used_mapping = true;
            i = close + 1;
        }
        std::string flags;
        while (i < n && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags.push_back(fmt[i++]);
        int64_t width = -1, prec = -1;
        if (i < n && fmt[i] == '*') {
            width = to_index(take(), "* width");
            ++i;
        } else {
            while (i < n && fmt[i] >= '0' && fmt[i] <= '9') width = push_width_digit(width, fmt[i++]);
        }
        if (i < n && fmt[i] == '.') {
            ++i;
            prec = 0;
            if (i < n && fmt[i] == '*') {
                prec = to_index(take(), "* precision");
                ++i;
            } else {
                while (i < n && fmt[i] >= '0' && fmt[i] <= '9') prec = push_width_digit(prec, fmt[i++]);
            }
        }
        check_string_size(static_cast<uint64_t>(std::max<int64_t>(width, 0)));
        check_string_size(static_cast<uint64_t>(std::max<int64_t>(prec, 0)));
        while (i < n && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
        if (i >= n) value_error("incomplete format");
        char conv = fmt[i++];
        if (conv == '%') {
            out.push_back('%');
            continue;
        }
        if (!have_arg) arg = take();
        bool left = flags.find('-') != std::string::npos;
        std::string piece;
        std::string cflags;
        for (char f : flags) cflags.push_back(f);
        auto c_format = [&](const char* length_mod, char cv, auto value) {
            std::string spec = "%" + cflags;
            if (width >= 0) spec += std::to_string(width);
            if (prec >= 0) spec += "." + std::to_string(prec);
            spec += length_mod;
            spec.push_back(cv);
            int len = std::snprintf(nullptr, 0, spec.c_str(), value);
            std::string s(static_cast<size_t>(std::max(len, 0)), '\0');
            std::snprintf(s.data(), s.size() + 1, spec.c_str(), value);
            return s;
        };
        switch (conv) {
            case 's':
            case 'r':
            case 'a': {
                std::string s = conv == 's' ? to_str(arg) : repr(arg);
                if (prec >= 0) {
                    std::u32string u = py::decode(s);
                    if (static_cast<int64_t>(u.size()) > prec) s = py::encode(u.substr(0, static_cast<size_t>(prec)));
                }
                if (escape_args && !(arg.is_string() && arg.markup())) s = py::escape_html(s);
                piece = py::pad(s, width, ' ', left ? -1 : 1);
                break;
            }
            case 'd':
            case 'i':
            case 'u': {
                if (!arg.is_number())
                    type_error(std::string("%") + conv + " format: a real number is required, not " + type_name(arg));
                long long iv = arg.is_float() ? float_to_int(arg.as_float()) : arg.as_int();
                piece = c_format("ll", 'd', iv);
                break;
            }
            case 'x':
            case 'X':
            case 'o': {
                if (!arg.is_int() && !arg.is_bool())
                    type_error(std::string("%") + conv + " format: an integer is required, not " + type_name(arg));
                long long iv = arg.as_int();
                bool neg = iv < 0;
                unsigned long long mag = neg ? 0ULL - static_cast<unsigned long long>(iv) : static_cast<unsigned long long>(iv);
                std::string s = c_format("ll", conv, mag);
                if (neg) {
                    size_t p = s.find_first_not_of(' ');
                    if (p != std::string::npos && p > 0) s[p - 1] = '-';
                    else s.insert(s.begin() + static_cast<std::ptrdiff_t>(p == std::string::npos ? 0 : p), '-');
                }
                piece = s;
                break;
            }
            case 'e':
            case 'E':
            case 'f':
            case 'F':
            case 'g':
            case 'G': {
                if (!arg.is_number()) type_error("must be real number, not " + type_name(arg));
                piece = c_format("", conv, arg.as_float());
                break;
            }
            case 'c': {
                std::string s;
                if (arg.is_string() && py::cp_length(arg.str()) == 1) s = arg.str();
                else if (arg.is_int()) py::append_cp(s, static_cast<char32_t>(arg.as_int()));
                else type_error("%c requires int or char");
                piece = py::pad(s, width, ' ', left ? -1 : 1);
                break;
            }
            default:
                value_error(std::string("unsupported format character '") + conv + "'");
        }
        check_string_size(out.size() + piece.size());
        out += piece;
    }
    // CPython skips this check when the argument supports __getitem__ (dict, list, ...) and is not a tuple/str
    bool mapping_like = args.is_dict() || args.is_undefined() || (args.is_indexable_seq() && !args.is_seq(SeqType::Tuple));
    if (!used_mapping && !mapping_like && next < pos.size())
        type_error("not all arguments converted during string formatting");
    return out;
}

// ---- Undefined --------------------------------------------------------------------------------------------

void raise_undefined(const Value& undef) {
    const UndefinedData* d = undef.undef();
    if (!d) raise_error("UndefinedError", "value is undefined");
    raise_error(d->security ? "SecurityError" : "UndefinedError", d->message);
}

std::string object_type_repr(const Value& v) {
    switch (v.kind()) {
        case Kind::None: return "None";
        case Kind::String: return v.markup() ? "markupsafe.Markup object" : "str object";
        case Kind::Namespace: return "jinja2.utils.Namespace object";
        case Kind::Undefined: return "jinja2.runtime.Undefined object";
        default: return type_name(v) + " object";
    }
}

Value undefined_attr(const Value& obj, const std::string& name) {
    return Value::undefined(py::repr(object_type_repr(obj)) + " has no attribute " + py::repr(name));
}

Value undefined_item(const Value& obj, const Value& key) {
    if (key.is_string()) return undefined_attr(obj, key.str());
    return Value::undefined(object_type_repr(obj) + " has no element " + repr(key));
}

Value undefined_name(const std::string& name) { return Value::undefined(py::repr(name) + " is undefined"); }

Value escape_value(const Value& v) {
    if (v.is_string() && v.markup()) return v;
    return Value::string(py::escape_html(to_str(v)), true);
}

}  // namespace ikllm::chat
