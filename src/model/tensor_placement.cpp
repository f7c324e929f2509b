// Tensor placement: ngl layers, REGEX=DEVICE rules, type fallbacks (tensor_placement.h).
#include <algorithm>
#include <map>
#include "model/tensor_placement.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "quant/repack.h"
#include "quant/type_traits.h"
#include "quant/unpack_interleaved.h"

namespace ikllm {

namespace {

std::string trim(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace((unsigned char)s[b])) ++b;
    while (e > b && std::isspace((unsigned char)s[e - 1])) --e;
    return s.substr(b, e - b);
}

bool is_gpu(const std::string& device) { return device != "CPU"; }

}  // namespace

std::string normalize_device_name(const std::string& name) {
    std::string up;
    for (char c : name) up += (char)std::toupper((unsigned char)c);
    if (up == "CPU") return up;
    if (up.size() > 4 && up.compare(0, 4, "CUDA") == 0) {
        for (size_t i = 4; i < up.size(); ++i)
            if (!std::isdigit((unsigned char)up[i])) return "";
        if (up.size() > 7) return "";            // CUDA0..CUDA999
        if (up.size() > 5 && up[4] == '0') return "";  // no leading zeros
        return up;
    }
    return "";
}

namespace {
constexpr size_t kMaxRulePattern = 256;
constexpr int kMaxRuleNesting = 16;
constexpr size_t kMaxRules = 1024;
}  // namespace

std::vector<PlacementRule> parse_placement_rules(const std::string& text) {
    std::vector<PlacementRule> rules;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find_first_of(",;", start);
        if (end == std::string::npos) end = text.size();
        const std::string item = trim(text.substr(start, end - start));
        start = end + 1;
        if (item.empty()) continue;  // "a=CPU," and blank text
        const size_t eq = item.rfind('=');
        if (eq == std::string::npos)
            fail(Status::invalid_argument, "tensor placement rule '" + item + "' has no '=' (expected REGEX=DEVICE)");
        PlacementRule r;
        r.pattern = trim(item.substr(0, eq));
        const std::string dev = trim(item.substr(eq + 1));
        if (r.pattern.empty()) fail(Status::invalid_argument, "tensor placement rule '" + item + "' has an empty pattern");
        r.device = normalize_device_name(dev);
        if (r.device.empty())
            fail(Status::invalid_argument, "tensor placement rule '" + item + "': unknown device '" + dev +
                 "' (expected CPU or CUDA<n>)");
        // std::regex compiles and matches recursively: a long or deeply nested pattern would
        // overflow the stack (a crash, not an error). Tensor names are short; so are useful rules.
        if (r.pattern.size() > kMaxRulePattern)
            fail(Status::invalid_argument, "tensor placement rule pattern longer than " +
                 std::to_string(kMaxRulePattern) + " characters");
        {
            int depth = 0, max_depth = 0;
            for (size_t i = 0; i < r.pattern.size(); ++i) {
                if (r.pattern[i] == '\\') { ++i; continue; }
                if (r.pattern[i] == '(') max_depth = std::max(max_depth, ++depth);
                else if (r.pattern[i] == ')') --depth;
            }
            if (max_depth > kMaxRuleNesting)
                fail(Status::invalid_argument, "tensor placement rule '" + item + "' nests groups deeper than " +
                     std::to_string(kMaxRuleNesting));
        }
        if (rules.size() >= kMaxRules)
            fail(Status::invalid_argument, "more than " + std::to_string(kMaxRules) + " tensor placement rules");
        try {
            r.re = std::make_shared<const std::regex>(r.pattern, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
            fail(Status::invalid_argument, "tensor placement rule '" + item + "': invalid regex: " + e.what());
        }
        rules.push_back(std::move(r));
    }
    return rules;
}

int32_t layer_of_tensor_name(const std::string& name) {
    if (name.compare(0, 4, "blk.") != 0) return -1;
    size_t i = 4;
    int64_t v = 0;
    while (i < name.size() && std::isdigit((unsigned char)name[i]) && i < 14) v = v * 10 + (name[i++] - '0');
    if (i == 4 || i >= name.size() || name[i] != '.' || v > INT32_MAX) return -1;
    return (int32_t)v;
}

uint32_t gpu_weight_form(uint32_t type, const std::function<bool(uint32_t type)>& gpu_supports_type) {
    if (!gpu_supports_type || gpu_supports_type(type)) return type;
    const quant::TypeTraits* t = quant::find_type(type);
    if (!t || t->interleave == 1 || !quant::unpack_supported(type)) return kNoGpuForm;
    const uint32_t base = quant::repack_base(type);
    const quant::TypeTraits* b = base ? quant::find_type(base) : nullptr;
    // Same bytes per row (the planner counts the file's bytes): true of every bit permutation.
    if (!b || quant::row_bytes(*b, 256 * b->block_elems) != quant::row_bytes(*t, 256 * b->block_elems)) return kNoGpuForm;
    return gpu_supports_type(base) ? base : kNoGpuForm;
}

