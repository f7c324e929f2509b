// jinja2 3.1's builtin tests (`x is defined`, `x is mapping`, `x is divisibleby 3`, ...) with Python's
// type semantics: bool is a number, str is iterable and a sequence, Undefined is iterable.
#include <unordered_map>

#include "chat/jinja_error.h"
#include "chat/jinja_interp.h"
#include "chat/jinja_parser.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

const Value& one_arg(CallArgs& a, const char* test, const char* param) {
    if (a.pos.size() + a.kw.size() != 1)
        type_error(std::string("test_") + test + "() missing 1 required positional argument: '" + param + "'");
    return a.pos.empty() ? a.kw.front().second : a.pos.front();
}

void no_args(CallArgs& a, const char* test) {
    if (!a.pos.empty() || !a.kw.empty()) type_error(std::string("test_") + test + "() takes 1 positional argument but more were given");
}

bool is_sequence(const Value& v) {
    // len() and __getitem__ both exist
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::String:
        case Kind::Dict: return true;
        case Kind::List: return v.is_indexable_seq();
        default: return false;
    }
}

bool is_iterable(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::String:
        case Kind::List:
        case Kind::Dict: return true;
        case Kind::Object: return v.obj().type_name() == "LoopContext";
        default: return false;
    }
}

bool number_mod(const Value& v, const Value& m, int64_t& rem_is_zero) {
    Value r = op_mod(v, m);
    rem_is_zero = truthy(r) ? 0 : 1;
    return true;
}

// `is sameas`: Python identity; None/bools/small ints are singletons.
bool same_as(const Value& a, const Value& b) {
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::None: return true;
        case Kind::Bool: return a.as_bool() == b.as_bool();
        case Kind::Int: return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;
        case Kind::Float: return false;
        case Kind::Undefined: return a.identity() == b.identity() && a.identity() != nullptr;
        default: return a.identity() == b.identity();
    }
}

}  // namespace

bool has_test(const std::string& name) { return is_jinja_test_name(name); }

bool apply_test(Interp& in, const std::string& name, const Value& v, CallArgs& a) {
    (void)in;
    if (name == "defined") { no_args(a, "defined"); return !v.is_undefined(); }
    if (name == "undefined") { no_args(a, "undefined"); return v.is_undefined(); }
    if (name == "none") { no_args(a, "none"); return v.is_none(); }
    if (name == "boolean") { no_args(a, "boolean"); return v.is_bool(); }
    if (name == "false") { no_args(a, "false"); return v.is_bool() && !v.as_bool(); }
    if (name == "true") { no_args(a, "true"); return v.is_bool() && v.as_bool(); }
    if (name == "integer") { no_args(a, "integer"); return v.is_int(); }
    if (name == "float") { no_args(a, "float"); return v.is_float(); }
    if (name == "number") { no_args(a, "number"); return v.is_number(); }
    if (name == "string") { no_args(a, "string"); return v.is_string(); }
    if (name == "mapping") { no_args(a, "mapping"); return v.is_dict(); }
    if (name == "sequence") { no_args(a, "sequence"); return is_sequence(v); }
    if (name == "iterable") { no_args(a, "iterable"); return is_iterable(v); }
    // Undefined defines __call__ (to raise), so Python's callable() says yes
    if (name == "callable") { no_args(a, "callable"); return v.is_undefined() || (v.is_object() && v.obj().callable()); }
    if (name == "escaped") { no_args(a, "escaped"); return v.is_string() && v.markup(); }
    if (name == "lower" || name == "upper") {
        no_args(a, name.c_str());
        std::string s = to_str(v);
        bool any_cased = false, ok = true;
        for (char32_t c : py::decode(s)) {
            if (name == "lower" ? py::is_upper(c) : py::is_lower(c)) ok = false;
            if (py::is_cased(c)) any_cased = true;
        }
        return ok && any_cased;
    }
    if (name == "odd" || name == "even") {
        no_args(a, name.c_str());
        int64_t zero;
        number_mod(v, Value::integer(2), zero);
        return name == "even" ? zero == 1 : zero == 0;
    }
    if (name == "divisibleby") {
        int64_t zero;
        number_mod(v, one_arg(a, "divisibleby", "num"), zero);
        return zero == 1;
    }
    if (name == "filter") { no_args(a, "filter"); return v.is_string() && has_filter(v.str()); }
    if (name == "test") { no_args(a, "test"); return v.is_string() && has_test(v.str()); }
    if (name == "sameas") return same_as(v, one_arg(a, "sameas", "other"));
    if (name == "in") return op_contains(one_arg(a, "in", "seq"), v);
    if (name == "==" || name == "eq" || name == "equalto") return equals(v, one_arg(a, "eq", "b"));
    if (name == "!=" || name == "ne") return !equals(v, one_arg(a, "ne", "b"));
    if (name == ">" || name == "gt" || name == "greaterthan") return compare_order(v, one_arg(a, "gt", "b"), ">") == 1;
    if (name == ">=" || name == "ge") {
        int c = compare_order(v, one_arg(a, "ge", "b"), ">=");
        return c == 1 || c == 0;
    }
    if (name == "<" || name == "lt" || name == "lessthan") return compare_order(v, one_arg(a, "lt", "b"), "<") == -1;
    if (name == "<=" || name == "le") {
        int c = compare_order(v, one_arg(a, "le", "b"), "<=");
        return c == -1 || c == 0;
    }
    raise_error("TemplateRuntimeError", "No test named '" + name + "' found.");
}

}  // namespace ikllm::chat
