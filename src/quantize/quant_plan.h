// Which type each tensor of a model gets when quantizing: presets (Q4_K_M, IQ4_K ...), --pure,
// user rules (first match wins), the fallbacks forced by row lengths and interleave, and the
// importance-matrix requirements of the low-bit types (docs: quant-formats.md §16).
#pragma once
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

namespace ikllm::quantize {

struct Rule {
    std::string pattern;   // as the user wrote it (for messages)
    std::regex regex;      // searched in the tensor name
    uint32_t type = 0;
    bool used = false;
};

struct PlanParams {
    std::string target;             // preset or type name, case-insensitive
    bool pure = false;              // one type for every 2-D weight
    bool repack = false;            // convert to the row-interleaved variant where one exists
    bool have_imatrix = false;      // an importance matrix was given
    bool ignore_imatrix_rules = false;
    std::vector<Rule> rules;
};

// A resolved preset: its name, main type and the GGUF general.file_type value.
struct Preset {
    std::string name;
    uint32_t main_type = 0;
    uint32_t file_type = 0;
    bool repacked = false;  // an _R4/_R8/_R16 preset: non-embedding tensors are interleaved
};
// Throws invalid_argument naming the unknown target.
Preset resolve_preset(const std::string& target);

// Parses "REGEX=TYPE" (type case-insensitive). Throws invalid_argument on a bad form.
Rule parse_rule(const std::string& text);

struct TensorDesc {
    std::string name;
    uint32_t type = 0;   // current type
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};
};

struct TensorChoice {
    uint32_t type = 0;        // type to write
    bool quantize = false;    // false: copied unchanged
    std::string note;         // fallback or rule explanation ("" when the plan was followed plainly)
};

// Chooses types for all tensors (in file order). n_layer is used for the "more bits" layers of
// mixes. Throws invalid_argument (unmatched rule, missing importance matrix for a low-bit type).
std::vector<TensorChoice> plan(const std::vector<TensorDesc>& tensors, int n_layer, PlanParams& params,
                               const Preset& preset);

// Names of the types (or presets) ikllm quantize accepts, for help texts.
std::string preset_names();

}  // namespace ikllm::quantize
