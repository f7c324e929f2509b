// Code-point range sets and UTF-8 helpers used by the grammar parser and compiler.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"

namespace ikllm::grammar {

// Sorted, merged ranges with the surrogates D800-DFFF removed.
std::vector<CharRange> normalize_ranges(std::vector<CharRange> rs);
// All Unicode scalar values not in rs (rs normalized).
std::vector<CharRange> complement_ranges(const std::vector<CharRange>& rs);

// Length of the well-formed UTF-8 sequence at s (and its code point), 0 if ill-formed/truncated.
size_t decode_utf8(const uint8_t* s, size_t n, uint32_t* cp);
void append_utf8(std::string& out, uint32_t cp);

// One UTF-8 byte-range sequence: byte i of the encoding lies in [lo[i], hi[i]].
struct ByteSeq {
    int len = 0;
    uint8_t lo[4] = {0, 0, 0, 0}, hi[4] = {0, 0, 0, 0};
};
// The encodings of the code points in rs as a list of byte-range sequences covering exactly them.
std::vector<ByteSeq> utf8_sequences(const std::vector<CharRange>& rs);

}  // namespace ikllm::grammar
