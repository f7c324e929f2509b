// Fuzz target: the GBNF parser and compiler plus the byte automaton that grammar sampling runs.
// Input: GBNF text \0 bytes to feed. The grammar either compiles or throws ikllm::Error
// (grammar / invalid_argument); a compiled grammar is then walked over the bytes: every step
// gives a state or kDead, and the automaton's cache stays bounded (compacted as the sampler does).
// Most inputs compile under lowered size limits: a 40-byte "(x?){0,99999}" builds 10^5 rules, over
// a second under ASan, and the corpus fills with such inputs; one input in 32 (by a hash of its
// bytes) gets the library's own limits, so the large-grammar paths are still explored. Replays of
// the committed regressions use the library's limits for every input (run_production_limits, and
// the fuzz binary with IKLLM_FUZZ_PRODUCTION_LIMITS=1, as their ctest sets it).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "fuzz_common.h"
#include "grammar/automaton.h"
#include "grammar/byte_grammar.h"

namespace ikllm::fuzz::grammar_target {

grammar::GrammarLimits limits_for(const uint8_t* data, size_t size) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
    grammar::GrammarLimits limits;
    if ((h & 31) != 0) {
        limits.max_repeat = 256;
        limits.max_items = 8192;
    }
    return limits;
}

int run_with(const uint8_t* data, size_t size, const grammar::GrammarLimits& limits) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    const size_t cut = in.find('\0');
    const std::string text(in.substr(0, cut));
    const std::string_view feed = cut == std::string_view::npos ? std::string_view{} : in.substr(cut + 1);
    std::shared_ptr<const grammar::ByteGrammar> g;
    try {
        g = grammar::compile_gbnf(text, "root", limits);
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
        // stay well inside libFuzzer's timeout whatever the grammar. plain_depth is asked once,
        // of the state after the whole walk (when the grammar accepted every byte): a search
        // computes the transitions of up to 16 states over every plain byte, and asking it at
        // every byte (or every 16th) made it ~85 % of the target's time.
        for (unsigned char b : feed.substr(0, 512)) {
            s = a.next(s, b);
            if (s == grammar::Automaton::kDead) break;
            (void)a.accepting(s);
            if (a.memory_bytes() > (64u << 20)) s = a.compact(s);
        }
        if (s != grammar::Automaton::kDead) (void)a.plain_depth(s);
    } catch (const Error& e) {
        // Limits on nesting depth / states are reported as errors, never as crashes.
        IKLLM_FUZZ_CHECK(e.status == Status::grammar_error || e.status == Status::out_of_memory ||
                         e.status == Status::invalid_argument, "automaton limits are errors");
    }
    return 0;
}

int run(const uint8_t* data, size_t size) { return run_with(data, size, limits_for(data, size)); }
int run_production_limits(const uint8_t* data, size_t size) { return run_with(data, size, {}); }

}  // namespace ikllm::fuzz::grammar_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool production = std::getenv("IKLLM_FUZZ_PRODUCTION_LIMITS") != nullptr;
    return production ? ikllm::fuzz::grammar_target::run_production_limits(data, size)
                      : ikllm::fuzz::grammar_target::run(data, size);
}
#endif