bool default_gpu_supports_type(uint32_t type) {
    const quant::TypeTraits* t = quant::find_type(type);
    return t && t->dequant && !t->is_activation_only && t->interleave == 1;
}

namespace {

// Which tensors one op reads together, so they must share a device: the routed experts
// (gate/up/down or merged gate_up), a dense FFN's gate and up (fused), the shared experts'
// gate and up, the router and its selection bias, a matrix and its bias. "" = no group.
std::string op_group(const std::string& name) {
    const int32_t layer = layer_of_tensor_name(name);
    if (layer < 0) return "";
    const std::string rest = name.substr(name.find('.', 4) + 1);
    const std::string L = std::to_string(layer) + ":";
    if (rest.find("_exps.") != std::string::npos) return L + "exps";
    if (rest == "ffn_gate.weight" || rest == "ffn_up.weight") return L + "ffn_gate_up";
    if (rest == "ffn_gate_shexp.weight" || rest == "ffn_up_shexp.weight") return L + "shexp_gate_up";
    if (rest == "ffn_gate_inp.weight" || rest == "exp_probs_b.bias") return L + "router";
    const size_t dot = rest.rfind('.');
    if (dot != std::string::npos && (rest.compare(dot, std::string::npos, ".weight") == 0 ||
                                     rest.compare(dot, std::string::npos, ".bias") == 0)) {
        const std::string base = rest.substr(0, dot);
        if (base.rfind("attn_", 0) == 0 || base.rfind("ffn_", 0) == 0) return L + "mat:" + base;
    }
    return "";
}

}  // namespace

// A group split across devices goes to the CPU as a whole, with one report line.
void tie_op_groups(const std::vector<PlacementTensor>& tensors, PlacementResult& res) {
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string g = op_group(tensors[i].name);
        if (!g.empty()) groups[g].push_back(i);
    }
    for (auto& [g, idx] : groups) {
        bool mixed = false;
        for (size_t i : idx) mixed |= res.device_of[i] != res.device_of[idx[0]];
        if (!mixed) continue;
        std::string names;
        for (size_t i : idx) {
            res.device_of[i] = "CPU";
            names += (names.empty() ? "" : ", ") + tensors[i].name;
        }
        res.report.push_back("kept on CPU together (one op reads them): " + names);
    }
}

std::vector<double> parse_tensor_split(const std::string& text) {
    std::vector<double> out;
    if (trim(text).empty()) return out;
    size_t start = 0;
    bool any = false;
    while (start <= text.size()) {
        size_t end = text.find_first_of(",;/", start);
        if (end == std::string::npos) end = text.size();
        const std::string item = trim(text.substr(start, end - start));
        start = end + 1;
        char* stop = nullptr;
        const double v = item.empty() ? -1 : std::strtod(item.c_str(), &stop);
        if (item.empty() || *stop || !std::isfinite(v) || v < 0)
            fail(Status::invalid_argument, "tensor_split '" + text + "': '" + item +
                 "' is not a share (expected non-negative numbers such as '3,1')");
        if (out.size() >= 64) fail(Status::invalid_argument, "tensor_split: more than 64 shares");
        any |= v > 0;
        out.push_back(v);
    }
    if (!any) fail(Status::invalid_argument, "tensor_split '" + text + "': every share is 0");
    return out;
}

std::vector<int> split_layers(int32_t n, const std::vector<double>& split, size_t n_gpus) {
    std::vector<int> gpu_of((size_t)std::max(n, 0), 0);
    if (n_gpus <= 1 || n <= 0) return gpu_of;
    std::vector<double> share(n_gpus, 0.0);
    double sum = 0;
    for (size_t g = 0; g < n_gpus && g < split.size(); ++g) sum += share[g] = split[g];
    if (!(sum > 0)) {
        std::fill(share.begin(), share.end(), 1.0);
        sum = (double)n_gpus;
    }
    double cum = 0;
    int32_t j = 0;
    for (size_t g = 0; g < n_gpus; ++g) {
        cum += share[g];
        const int32_t end = g + 1 == n_gpus ? n : (int32_t)std::floor((double)n * cum / sum + 0.5);
        for (; j < end && j < n; ++j) gpu_of[(size_t)j] = (int)g;
    }
    return gpu_of;
}

PlacementResult place_tensors(const std::vector<PlacementTensor>& tensors, int32_t n_layer, int32_t n_gpu_layers,
                              const std::vector<PlacementRule>& rules, const std::string& gpu_name,
                              const std::function<bool(uint32_t type)>& gpu_supports_type) {
    GpuSet gpus;
    if (!gpu_name.empty()) gpus.names.push_back(gpu_name);
    return place_tensors(tensors, n_layer, n_gpu_layers, rules, gpus, gpu_supports_type);
}

