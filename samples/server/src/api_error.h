// OpenAI-shaped errors: {"error": {"message", "type", "param", "code"}} with the matching HTTP status.
#pragma once
#include <stdexcept>
#include <string>

namespace server {

struct ApiError : std::runtime_error {
    int status;
    std::string type, param, code;
    ApiError(int status_, std::string type_, const std::string& message, std::string param_ = "", std::string code_ = "")
        : std::runtime_error(message), status(status_), type(std::move(type_)), param(std::move(param_)),
          code(std::move(code_)) {}
};

// 400 for a request the client got wrong; param names the offending field.
ApiError bad_request(const std::string& message, const std::string& param = "", const std::string& code = "");
// The JSON body for an error.
std::string error_body(const ApiError& e);

}  // namespace server
