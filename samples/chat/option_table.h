// The settings the library lists (ikllm_option_count / ikllm_option_info) for one options kind, with
// the user's text values. Every edit is checked by the library itself (ikllm_options_set_from_text),
// so the error shown next to a field is the library's own message.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct ikllm_options;

namespace chat {

struct OptionField {
    std::string name, default_value, min, max, doc;
    int32_t type = 0;   // IKLLM_OPTION_INT / FLOAT / STRING
    std::string value;  // text as typed
    std::string error;  // library message for the current value ("" = valid)
    bool is_flag() const;  // an int option with range [0, 1]: shown as a checkbox
};

class OptionTable {
public:
    explicit OptionTable(int32_t kind);  // lists the library's options of this kind
    int32_t kind() const { return kind_; }
    std::vector<OptionField>& fields() { return fields_; }
    const std::vector<OptionField>& fields() const { return fields_; }

    // Sets a value as text and validates it; false (and field.error set) when the library rejects it.
    // Unknown keys: false with *error set.
    bool set(const std::string& key, const std::string& value, std::string* error = nullptr);
    bool validate(OptionField& f) const;
    // Valid values that differ from the default, for saving and for building options objects.
    std::map<std::string, std::string> non_defaults() const;
    const OptionField* find(const std::string& key) const;
    bool has_errors() const;

private:
    int32_t kind_;
    std::vector<OptionField> fields_;
};

// An ikllm_options of `kind` with the given text values applied; NULL with *error on failure.
ikllm_options* make_options(int32_t kind, const std::map<std::string, std::string>& values, std::string* error);

}  // namespace chat