PlacementResult place_tensors(const std::vector<PlacementTensor>& tensors, int32_t n_layer, int32_t n_gpu_layers,
                              const std::vector<PlacementRule>& rules, const GpuSet& gpus,
                              const std::function<bool(uint32_t type)>& gpu_supports_type) {
    PlacementResult res;
    res.device_of.assign(tensors.size(), "CPU");
    const bool have_gpu = !gpus.names.empty();
    auto available = [&](const std::string& dev) {
        return std::find(gpus.names.begin(), gpus.names.end(), dev) != gpus.names.end();
    };
    auto in_use = [&] {
        std::string s;
        for (const std::string& n : gpus.names) s += (s.empty() ? "" : ", ") + n;
        return s;
    };
    if (n_gpu_layers > 0 && !have_gpu)
        res.report.push_back("n_gpu_layers = " + std::to_string(n_gpu_layers) +
                             " asks for a GPU but none is available: every tensor stays on the CPU");
    if (have_gpu && gpus.split.size() > gpus.names.size())
        res.report.push_back("tensor_split has " + std::to_string(gpus.split.size()) + " shares but " +
                             std::to_string(gpus.names.size()) + " GPU(s) are available (" + in_use() +
                             "): the extra shares are ignored");
    // Offloaded layers [first, n_layer): their GPUs; the head goes with the last one.
    const int32_t n_off = (int32_t)std::min<int64_t>(std::max(n_gpu_layers, 0), std::max(n_layer, 0));
    const int32_t first = n_layer - n_off;
    const std::vector<int> layer_gpu = split_layers(n_off, gpus.split, gpus.names.size());
    std::vector<uint64_t> matched(rules.size(), 0);
    std::vector<std::string> wanted(tensors.size(), "CPU");
    for (size_t i = 0; i < tensors.size(); ++i) {
        const PlacementTensor& t = tensors[i];
        const int32_t layer = t.layer >= 0 ? t.layer : layer_of_tensor_name(t.name);
        std::string dev = "CPU";
        if (n_gpu_layers > 0 && have_gpu) {
            const bool head = t.name == "output.weight" || t.name == "output_norm.weight";
            if (layer >= first && layer < n_layer) dev = gpus.names[(size_t)layer_gpu[(size_t)(layer - first)]];
            else if (head && n_gpu_layers > n_layer)
                dev = gpus.names[layer_gpu.empty() ? gpus.names.size() - 1 : (size_t)layer_gpu.back()];
        }
        for (size_t r = 0; r < rules.size(); ++r)
            if (std::regex_search(t.name, *rules[r].re)) {
                dev = rules[r].device;
                ++matched[r];
                break;
            }
        wanted[i] = dev;
    }
    for (size_t r = 0; r < rules.size(); ++r) {
        if (!matched[r]) res.report.push_back("rule '" + rules[r].text() + "' matched no tensor");
        else if (is_gpu(rules[r].device) && !have_gpu)
            res.report.push_back("rule '" + rules[r].text() + "': no GPU is available, its " +
                                 std::to_string(matched[r]) + " tensor(s) stay on the CPU");
        else if (is_gpu(rules[r].device) && !available(rules[r].device))
            res.report.push_back("rule '" + rules[r].text() + "': device " + rules[r].device +
                                 " is not available (GPUs: " + in_use() + "), its tensors stay on the CPU");
    }
    std::map<uint32_t, int> converted;  // interleaved type -> tensors going to a GPU as its base type
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string& dev = wanted[i];
        if (!is_gpu(dev) || !available(dev)) continue;  // CPU, or reported above
        const uint32_t form = gpu_weight_form(tensors[i].type, gpu_supports_type);
        if (form == kNoGpuForm) {
            const quant::TypeTraits* tt = quant::find_type(tensors[i].type);
            res.report.push_back(tensors[i].name + ": " + (tt ? tt->name : "type " + std::to_string(tensors[i].type)) +
                                 " has no " + dev + " kernel, kept on CPU");
            continue;
        }
        res.device_of[i] = dev;
        if (form != tensors[i].type) converted[tensors[i].type]++;
    }
    tie_op_groups(tensors, res);
    for (auto [type, count] : converted) {
        int on_gpu = 0;  // after tie_op_groups
        for (size_t i = 0; i < tensors.size(); ++i) on_gpu += tensors[i].type == type && res.device_of[i] != "CPU";
        if (on_gpu)
            res.report.push_back(std::to_string(on_gpu) + " tensor(s) of " + quant::find_type(type)->name +
                                 " go to the GPU as " + quant::find_type(quant::repack_base(type))->name +
                                 ", converted at load (row-interleaved layouts are CPU-only)");
    }
    return res;
}

}  // namespace ikllm
