// Small helpers for the handlers: JSON bodies in and out, OpenAI errors, base64, ids.
#pragma once
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "api_error.h"

namespace server {

using json = nlohmann::json;

// The request body as JSON; 400 when it is not JSON (or not an object).
json parse_body(const httplib::Request& req);
// Serialises with invalid UTF-8 replaced (token pieces may be partial characters).
std::string dump_json(const json& j);
void send_json(httplib::Response& res, int status, const json& j);
void send_error(httplib::Response& res, const ApiError& e);
std::string base64_encode(const void* data, size_t n);
// A random id such as "chatcmpl-3f9a..." (prefix + 24 hex digits).
std::string random_id(const std::string& prefix);

}  // namespace server
