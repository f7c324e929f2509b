// Character-level grammar as parsed from GBNF: rules of alternatives of sequences, where an item
// is a set of code points or a reference to a rule. Repetition and grouping are already turned
// into generated rules here, so later stages see plain context-free productions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ikllm::grammar {

struct CharRange {
    uint32_t lo, hi;  // inclusive code points
};

struct Item {
    enum class Kind : uint8_t { chars, rule };
    Kind kind = Kind::chars;
    std::vector<CharRange> ranges;  // chars: sorted, disjoint, no surrogates, non-empty
    uint32_t rule = 0;              // rule: index into GrammarIR::rules
};

using Sequence = std::vector<Item>;

struct Rule {
    std::string name;                // generated rules are named "<owner>-<n>"
    std::vector<Sequence> alts;      // an empty sequence matches the empty string
    int line = 0, col = 0;           // where it is defined (generated: where its text starts)
    bool defined = false;
};

struct GrammarIR {
    std::vector<Rule> rules;
    uint32_t root = 0;
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// Largest count of a {m,n} repetition (each copy is expanded: keeps grammars finite in size).
// The JSON-Schema converter checks its counts against it so its output always compiles.
constexpr uint64_t kMaxRepeat = 100000;
// Most items a grammar may hold once repetitions are expanded (~64 MiB of IR), and deepest
// nesting of parentheses (the parser recurses per level): hostile text gets an error, not an
// out-of-memory or a native stack overflow.
constexpr uint64_t kMaxGrammarItems = 1000000;
constexpr int kMaxNesting = 256;

// Size limits of one grammar. The defaults are the library's; a caller that compiles grammars
// from untrusted users may lower them (the fuzz target does, to keep its executions short).
struct GrammarLimits {
    uint64_t max_repeat = kMaxRepeat;
    uint64_t max_items = kMaxGrammarItems;
};

// Parses GBNF text (see docs/structured-output.md). Throws Error(grammar_error) with
// "line L, column C: ..." on malformed text, undefined rules, a missing root rule or a grammar
// over the limits.
GrammarIR parse_gbnf(const std::string& text, const std::string& root = "root", const GrammarLimits& limits = {});

}  // namespace ikllm::grammar
