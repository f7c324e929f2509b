// Recursive-descent parser producing the syntax tree, following jinja2's grammar and operator precedence
// (or < and < not < comparisons/in < +,- < ~ < *,/,//,% < ** < unary -,+ < filters/tests < postfix).
#pragma once
#include <string_view>

#include "chat/jinja_ast.h"

namespace ikllm::chat {

// Throws JinjaError("TemplateSyntaxError" / "TemplateAssertionError") with the offending line.
Body parse_template(std::string_view source);

// Names jinja2 3.1 knows as filters / tests; using another name is a compile-time error as in jinja2.
bool is_jinja_filter_name(const std::string& name);
bool is_jinja_test_name(const std::string& name);

}  // namespace ikllm::chat
