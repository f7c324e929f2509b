// Python semantics of the operations a template performs on values: truthiness, str()/repr(), ==, <,
// arithmetic with Python's int/float rules, `in`, len(), iter(), and jinja2 Undefined's error messages.
#pragma once
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace ikllm::chat {

std::string type_name(const Value& v);  // Python type(v).__name__
bool truthy(const Value& v);
std::string to_str(const Value& v);  // str(v); Undefined prints as ""
std::string repr(const Value& v);
bool equals(const Value& a, const Value& b);
bool less(const Value& a, const Value& b, const char* op = "<");  // a < b; TypeError when unorderable
// -1, 0, 1 for a <, ==, > b; 2 when unordered (NaN); TypeError (naming `op`) when the types do not order
int compare_order(const Value& a, const Value& b, const char* op);
bool is_hashable(const Value& v);

Value op_add(const Value& a, const Value& b);
Value op_sub(const Value& a, const Value& b);
Value op_mul(const Value& a, const Value& b);
Value op_truediv(const Value& a, const Value& b);
Value op_floordiv(const Value& a, const Value& b);
Value op_mod(const Value& a, const Value& b);
Value op_pow(const Value& a, const Value& b);
Value op_neg(const Value& a);
Value op_pos(const Value& a);
bool op_contains(const Value& container, const Value& item);  // `item in container`

bool has_len(const Value& v);
int64_t length(const Value& v);                // len(v); TypeError when v has none
std::vector<Value> iterate(const Value& v);    // list(iter(v)); consumes generators
int64_t to_index(const Value& v, const char* what);  // int or bool, else TypeError

// str % args (printf-style), the `%` operator on strings and the `format` filter.
std::string percent_format(const std::string& fmt, const Value& args, bool escape_args);

// jinja2 Undefined helpers
[[noreturn]] void raise_undefined(const Value& undef);
std::string object_type_repr(const Value& v);
Value undefined_attr(const Value& obj, const std::string& name);
Value undefined_item(const Value& obj, const Value& key);
Value undefined_name(const std::string& name);

Value escape_value(const Value& v);  // markupsafe.escape: Markup stays as is

// Guards recursive printing/comparison of deeply nested data (Python raises RecursionError).
constexpr int kMaxNesting = 500;

}  // namespace ikllm::chat
