// Tokenizer for jinja2 template source, configured as transformers configures jinja2: default delimiters,
// trim_blocks and lstrip_blocks on, `{%-`/`-%}`/`{{-`/`-}}`/`{#-`/`-#}` and `{%+`/`+%}` whitespace
// control, raw blocks, newline normalisation and removal of one trailing newline.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ikllm::chat {

enum class Tok : uint8_t { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Op, Eof };

struct Token {
    Tok type = Tok::Eof;
    std::string text;  // data, name, operator, or the unescaped value of a string literal
    int64_t ival = 0;
    double fval = 0;
    int line = 1;
};

// Throws JinjaError("TemplateSyntaxError") on malformed input.
std::vector<Token> tokenize(std::string_view source);

}  // namespace ikllm::chat
