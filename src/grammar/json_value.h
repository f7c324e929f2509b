// A small JSON document model for JSON Schema conversion: objects keep their key order (the
// order properties are generated in), numbers keep their source text.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ikllm::grammar {

struct JsonValue {
    enum class Type : uint8_t { null, boolean, number, string, array, object };
    Type type = Type::null;
    bool b = false;
    double num = 0;
    std::string text;  // string value, or the number's source text
    std::vector<JsonValue> items;
    std::vector<std::pair<std::string, JsonValue>> members;

    // Special members are defined in json_value.cpp, where JsonValue is complete: implicit ones
    // would make std::pair<std::string, JsonValue> check itself while JsonValue is incomplete,
    // which clang rejects.
    JsonValue();
    ~JsonValue();
    JsonValue(const JsonValue&);
    JsonValue(JsonValue&&) noexcept;
    JsonValue& operator=(const JsonValue&);
    JsonValue& operator=(JsonValue&&) noexcept;

    const JsonValue* get(const std::string& key) const;
    bool is(Type t) const { return type == t; }
};

// Defined after the class: std::pair<std::string, JsonValue> needs JsonValue complete (clang).
inline const JsonValue* JsonValue::get(const std::string& key) const {
    for (const auto& [k, v] : members)
        if (k == key) return &v;
    return nullptr;
}

// Throws Error(grammar_error) "json_schema: line L, column C: ..." on malformed JSON.
JsonValue parse_json(const std::string& text);
// Compact serialization (as JSON text would be written by a generator: no spaces).
std::string to_json(const JsonValue& v);
// JSON string literal for s (quotes included).
std::string json_quote(const std::string& s);

}  // namespace ikllm::grammar
