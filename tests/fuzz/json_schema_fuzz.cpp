// Fuzz target: JSON Schema -> GBNF conversion (src/grammar/json_schema.cpp: the JSON reader,
// $ref resolution, numeric ranges, regex patterns, formats) and compilation of its output.
// Property: a schema converts to GBNF that itself compiles, or the conversion throws an
// ikllm::Error with a schema/argument status; never a crash, hang or another exception.
#include <cstdio>
#include <string>

#include "core/error.h"
#include "fuzz_common.h"
#include "grammar/byte_grammar.h"
#include "grammar/json_schema.h"

namespace ikllm::fuzz::schema_target {

bool expected(Status s) {
    return s == Status::grammar_error || s == Status::invalid_argument || s == Status::unsupported;
}

int run(const uint8_t* data, size_t size) {
    const std::string schema(reinterpret_cast<const char*>(data), size);
    std::string gbnf;
    try {
        gbnf = grammar::json_schema_to_gbnf(schema);
    } catch (const Error& e) {
        if (!expected(e.status)) std::fprintf(stderr, "status %d: %s\n", (int)e.status, e.what());
        IKLLM_FUZZ_CHECK(expected(e.status), "bad schemas fail with a clean error");
        return 0;
    }
    try {
        (void)grammar::compile_gbnf(gbnf, "root");
    } catch (const Error& e) {
        // The converter's own output must be valid GBNF; size limits are the only excuse.
        if (e.status != Status::out_of_memory && e.status != Status::grammar_error)
            std::fprintf(stderr, "status %d: %s\n", (int)e.status, e.what());
        IKLLM_FUZZ_CHECK(e.status != Status::internal, "generated grammar compiles");
        IKLLM_FUZZ_CHECK(std::string(e.what()).find("limit") != std::string::npos ||
                         e.status == Status::out_of_memory, "generated grammar compiles (or hits a size limit)");
    }
    return 0;
}

}  // namespace ikllm::fuzz::schema_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::schema_target::run(data, size);
}
#endif
