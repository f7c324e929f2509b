// JSON Schema (the commonly used subset of draft 2020-12, see docs/structured-output.md) ->
// GBNF whose start rule `root` matches JSON texts valid against the schema.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"

namespace ikllm::grammar {

// Throws Error(grammar_error): "json_schema: line L, column C: ..." for malformed JSON,
// "json_schema at /json/pointer: ..." for schemas using unsupported or contradictory keywords.
std::string json_schema_to_gbnf(const std::string& schema_json);

// Building blocks, exposed for tests.
std::string gbnf_literal(const std::string& bytes);          // "..." with GBNF escapes
std::string gbnf_class(const std::vector<CharRange>& ranges); // [...] of code-point ranges
// GBNF expression matching the decimal integers in [lo, hi] (no leading zeros, "-" for negatives).
// has_lo / has_hi false: unbounded on that side (digits are then capped at 19).
std::string gbnf_int_range(bool has_lo, int64_t lo, bool has_hi, int64_t hi);
// GBNF expression for the JSON-string content (between the quotes) matching an ECMA-262 regex
// subset, unanchored unless it starts with ^ / ends with $. Throws Error(grammar_error) with
// "pattern: ..." for unsupported syntax.
std::string gbnf_from_regex(const std::string& pattern, const std::string& char_rule);

}  // namespace ikllm::grammar
