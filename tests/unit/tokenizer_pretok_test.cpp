// Pre-tokenizer regex sets on the examples of docs/tokenizers.md §5 and on the semantics of
// the original regexes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

using namespace ikllm::tok;

namespace {

std::vector<std::string> words(PreSet set, const std::string& text) {
    const std::vector<uint32_t> c = utf8_to_cpts(text);
    std::vector<Span> spans;
    pre_tokenize(set, c, spans);
    std::vector<std::string> out;
    size_t covered = 0;
    for (const Span& s : spans) {
        EXPECT_EQ(s.b, covered) << "words must tile the text";
        EXPECT_LT(s.b, s.e);
        covered = s.e;
        std::string w;
        for (uint32_t i = s.b; i < s.e; ++i) utf8_append(w, c[i]);
        out.push_back(w);
    }
    EXPECT_EQ(covered, c.size());
    return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST(TokenizerPretok, DocExamples) {
    // §5.3: GPT2 with a no-break space.
    EXPECT_EQ(words(PreSet::gpt2, "a\xC2\xA0" "b  c"), (V{"a", "\xC2\xA0", "b", " ", " c"}));
    // §5.3: '~' is neither \p{P} nor \p{S} on the std::regex path (DEEPSEEK3).
    EXPECT_EQ(words(PreSet::deepseek3, "a ~~ b"), (V{"a", " ", "~~", " b"}));
    // §5.2: U+3000 is whitespace, U+3001 falls into the 0800-4E00 "CJK" range (DEEPSEEK_LLM).
    EXPECT_EQ(words(PreSet::deepseek_llm, "a\xE3\x80\x80\xE3\x80\x81" "b"), (V{"a", "\xE3\x80\x80", "\xE3\x80\x81", "b"}));
    // §5.4: \p{N}{1,3} vs \p{N}.
    EXPECT_EQ(words(PreSet::llama3, "1234567"), (V{"123", "456", "7"}));
    EXPECT_EQ(words(PreSet::qwen2, "1234"), (V{"1", "2", "3", "4"}));
}

TEST(TokenizerPretok, Gpt2Regex) {
    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    EXPECT_EQ(words(PreSet::gpt2, "I've  been 'told"), (V{"I", "'ve", " ", " been", " '", "told"}));
    EXPECT_EQ(words(PreSet::gpt2, "'S"), (V{"'", "S"}));  // case-sensitive contractions
    EXPECT_EQ(words(PreSet::gpt2, "x 12ab!!  "), (V{"x", " 12", "ab", "!!", "  "}));
    EXPECT_EQ(words(PreSet::gpt2, "\t\tx"), (V{"\t", "\t", "x"}));
    EXPECT_EQ(words(PreSet::gpt2, "a\n\n b"), (V{"a", "\n\n", " b"}));
}

TEST(TokenizerPretok, Llama3Regex) {
    // Contractions are case-insensitive as in the original (?i:...) regex.
    EXPECT_EQ(words(PreSet::llama3, "'Sam"), (V{"'S", "am"}));
    EXPECT_EQ(words(PreSet::llama3, "we'RE"), (V{"we", "'RE"}));
    // [^\r\n\p{L}\p{N}]?\p{L}+ takes one leading non-letter (even a tab or punctuation).
    EXPECT_EQ(words(PreSet::llama3, "\tHello,world"), (V{"\tHello", ",world"}));
    //  ?[^\s\p{L}\p{N}]+[\r\n]* keeps trailing newlines with the punctuation.
    EXPECT_EQ(words(PreSet::llama3, "a ...\n\nb"), (V{"a", " ...\n\n", "b"}));
    // \s*[\r\n]+ ends at the last newline of a whitespace run; \s+(?!\S) leaves one space.
    EXPECT_EQ(words(PreSet::llama3, "a \n \n  b"), (V{"a", " \n \n", " ", " b"}));
    EXPECT_EQ(words(PreSet::llama3, "a   "), (V{"a", "   "}));
}

TEST(TokenizerPretok, MultiRegexSets) {
    // STARCODER: \p{N} first, then GPT2 inside each segment.
    EXPECT_EQ(words(PreSet::starcoder, "x 123"), (V{"x", " ", "1", "2", "3"}));
    // FALCON: punctuation runs first, then GPT2, then three-digit groups.
    EXPECT_EQ(words(PreSet::falcon, "a+b 12345"), (V{"a", "+", "b", " ", "123", "45"}));
    EXPECT_EQ(words(PreSet::falcon, "12345"), (V{"123", "45"}));
    // DEEPSEEK_CODER: [\r\n], \s?\p{L}+, \s?\p{P}+, CJK, \p{N}.
    EXPECT_EQ(words(PreSet::deepseek_coder, "ab 12\ncd."), (V{"ab", " ", "1", "2", "\n", "cd", "."}));
    // DEEPSEEK_LLM: trailing whitespace is its own piece (\s+$).
    EXPECT_EQ(words(PreSet::deepseek_llm, "ab  "), (V{"ab", "  "}));
    // DEEPSEEK3: ASCII punctuation glued to ASCII letters; digits in threes.
    EXPECT_EQ(words(PreSet::deepseek3, ".cpp 12345"), (V{".cpp", " ", "123", "45"}));
}

TEST(TokenizerPretok, NamesResolve) {
    EXPECT_EQ(resolve_pre("llama-bpe").set, PreSet::llama3);
    EXPECT_TRUE(resolve_pre("llama-bpe").ignore_merges);
    EXPECT_TRUE(resolve_pre("llama-bpe").add_bos_default);
    EXPECT_EQ(resolve_pre("qwen2").set, PreSet::qwen2);
    EXPECT_FALSE(resolve_pre("qwen2").clean_spaces);
    EXPECT_EQ(resolve_pre("mpt").set, PreSet::gpt2);
    EXPECT_EQ(resolve_pre("").set, PreSet::default_set);
    EXPECT_EQ(resolve_pre("deepseek-v3").set, PreSet::deepseek3);
    EXPECT_EQ(resolve_pre("command-r").set, PreSet::starcoder);
    EXPECT_ANY_THROW(resolve_pre("not-a-pre"));
}
