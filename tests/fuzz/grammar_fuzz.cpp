// Fuzz target: the GBNF parser and compiler plus the byte automaton that grammar sampling runs.
// Input: GBNF text \0 bytes to feed. The grammar either compiles or throws ikllm::Error
// (grammar / invalid_argument); a compiled grammar is then walked over the bytes: every step
// gives a state or kDead, and the automaton's cache stays bounded (compacted as the sampler does).
#include <cstdio>
#include <string>

#include "core/error.h"
#include "fuzz_common.h"
#include "grammar/automaton.h"
#include "grammar/byte_grammar.h"

namespace ikllm::fuzz::grammar_target {

int run(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    const size_t cut = in.find('\0');
    const std::string text(in.substr(0, cut));
    const std::string_view feed = cut == std::string_view::npos ? std::string_view{} : in.substr(cut + 1);
    std::shared_ptr<const grammar::ByteGrammar> g;
    try {
        g = grammar::compile_gbnf(text, "root");
    } catch (const Error& e) {
        if (e.status != Status::grammar_error && e.status != Status::invalid_argument)
            std::fprintf(stderr, "status %d: %s\n", (int)e.status, e.what());
        IKLLM_FUZZ_CHECK(e.status == Status::grammar_error || e.status == Status::invalid_argument,
                         "bad grammars fail with a grammar error");
        return 0;
    }
    try {
        grammar::Automaton a(g);
        int32_t s = a.initial();
        // Each byte costs at most the automaton's limits (Automaton::kMaxStacks, the plain-depth
        // search budget): a few ms under ASan for the most ambiguous grammars, so 512 bytes
        // stay well inside libFuzzer's timeout whatever the grammar.
        for (unsigned char b : feed.substr(0, 512)) {
            s = a.next(s, b);
            if (s == grammar::Automaton::kDead) break;
            (void)a.accepting(s);
            (void)a.plain_depth(s);
            if (a.memory_bytes() > (64u << 20)) s = a.compact(s);
        }
    } catch (const Error& e) {
        // Limits on nesting depth / states are reported as errors, never as crashes.
        IKLLM_FUZZ_CHECK(e.status == Status::grammar_error || e.status == Status::out_of_memory ||
                         e.status == Status::invalid_argument, "automaton limits are errors");
    }
    return 0;
}

}  // namespace ikllm::fuzz::grammar_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::grammar_target::run(data, size);
}
#endif
