// JSON string escaping shared by the layers that write JSON (chat templates' tojson, the grammar
// layer's schema messages): quotes, backslashes and control characters escaped, everything else
// (UTF-8 included) copied as is.
#pragma once
#include <string>

namespace ikllm {

inline void json_escape_append(const std::string& s, std::string& out) {
    static const char* hex = "0123456789abcdef";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += (char)c;
                }
        }
    }
}

}  // namespace ikllm
