// Which device holds each weight tensor (docs/placement.md): layers offloaded ngl-style, then
// ordered "REGEX=DEVICE" rules (first match wins), then types the GPU cannot run fall back to
// the CPU. Pure functions of names, types and options: the loader and the memory planner both
// use them, so "will it fit?" and the actual load agree.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace ikllm {

struct PlacementRule {
    std::string pattern;   // ECMAScript regex, searched anywhere in the tensor name
    std::string device;    // normalised: "CPU" or "CUDA<n>"
    std::shared_ptr<const std::regex> re;  // compiled pattern
    std::string text() const { return pattern + "=" + device; }
};

// Parses "REGEX=DEVICE,REGEX=DEVICE" (',' or ';' separate rules; whitespace around items is
// ignored; an empty text gives no rules). Devices: CPU or CUDA<n>, any case ("cuda0" ->
// "CUDA0"). Throws Error(invalid_argument) naming the bad item: no '=', empty pattern, invalid
// regex, unknown device, a pattern over 256 characters or nesting groups deeper than 16, more than
// 1024 rules. (Patterns are ECMAScript with backtracking: a pattern with nested quantifiers such as
// "(.*)*x" can take exponential time on a name -- rules come from the application, not from data.)
std::vector<PlacementRule> parse_placement_rules(const std::string& text);

// "CPU" / "CUDA<n>" in canonical form, or "" when `name` is neither (any case accepted).
std::string normalize_device_name(const std::string& name);

struct PlacementTensor {
    std::string name;
    int32_t layer = -1;    // N of a "blk.N." prefix, else -1
    uint32_t type = 0;     // GGUF type id
    uint64_t bytes = 0;
};

// N of a "blk.N." name prefix, or -1.
int32_t layer_of_tensor_name(const std::string& name);

struct PlacementResult {
    std::vector<std::string> device_of;  // per tensor: "CPU" / "CUDA0" / "CUDA1" ...
    std::vector<std::string> report;     // unmatched rules, unavailable devices, type fallbacks
};

// The GPUs placement may use, in device order, and the share of the offloaded layers each
// takes (model option tensor_split; empty = equal shares). No names = no GPU available.
struct GpuSet {
    std::vector<std::string> names;
    std::vector<double> split;
};

// Parses a tensor_split text "3,1" (',' or ';' or '/' separate shares; blank = none): finite,
// non-negative numbers, not all 0, at most 64. Throws Error(invalid_argument) naming the bad item.
std::vector<double> parse_tensor_split(const std::string& text);

// For n offloaded layers (ascending) the index of the GPU each goes to: contiguous runs in GPU
// order whose lengths follow `split` (missing shares are 0, extra ones ignored; empty or all
// zero among the first n_gpus = equal): run g ends at round(n x (share_0 + .. + share_g) / sum).
std::vector<int> split_layers(int32_t n, const std::vector<double>& split, size_t n_gpus);

// Decides a device per tensor:
//   1. layers [n_layer - n_gpu_layers, n_layer) go to the GPUs, split into contiguous runs by
//      gpus.split (split_layers); n_gpu_layers > n_layer also the output head (output.weight,
//      output_norm.weight), to the GPU of the last layer; token_embd and other tensors without
//      a "blk.N." prefix (rope_freqs, ...) stay on the CPU;
//   2. rules override, first match wins (std::regex_search on the whole name); a rule that
//      matches no tensor gives a report line;
//   3. a tensor asked onto a GPU whose type gpu_supports_type rejects stays on the CPU with a
//      report line -- unless it is a row-interleaved layout (_R4/_R8) that gpu_weight_form
//      converts to its plain type: it goes to the GPU, converted at load, with one report line
//      per type.
// No GPU names = no GPU available: everything is CPU; n_gpu_layers > 0 or a rule naming a GPU
// gives a report line (not an error). A rule naming a GPU not in gpus.names likewise, and a
// split with more shares than GPUs.
PlacementResult place_tensors(const std::vector<PlacementTensor>& tensors, int32_t n_layer, int32_t n_gpu_layers,
                              const std::vector<PlacementRule>& rules, const GpuSet& gpus,
                              const std::function<bool(uint32_t type)>& gpu_supports_type);
// One GPU (gpu_name "" = none).
PlacementResult place_tensors(const std::vector<PlacementTensor>& tensors, int32_t n_layer, int32_t n_gpu_layers,
                              const std::vector<PlacementRule>& rules, const std::string& gpu_name,
                              const std::function<bool(uint32_t type)>& gpu_supports_type);

// Tensors one op reads together (routed experts, fused gate/up, a matrix and its bias, the
// router and its selection bias) must share a device: a group that the steps above split goes
// to the CPU as a whole, with a report line. place_tensors applies it last.
void tie_op_groups(const std::vector<PlacementTensor>& tensors, PlacementResult& res);

// The form a weight of `type` takes on a GPU whose kernels gpu_supports_type tells: the type
// itself, or for a row-interleaved layout the GPU cannot run (_R4 / _R8 ...) its plain base type
// when unpack_rows converts it exactly (a bit permutation; same bytes per row); kNoGpuForm =
// none, the tensor stays on the CPU.
constexpr uint32_t kNoGpuForm = 0xffffffffu;  // (type id 0 is F32)
uint32_t gpu_weight_form(uint32_t type, const std::function<bool(uint32_t type)>& gpu_supports_type);

// Weight types a GPU backend is assumed to run when none is loaded (planning): every type the
// registry can decode that is not row-interleaved (interleave == 1).
bool default_gpu_supports_type(uint32_t type);

}  // namespace ikllm
