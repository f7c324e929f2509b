// Typed access to optional fields of a request object; a field of the wrong type or out of range
// throws a 400 ApiError naming it. JSON null counts as absent, as OpenAI clients send it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace server::fields {

using json = nlohmann::json;

std::optional<double> number(const json& obj, const char* key, double lo, double hi);
std::optional<int64_t> integer(const json& obj, const char* key, int64_t lo, int64_t hi);
std::optional<bool> boolean(const json& obj, const char* key);
std::optional<std::string> string(const json& obj, const char* key);
// The field must be present (and not null).
const json& required(const json& obj, const char* key);

}  // namespace server::fields
