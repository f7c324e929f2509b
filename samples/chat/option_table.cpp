#include "option_table.h"

#include "ikllm.h"

namespace chat {

bool OptionField::is_flag() const { return type == IKLLM_OPTION_INT && min == "0" && max == "1"; }

OptionTable::OptionTable(int32_t kind) : kind_(kind) {
    const int32_t n = ikllm_option_count(kind);
    for (int32_t i = 0; i < n; ++i) {
        const char *name, *def, *mn, *mx, *doc;
        int32_t type;
        if (ikllm_option_info(kind, i, &name, &type, &def, &mn, &mx, &doc) != IKLLM_OK) continue;
        OptionField f;
        f.name = name;
        f.type = type;
        f.default_value = def ? def : "";
        f.min = mn ? mn : "";
        f.max = mx ? mx : "";
        f.doc = doc ? doc : "";
        f.value = f.default_value;
        fields_.push_back(std::move(f));
    }
}

bool OptionTable::validate(OptionField& f) const {
    ikllm_options* o = nullptr;
    if (ikllm_options_create(kind_, &o) != IKLLM_OK) {
        f.error = ikllm_last_error();
        return false;
    }
    const ikllm_status st = ikllm_options_set_from_text(o, f.name.c_str(), f.value.c_str());
    f.error = st == IKLLM_OK ? "" : ikllm_last_error();
    ikllm_options_free(o);
    return st == IKLLM_OK;
}

bool OptionTable::set(const std::string& key, const std::string& value, std::string* error) {
    for (OptionField& f : fields_) {
        if (f.name != key) continue;
        f.value = value;
        const bool ok = validate(f);
        if (!ok && error) *error = f.error;
        return ok;
    }
    if (error) *error = "unknown setting '" + key + "'";
    return false;
}

std::map<std::string, std::string> OptionTable::non_defaults() const {
    std::map<std::string, std::string> out;
    for (const OptionField& f : fields_)
        if (f.error.empty() && f.value != f.default_value) out[f.name] = f.value;
    return out;
}

const OptionField* OptionTable::find(const std::string& key) const {
    for (const OptionField& f : fields_)
        if (f.name == key) return &f;
    return nullptr;
}

bool OptionTable::has_errors() const {
    for (const OptionField& f : fields_)
        if (!f.error.empty()) return true;
    return false;
}

ikllm_options* make_options(int32_t kind, const std::map<std::string, std::string>& values, std::string* error) {
    ikllm_options* o = nullptr;
    if (ikllm_options_create(kind, &o) != IKLLM_OK) {
        if (error) *error = ikllm_last_error();
        return nullptr;
    }
    for (const auto& [k, v] : values) {
        if (ikllm_options_set_from_text(o, k.c_str(), v.c_str()) != IKLLM_OK) {
            if (error) *error = k + ": " + ikllm_last_error();
            ikllm_options_free(o);
            return nullptr;
        }
    }
    return o;
}

}  // namespace chat
