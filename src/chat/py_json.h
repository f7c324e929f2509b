// JSON in and out with Python's behaviour: json.dumps as transformers' `tojson` calls it (", "/": "
// separators, insertion order, float repr, ensure_ascii, indent, sort_keys) and conversion of
// render-variable JSON (messages, tools, extra variables) into template values, keeping key order.
#pragma once
#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace ikllm::chat {

struct JsonDumpOptions {
    bool ensure_ascii = false;
    bool has_indent = false;
    std::string indent;                       // one level of indentation when has_indent
    std::string item_sep = ", ", key_sep = ": ";
    bool sort_keys = false;
};

// Python json.dumps(value, ...). Throws JinjaError TypeError for values JSON cannot represent.
std::string json_dumps(const Value& v, const JsonDumpOptions& opt);

// Parses JSON text into a value (objects keep their key order). Throws JinjaError("JSONDecodeError").
Value json_parse(std::string_view text);

}  // namespace ikllm::chat
