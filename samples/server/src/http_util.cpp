#include "http_util.h"

#include <random>

namespace server {

json parse_body(const httplib::Request& req) {
    json j = json::parse(req.body, nullptr, false);
    if (j.is_discarded()) throw bad_request("the request body is not valid JSON", "", "invalid_json");
    if (!j.is_object()) throw bad_request("the request body must be a JSON object", "", "invalid_json");
    return j;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& j) {
    res.status = status;
    res.set_content(dump_json(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_body(e), "application/json");
}

std::string base64_encode(const void* data, size_t n) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const auto* p = static_cast<const unsigned char*>(data);
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out += tbl[v >> 18 & 63];
        out += tbl[v >> 12 & 63];
        out += i + 1 < n ? tbl[v >> 6 & 63] : '=';
        out += i + 2 < n ? tbl[v & 63] : '=';
    }
    return out;
}

std::string random_id(const std::string& prefix) {
    std::random_device rd;
    std::string s = prefix;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 24; ++i) s += hex[rd() & 15];
    return s;
}

}  // namespace server
