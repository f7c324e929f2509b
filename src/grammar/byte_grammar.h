// The grammar lowered to bytes: every terminal is a set of byte values, code-point classes
// become small rules over their UTF-8 encodings. Matching bytes (not characters) lets a token
// end in the middle of a code point and the next token finish it.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"

namespace ikllm::grammar {

using ByteSet = std::array<uint64_t, 4>;
inline bool byteset_has(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }

struct ByteGrammar {
    enum Kind : uint8_t { kEnd = 0, kBytes = 1, kRef = 2 };
    struct Elem {
        Kind kind;
        uint32_t value;  // kBytes: index into sets; kRef: rule index
    };
    std::vector<Elem> elems;                    // alternatives, each closed by kEnd
    std::vector<ByteSet> sets;
    std::vector<std::vector<uint32_t>> alts;    // per rule: start offsets of its alternatives in elems
    std::vector<std::string> names;
    uint32_t root = 0;
};

// Lowers the IR and checks it: Error(grammar_error) for left recursion (which includes repeating
// something that can match the empty text), naming the rule and where it is defined.
std::shared_ptr<const ByteGrammar> compile_grammar(const GrammarIR& ir);

// parse_gbnf + compile_grammar.
std::shared_ptr<const ByteGrammar> compile_gbnf(const std::string& text, const std::string& root = "root",
                                                const GrammarLimits& limits = {});

}  // namespace ikllm::grammar
