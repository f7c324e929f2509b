#include "json_fields.h"

#include <cmath>

#include "api_error.h"

namespace server::fields {

namespace {
const json* find(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}
std::string range_text(double lo, double hi) {
    auto fmt = [](double v) {
        std::string s = std::to_string(v);
        s.erase(s.find_last_not_of('0') + 1);
        if (!s.empty() && s.back() == '.') s.pop_back();
        return s;
    };
    return fmt(lo) + " and " + fmt(hi);
}
}  // namespace

std::optional<double> number(const json& obj, const char* key, double lo, double hi) {
    const json* v = find(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw bad_request(std::string("'") + key + "' must be a number", key, "invalid_type");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
        throw bad_request(std::string("'") + key + "' must be between " + range_text(lo, hi), key, "invalid_value");
    return x;
}

std::optional<int64_t> integer(const json& obj, const char* key, int64_t lo, int64_t hi) {
    const json* v = find(obj, key);
    if (!v) return std::nullopt;
    // 3.0 is accepted as an integer (JavaScript clients cannot tell them apart).
    if (v->is_number_float()) {
        const double d = v->get<double>();
        if (std::isfinite(d) && d == std::floor(d) && d >= (double)lo && d <= (double)hi) return (int64_t)d;
    }
    if (!v->is_number_integer()) throw bad_request(std::string("'") + key + "' must be an integer", key, "invalid_type");
    if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)INT64_MAX)
        throw bad_request(std::string("'") + key + "' is out of range", key, "invalid_value");
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi)
        throw bad_request(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                              std::to_string(hi),
                          key, "invalid_value");
    return x;
}

std::optional<bool> boolean(const json& obj, const char* key) {
    const json* v = find(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw bad_request(std::string("'") + key + "' must be a boolean", key, "invalid_type");
    return v->get<bool>();
}

std::optional<std::string> string(const json& obj, const char* key) {
    const json* v = find(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw bad_request(std::string("'") + key + "' must be a string", key, "invalid_type");
    return v->get<std::string>();
}

const json& required(const json& obj, const char* key) {
    const json* v = find(obj, key);
    if (!v) throw bad_request(std::string("'") + key + "' is required", key, "missing_required_parameter");
    return *v;
}

}  // namespace server::fields
