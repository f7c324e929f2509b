// Finding where a JSON value ends inside generated text, before the text is complete. The output
// parser must decide as tokens arrive whether "{\"name\": ..." is still a tool call in progress, is one
// that just ended, or can no longer become valid JSON (then it is ordinary content). Values found
// complete are decoded with json_parse; this file only delimits them and splits objects into raw spans.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ikllm::chat {

enum class JsonScan { complete, incomplete, invalid };

// Scans one JSON value (RFC 8259) starting exactly at text[pos]. complete: *end is one past the value.
// incomplete: the text ended inside the value and more text could still complete it. invalid: no
// continuation can make it valid. Nesting deeper than 500 is invalid.
JsonScan scan_json_value(std::string_view text, size_t pos, size_t* end);

// Index of the first byte at or after pos that is not JSON whitespace.
size_t skip_json_ws(std::string_view text, size_t pos);

// Members of a complete, valid JSON object as (decoded key, raw value text) in written order.
// Returns false when `object` is not exactly one valid JSON object (surrounding whitespace allowed).
bool json_object_members(std::string_view object, std::vector<std::pair<std::string, std::string_view>>& out);

// Elements of a complete, valid JSON array as raw texts; false when `array` is not one valid array.
bool json_array_items(std::string_view array, std::vector<std::string_view>& out);

// Decodes a complete JSON string literal ("..." with escapes) into UTF-8; false when invalid.
bool json_string_value(std::string_view literal, std::string& out);

}  // namespace ikllm::chat
