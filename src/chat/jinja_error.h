// Internal failure of the template engine, named after the Python exception jinja2 would raise
// ("TemplateSyntaxError", "TemplateError" for raise_exception, "UndefinedError", "TypeError", ...).
// chat_template.cpp converts it into ikllm::Error(Status::template_error) at the API boundary.
#pragma once
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

}  // namespace ikllm::chat
