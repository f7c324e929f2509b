#include "quantize/quant_plan.h"

#include <cctype>
#include <cstring>

#include "core/error.h"
#include "quant/repack.h"
#include "quant/type_traits.h"

namespace ikllm::quantize {

namespace {

// A preset's per-role types, from the reference quantizer's mixes (type names; "" = main type).
// `more` marks roles that get their type only on the "more bits" layers (first and last eighth
// and every third layer between), using `main` elsewhere.
struct Mix {
    const char* name;
    uint32_t file_type;
    const char* main;
    const char* embd;
    const char* output;
    const char* attn_v;
    bool v_more;
    const char* attn_out;
    const char* ffn_down;
    bool down_more;
    const char* attn_qk;
};

constexpr Mix kMixes[] = {
    {"F32", 0, "f32", "", "", "", false, "", "", false, ""},
    {"F16", 1, "f16", "", "", "", false, "", "", false, ""},
    {"BF16", 32, "bf16", "", "", "", false, "", "", false, ""},
    {"Q4_0", 2, "q4_0", "", "q6_K", "", false, "", "", false, ""},
    {"Q4_1", 3, "q4_1", "", "q6_K", "", false, "", "", false, ""},
    {"Q5_0", 8, "q5_0", "", "q6_K", "", false, "", "", false, ""},
    {"Q5_1", 9, "q5_1", "", "q6_K", "", false, "", "", false, ""},
    {"Q6_0", 135, "q6_0", "", "q6_K", "", false, "", "", false, ""},
    {"Q8_0", 7, "q8_0", "", "", "", false, "", "", false, ""},
    {"Q8_KV", 149, "q8_KV", "", "", "", false, "", "", false, ""},
    {"Q2_K", 10, "q2_K", "", "q6_K", "q3_K", false, "q3_K", "q3_K", false, ""},
    {"Q2_K_S", 21, "q2_K", "", "q6_K", "q3_K", false, "q3_K", "", false, ""},
    {"Q3_K_S", 11, "q3_K", "", "q6_K", "", false, "", "", false, ""},
    {"Q3_K_M", 12, "q3_K", "", "q6_K", "q5_K", false, "q4_K", "q4_K", true, ""},
    {"Q3_K_L", 13, "q3_K", "", "q6_K", "q5_K", false, "q5_K", "q5_K", false, ""},
    {"Q4_K_S", 14, "q4_K", "", "q6_K", "q5_K", true, "", "q5_K", true, ""},
    {"Q4_K_M", 15, "q4_K", "", "q6_K", "q6_K", true, "", "q6_K", true, ""},
    {"Q5_K_S", 16, "q5_K", "", "q6_K", "", false, "", "", false, ""},
    {"Q5_K_M", 17, "q5_K", "", "q6_K", "q6_K", true, "", "q6_K", true, ""},
    {"Q6_K", 18, "q6_K", "", "q6_K", "", false, "", "", false, ""},
    {"IQ2_XXS", 19, "iq2_xxs", "q2_K", "q5_K", "iq3_k", false, "", "", false, ""},
    {"IQ2_XS", 20, "iq2_xs", "q2_K", "q5_K", "iq3_k", false, "", "", false, ""},
    {"IQ2_S", 28, "iq2_xs", "iq3_s", "q5_K", "iq3_k", false, "iq3_s", "", false, ""},
    {"IQ2_M", 29, "iq2_s", "iq3_s", "q5_K", "iq3_k", false, "iq3_s", "", false, ""},
    {"IQ3_XXS", 23, "iq3_xxs", "iq3_s", "q5_K", "iq3_k", false, "iq3_s", "", false, "iq2_s"},
    {"IQ3_XS", 22, "iq3_s", "iq3_s", "q6_K", "iq4_k", false, "iq3_s", "", false, "iq3_xxs"},
    {"IQ3_S", 26, "iq3_s", "iq3_s", "q6_K", "iq4_k", false, "iq3_s", "", false, ""},
    {"IQ3_M", 27, "iq3_s", "iq3_s", "q6_K", "iq4_k", false, "iq3_s", "iq4_nl", true, ""},
    {"IQ1_S", 24, "iq1_s", "q2_K", "q5_K", "iq3_k", false, "iq2_k", "", false, ""},
    {"IQ1_M", 31, "iq1_m", "q2_K", "q5_K", "iq3_k", false, "iq2_k", "", false, ""},
    {"IQ4_NL", 25, "iq4_nl", "", "q6_K", "iq5_k", false, "", "", false, ""},
    {"IQ4_XS", 30, "iq4_xs", "", "q6_K", "iq5_k", false, "", "", false, ""},
    {"MXFP4", 38, "mxfp4", "", "q6_K", "", false, "", "", false, ""},
    {"IQ2_K", 138, "iq2_k", "", "q5_K", "iq4_k", false, "iq3_k", "", false, ""},
    {"IQ3_K", 139, "iq3_k", "", "q5_K", "iq4_k", false, "iq3_k", "", false, ""},
    {"IQ4_K", 140, "iq4_k", "", "q6_K", "iq5_k", false, "", "", false, ""},
    {"IQ5_K", 141, "iq5_k", "", "q6_K", "iq5_k", false, "", "", false, ""},
    {"IQ6_K", 142, "iq6_k", "", "", "", false, "", "", false, ""},
    {"IQ2_KS", 147, "iq2_ks", "", "q5_K", "iq3_k", false, "", "", false, ""},
    {"IQ3_KS", 154, "iq3_ks", "", "q5_K", "iq4_ks", false, "", "", false, ""},
    {"IQ4_KS", 145, "iq4_ks", "", "q6_K", "iq5_k", false, "", "", false, ""},
    {"IQ4_KSS", 148, "iq4_kss", "", "q6_K", "iq5_k", false, "", "", false, ""},
    {"IQ5_KS", 150, "iq5_ks", "", "q6_K", "iq5_ks", false, "", "", false, ""},
    {"IQ2_KL", 155, "iq2_kl", "", "q5_K", "iq4_ks", false, "", "", false, ""},
    {"IQ1_KT", 156, "iq1_kt", "", "q5_K", "", false, "", "", false, ""},
    {"IQ2_KT", 151, "iq2_kt", "", "q5_K", "iq3_k", false, "iq3_k", "", false, ""},
    {"IQ3_KT", 152, "iq3_kt", "iq3_s", "q5_K", "iq3_k", false, "", "iq3_k", true, ""},
    {"IQ4_KT", 153, "iq4_kt", "", "q6_K", "iq4_k", false, "", "", false, ""},
};

struct Alias {
    const char* alias;
    const char* preset;
};
constexpr Alias kAliases[] = {{"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}, {"Q3_K", "Q3_K_M"}};

// Presets whose file type the reference refuses without an importance matrix (§16, layer 2).
constexpr const char* kNeedImatrixPresets[] = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_XXS_R4", "IQ2_XS_R4", "Q2_K_S",
                                               "IQ1_S", "IQ1_S_R4", "IQ1_M", "IQ1_M_R4"};
// Tensor types that need importance data (§16, layer 3; token_embd/output exempt).
constexpr uint32_t kNeedImatrixTypes[] = {
    quant::T_IQ2_XXS, quant::T_IQ2_XXS_R4, quant::T_IQ2_XS, quant::T_IQ2_XS_R4, quant::T_IQ2_S, quant::T_IQ2_S_R4,
    quant::T_IQ1_S,   quant::T_IQ1_S_R4,   quant::T_IQ1_M,  quant::T_IQ1_M_R4,  quant::T_IQ1_KT, quant::T_IQ2_KT};

std::string upper(std::string s) {
    for (char& c : s) c = (char)std::toupper((unsigned char)c);
    return s;
}
bool iequals(const std::string& a, const char* b) { return upper(a) == upper(b); }

uint32_t type_id(const char* name) {
    const quant::TypeTraits* t = quant::find_type_by_name(name);
    if (!t) fail(Status::internal, std::string("quantize preset names unknown type ") + name);
    return t->id;
}

const Mix* find_mix(const std::string& name) {
    for (const Alias& a : kAliases)
        if (iequals(name, a.alias)) return find_mix(a.preset);
    for (const Mix& m : kMixes)
        if (iequals(name, m.name)) return &m;
    return nullptr;
}

bool producible(uint32_t type) {
    const quant::TypeTraits* t = quant::find_type(type);
    return t && t->quantize && !t->is_activation_only;
}

std::string type_name(uint32_t type) {
    const quant::TypeTraits* t = quant::find_type(type);
    return t ? t->name : "type " + std::to_string(type);
}

bool more_bits_layer(int i, int n) {
    // The reference's "use more bits" layers: first and last eighth and every third in between.
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

int layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    return std::atoi(name.c_str() + 4);
}
bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }

bool is_quantizable(const TensorDesc& t) {
    if (t.n_dims < 2) return false;
    const std::string& n = t.name;
    if (n.size() < 7 || n.compare(n.size() - 7, 7, ".weight") != 0) return false;
    return !has(n, "_norm") && !has(n, "ffn_gate_inp") && !has(n, "exp_probs") && !has(n, "rope_freqs") &&
           !has(n, "pos_embd");
}

// A type the row length allows, with a note when it had to change.
uint32_t fit_row(uint32_t type, const TensorDesc& t, std::string& note) {
    const quant::TypeTraits* tt = quant::find_type(type);
    if (t.ne[0] % tt->block_elems == 0) return type;
    const double bpw = 8.0 * tt->block_bytes / tt->block_elems;
    uint32_t alt = bpw <= 4.6 ? quant::T_IQ4_NL : bpw <= 5.6 ? quant::T_Q5_0 : bpw <= 6.6 ? quant::T_Q6_0 : quant::T_Q8_0;
    if (t.ne[0] % 32 != 0) alt = quant::T_F16;
    note = "row length " + std::to_string(t.ne[0]) + " is not a multiple of " + std::to_string(tt->block_elems) +
           " (" + type_name(type) + "): using " + type_name(alt);
    return alt;
}

uint32_t fit_interleave(uint32_t type, const TensorDesc& t, std::string& note) {
    const quant::TypeTraits* tt = quant::find_type(type);
    if (tt->interleave <= 1 || t.ne[1] % tt->interleave == 0) return type;
    uint32_t base = quant::repack_base(type);
    if (type == quant::T_Q8_K_R8 || type == quant::T_Q8_K_R16) base = quant::T_Q8_0;
    if (!base) {
        std::string n = tt->name;
        n = n.substr(0, n.rfind('_'));
        base = type_id(n.c_str());
    }
    note = std::to_string(t.ne[1]) + " rows are not a multiple of " + std::to_string(tt->interleave) + " (" +
           type_name(type) + "): using " + type_name(base);
    return base;
}

}  // namespace

Preset resolve_preset(const std::string& target) {
    Preset p;
    p.name = upper(target);
    if (const Mix* m = find_mix(target)) {
        p.main_type = type_id(m->main);
        p.file_type = m->file_type;
        return p;
    }
    const quant::TypeTraits* tt = quant::find_type_by_name(target.c_str());
    if (tt && !producible(tt->id))
        fail(Status::unsupported, "ikllm cannot produce type " + std::string(tt->name) + " (it can load and run it)");
    // An interleaved preset (IQ4_K_R4, IQ2_M_R4 ...): the base preset with its main type repacked.
    const size_t us = p.name.rfind('_');
    const std::string suffix = us == std::string::npos ? "" : p.name.substr(us);
    if (suffix == "_R4" || suffix == "_R8" || suffix == "_R16") {
        if (const Mix* m = find_mix(p.name.substr(0, us))) {
            const uint32_t base_type = type_id(m->main);
            uint32_t r = tt ? tt->id : quant::repack_target(base_type);
            const bool fits = r && (quant::repack_base(r) == base_type ||
                                    (tt && quant::repack_base(r) == 0 && iequals(p.name.substr(0, us), m->main)) ||
                                    (!tt && quant::find_type(r)->interleave == std::atoi(suffix.c_str() + 2)));
            if (fits) {
                if (!producible(r)) fail(Status::unsupported, "ikllm cannot produce type " + type_name(r));
                p.main_type = r;
                p.file_type = m->file_type + 200;
                p.repacked = true;
                return p;
            }
        }
    }
    if (tt && producible(tt->id)) {
        p.main_type = tt->id;
        p.file_type = tt->id == quant::T_Q8_K_R8 ? 399 : 0;
        p.repacked = tt->interleave > 1;
        return p;
    }
    fail(Status::invalid_argument, "unknown quantization type or preset '" + target + "' (known: " + preset_names() + ")");
}

Rule parse_rule(const std::string& text) {
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        fail(Status::invalid_argument, "rule '" + text + "' is not of the form REGEX=TYPE");
    Rule r;
    r.pattern = text.substr(0, eq);
    const std::string tname = text.substr(eq + 1);
    const quant::TypeTraits* tt = quant::find_type_by_name(tname.c_str());
    if (!tt || !producible(tt->id)) fail(Status::invalid_argument, "rule '" + text + "': unknown type '" + tname + "'");
    r.type = tt->id;
    try {
        r.regex = std::regex(r.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        fail(Status::invalid_argument, "rule '" + text + "': bad regular expression: " + e.what());
    }
    return r;
}

std::vector<TensorChoice> plan(const std::vector<TensorDesc>& tensors, int n_layer, PlanParams& params,
                               const Preset& preset) {
    if (!params.have_imatrix && !params.ignore_imatrix_rules)
        for (const char* p : kNeedImatrixPresets)
            if (preset.name == p)
                fail(Status::invalid_argument, "type " + preset.name +
                                                   " needs an importance matrix (--imatrix FILE; make one with "
                                                   "'ikllm imatrix'), or --ignore-imatrix-rules");
    const Mix* mix = preset.repacked ? find_mix(preset.name.substr(0, preset.name.rfind('_'))) : find_mix(preset.name);
    const uint32_t plain_main = mix ? type_id(mix->main) : preset.main_type;
    auto role_type = [&](const char* name, uint32_t def) { return name && *name ? type_id(name) : def; };

    std::vector<TensorChoice> out(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorDesc& t = tensors[i];
        TensorChoice& c = out[i];
        c.type = t.type;
        if (!is_quantizable(t)) continue;
        const std::string& n = t.name;
        const bool is_embd = n == "token_embd.weight";
        const bool is_output = n == "output.weight";
        uint32_t type = plain_main;
        if (!params.pure && mix) {
            const int il = layer_of(n);
            const bool more = il >= 0 && more_bits_layer(il, n_layer > 0 ? n_layer : 1);
            if (is_embd) type = role_type(mix->embd, plain_main);
            else if (is_output) type = role_type(mix->output, plain_main);
            else if (has(n, "attn_v.") ) type = (!mix->v_more || more) ? role_type(mix->attn_v, plain_main) : plain_main;
            else if (has(n, "attn_output.")) type = role_type(mix->attn_out, plain_main);
            else if (has(n, "ffn_down")) type = (!mix->down_more || more) ? role_type(mix->ffn_down, plain_main) : plain_main;
            else if (has(n, "attn_q.") || has(n, "attn_k.")) type = role_type(mix->attn_qk, plain_main);
        }
        // Interleaved layouts are for matrix products; embeddings are looked up row by row.
        if ((preset.repacked || params.repack) && !is_embd) {
            if (type == plain_main && preset.repacked) type = preset.main_type;
            else if (uint32_t r = quant::repack_target(type); r && producible(r)) type = r;
        }
        if (is_embd && quant::find_type(type)->interleave > 1) {
            uint32_t b = quant::repack_base(type);
            type = b ? b : plain_main;
            if (quant::find_type(type)->interleave > 1) type = quant::T_Q8_0;
        }
        if (!producible(type)) fail(Status::unsupported, "ikllm cannot produce type " + type_name(type));
        for (Rule& r : params.rules)
            if (std::regex_search(n, r.regex)) {
                r.used = true;
                type = r.type;
                c.note = "rule '" + r.pattern + "'";
                break;
            }
        std::string why;
        type = fit_interleave(type, t, why);
        type = fit_row(type, t, why);
        if (!why.empty()) c.note = c.note.empty() ? why : c.note + "; " + why;
        if (!params.have_imatrix && !params.ignore_imatrix_rules && !is_embd && !is_output)
            for (uint32_t need : kNeedImatrixTypes)
                if (type == need)
                    fail(Status::invalid_argument, "tensor '" + n + "' would be " + type_name(type) +
                                                       ", which needs an importance matrix (--imatrix FILE), or "
                                                       "--ignore-imatrix-rules");
        c.type = type;
        c.quantize = type != t.type;
    }
    for (const Rule& r : params.rules)
        if (!r.used) fail(Status::invalid_argument, "rule '" + r.pattern + "' matches no tensor");
    return out;
}

std::string preset_names() {
    std::string s;
    for (const Mix& m : kMixes) {
        if (!s.empty()) s += ' ';
        s += m.name;
    }
    s += " Q3_K Q4_K Q5_K, any type name, and _R4/_R8/_R16 forms";
    return s;
}

}  // namespace ikllm::quantize
