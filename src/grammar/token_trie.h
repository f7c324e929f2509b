// The vocabulary as a byte trie laid out in depth-first order, built once per model and shared
// by every grammar sampler of that model. Walking it against a grammar state visits each
// prefix once and skips whole subtrees as soon as the grammar rejects a prefix.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ikllm::grammar {

enum class TokenKind : uint8_t {
    text,      // matched by its bytes
    excluded,  // control / special / empty tokens: never allowed under a grammar
    eog,       // end of generation: allowed only when the grammar is complete
};

struct TokenTrie {
    struct Node {
        uint32_t skip;       // index of the first node after this node's subtree
        uint32_t tok_begin;  // tokens ending here: toks[tok_begin, next node's tok_begin)
        uint16_t depth;      // 1 for the first byte of a piece
        uint8_t byte;
        uint8_t below;       // kPlainBelow set: every byte under this node is plain (see is_plain_byte);
                             // low bits: height of the subtree under it (0 = leaf), plain only when < 128
    };
    static constexpr uint8_t kPlainBelow = 0x80;
    std::vector<Node> nodes;  // plus one sentinel at the end (tok_begin = toks.size())
    std::vector<int32_t> toks;
    std::vector<std::string> pieces;  // per token id
    std::vector<TokenKind> kinds;     // per token id
    std::vector<int32_t> eog;         // ids of end-of-generation tokens
    uint16_t max_depth = 0;
    int32_t n_vocab() const { return (int32_t)pieces.size(); }
};

// Printable ASCII except '"' and '\\': the bytes most text (and JSON string content) consists of.
// Subtrees made only of them can be accepted whole when the grammar is known to take any such
// bytes for long enough (Automaton::plain_depth).
inline bool is_plain_byte(uint8_t b) { return b >= 0x20 && b <= 0x7E && b != '"' && b != '\\'; }

// pieces[i] are the bytes token i appends to the text. Text tokens with an empty piece become
// excluded (they could be repeated forever without moving the grammar).
TokenTrie build_token_trie(std::vector<std::string> pieces, std::vector<TokenKind> kinds);

}  // namespace ikllm::grammar
