#include "api_error.h"

#include <nlohmann/json.hpp>

namespace server {

ApiError bad_request(const std::string& message, const std::string& param, const std::string& code) {
    return ApiError(400, "invalid_request_error", message, param, code);
}

std::string error_body(const ApiError& e) {
    nlohmann::json err = {{"message", e.what()}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
    if (!e.param.empty()) err["param"] = e.param;
    if (!e.code.empty()) err["code"] = e.code;
    return nlohmann::json{{"error", err}}.dump();
}

}  // namespace server
