// Internal failure of the template engine, named after the Python exception jinja2 would raise
// ("TemplateSyntaxError", "TemplateError" for raise_exception, "UndefinedError", "TypeError", ...).
// chat_template.cpp converts it into ikllm::Error(Status::template_error) at the API boundary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace ikllm::chat {

struct JinjaError : std::exception {
    std::string type;
    std::string message;
    int line = 0;  // 1-based template line, 0 while not yet known
    JinjaError(std::string t, std::string m, int l = 0) : type(std::move(t)), message(std::move(m)), line(l) {}
    const char* what() const noexcept override { return message.c_str(); }
};

[[noreturn]] inline void raise_error(const char* type, std::string msg) { throw JinjaError(type, std::move(msg)); }
[[noreturn]] inline void type_error(std::string msg) { raise_error("TypeError", std::move(msg)); }
[[noreturn]] inline void value_error(std::string msg) { raise_error("ValueError", std::move(msg)); }

// Strings a template builds are bounded so that `'x' * 10**12`, `'a'.center(10**12)` or `'%99999999d'`
// fail with a MemoryError instead of exhausting the host.
constexpr size_t kMaxString = size_t(64) << 20;
inline void check_string_size(uint64_t bytes) {
    if (bytes > kMaxString) raise_error("MemoryError", "string too large");
}
// Lists built by concatenation or repetition are bounded alike.
constexpr size_t kMaxListItems = kMaxString / 16;
inline void check_list_size(uint64_t items) {
    if (items > kMaxListItems) raise_error("MemoryError", "list too large");
}
// One more decimal digit of a width/precision being parsed (v < 0: none yet). Saturates above
// kMaxString, so long digit strings cannot overflow; callers then reject the value with check_string_size.
inline int64_t push_width_digit(int64_t v, char32_t digit) {
    if (v < 0) v = 0;
    return v > static_cast<int64_t>(kMaxString) ? v : v * 10 + static_cast<int64_t>(digit - '0');
}

}  // namespace ikllm::chat
