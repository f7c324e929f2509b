// Fuzz target: the chat-template renderer (src/chat: Jinja lexer, parser, interpreter, filters,
// Python-compatible JSON and string methods). Input: NUL-separated fields
//   template \0 messages_json \0 extra_vars_json \0 tools_json
// (missing fields are empty; an empty messages field leaves `messages` undefined);
// add_generation_prompt is the parity of the input length; strftime_now sees a fixed date.
// Property: rendering returns text or throws ikllm::Error (template_error / invalid_argument); it
// never crashes, hangs (the step limit is lowered to keep executions fast) or throws anything else.
#include <cstdio>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "fuzz_common.h"

namespace ikllm::fuzz::chat_target {

int run(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string_view fields[4];
    for (int k = 0; k < 4; ++k) {
        const size_t at = k < 3 ? in.find('\0') : std::string_view::npos;
        fields[k] = in.substr(0, at);
        if (at == std::string_view::npos) {
            in = {};
        } else {
            in.remove_prefix(at + 1);
        }
    }
    chat::RenderRequest r;
    r.messages_json = std::string(fields[1]);
    r.extra_vars_json = std::string(fields[2]);
    r.tools_json = std::string(fields[3]);
    r.add_generation_prompt = size & 1;
    r.bos_token = "<s>";
    r.eos_token = "</s>";
    r.now = chat::DateTime{2026, 1, 15, 0, 0, 0};
    r.limits.max_output = 1u << 16;
    r.limits.max_steps = 20000;
    try {
        const chat::ChatTemplate t(fields[0]);
        (void)t.render(r);
    } catch (const Error& e) {
        if (e.status != Status::template_error && e.status != Status::invalid_argument)
            std::fprintf(stderr, "status %d: %s\n", (int)e.status, e.what());
        IKLLM_FUZZ_CHECK(e.status == Status::template_error || e.status == Status::invalid_argument,
                         "render fails with a template or argument error");
    }
    return 0;
}

}  // namespace ikllm::fuzz::chat_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::chat_target::run(data, size);
}
#endif
