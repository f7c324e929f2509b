// A loaded model: immutable after load, shareable across threads and sessions.
#pragma once
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"
#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "ops.h"

namespace ikllm {

namespace tok { class Tokenizer; }
class Logger;

// Weights of one transformer block; null pointers are absent optional tensors.
struct LayerWeights {
    Tensor* attn_norm = nullptr;
    Tensor *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;
    Tensor *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
    Tensor *q_norm = nullptr, *k_norm = nullptr;
    Tensor* ffn_norm = nullptr;
    Tensor *ffn_gate = nullptr, *ffn_up = nullptr, *ffn_down = nullptr;
    Tensor *ffn_gate_b = nullptr, *ffn_up_b = nullptr, *ffn_down_b = nullptr;
    // MoE: router, routed experts (gate may be a merged gate_up tensor with up == null),
    // selection bias (deepseek V3), shared experts
    Tensor* ffn_gate_inp = nullptr;
    Tensor *ffn_gate_exps = nullptr, *ffn_up_exps = nullptr, *ffn_down_exps = nullptr;
    Tensor* exp_probs_b = nullptr;
    Tensor *ffn_gate_shexp = nullptr, *ffn_up_shexp = nullptr, *ffn_down_shexp = nullptr;
    // MLA (deepseek2): q low-rank (or plain wq for lite), kv latent, derived per-head k/v products
    Tensor *wq_a = nullptr, *q_a_norm = nullptr, *wq_b = nullptr;
    Tensor *wkv_a_mqa = nullptr, *kv_a_norm = nullptr;
    Tensor* wk_b = nullptr;  // [d_nope, r_kv, H]
    Tensor* wv_b = nullptr;  // [r_kv, d_v, H]
    Tensor* wkv_b = nullptr; // [r_kv, H*(d_nope+d_v)] when the file has it: expanded MLA of big batches
    bool is_moe() const { return ffn_gate_inp != nullptr; }
};

struct ModelOptions {
    // -1 (auto): read the file into memory when nothing needs the mapping's laziness (no GPU
    // placement, repacking, vocab-only load or NUMA policy) and it takes at most 3/4 of the
    // available memory, else map it (load_storage() in loader.cpp).
    int use_mmap = -1;
    bool check_tensors = false;  // decode every tensor at load to find NaN/inf (slow)
    bool vocab_only = false;     // metadata + tokenizer only (no weights, no sessions)
    // Convert CPU weights to row-interleaved layouts at load: -1 (auto) where the CPU backend runs
    // them faster and the weights are a read copy (converted in place, no extra memory), 0 never,
    // 1 where the CPU runs them faster (from a mapping too: they leave it), 2 wherever an
    // interleaved form exists.
    int repack = -1;
    int huge_pages = -1;         // madvise(MADV_HUGEPAGE) on the weights; -1: on for a read copy only
    bool prefault = false;       // fault the mapped weights in at load (memory_placement.h)
    std::string numa;            // "", "interleave", "bind:N"
    // Tensor placement (docs/placement.md): layers [n_layer - n_gpu_layers, n_layer) go to the
    // GPUs (n_gpu_layers > n_layer: the output head too), split into contiguous runs by the
    // shares of tensor_split ("3,1"; empty: in proportion to each GPU's free memory); then the
    // ordered rules "REGEX=DEVICE[,REGEX=DEVICE...]" (first match wins) override per tensor name.
    int32_t n_gpu_layers = 0;
    std::string tensor_placement;
    std::string tensor_split;
};

// Called between load steps: return false to cancel.
using ProgressFn = std::function<bool(float)>;

class Model {
public:
    ~Model();
    HParams hp;
    std::unique_ptr<gguf::File> file;
    std::unique_ptr<tok::Tokenizer> tokenizer;
    std::unique_ptr<backend::Backend> cpu;

    Tensor* tok_embd = nullptr;
    Tensor* output_norm = nullptr;
    Tensor* output = nullptr;     // == tok_embd when tied
    Tensor* rope_freqs = nullptr;
    std::vector<LayerWeights> layers;

    bool vocab_only = false;
    std::string placement;       // how the weights are placed in memory (for info / bench)
    uint64_t n_params = 0;
    uint64_t weight_bytes = 0;
    const Tensor* find_weight(const std::string& name) const;

    // Storage for weight views (stable addresses).
    std::vector<std::unique_ptr<Tensor>> weights;
    std::map<std::string, Tensor*, std::less<>> by_name;
    std::deque<std::string> derived_names;  // names of tensors made at load (stable storage)
    std::vector<std::unique_ptr<backend::Buffer>> buffers;  // converted/copied weights
    // The copy of a mapped file's CPU weights (copy_cpu_weights; null: none): owned, writable
    // memory, so run-time repack may convert the tensors in it in place.
    const void* cpu_weight_copy = nullptr;
    uint64_t cpu_weight_copy_bytes = 0;

    // Devices that hold weights: [0] is always the CPU backend (== cpu), then GPUs in use.
    // Tensor::device indexes this list.
    std::vector<backend::Backend*> devices;
    std::vector<std::string> device_names;        // "CPU", "CUDA0"
    std::vector<uint64_t> device_weight_bytes;    // weight bytes per device
    std::vector<std::string> placement_report;    // rules that matched nothing, forced fallbacks
    std::vector<std::unique_ptr<backend::Backend>> gpu_backends;  // owned GPU backends
    // Device of layer l's attention (its KV cache lives there).
    std::vector<int> layer_attn_device;

    // Identity hash for session-state headers (model_fingerprint), computed once on first use:
    // hashing a 150k-entry vocabulary on every state save/load cost more than the load itself.
    mutable std::once_flag fingerprint_once;
    mutable uint64_t fingerprint = 0;
};

namespace backend { class Registry; }
// registry: where GPU backends come from (null: CPU only).
std::unique_ptr<Model> load_model(const std::string& path, const ModelOptions& opts, const ProgressFn& progress,
                                  const Logger& log, backend::Registry* registry = nullptr);

// Geometry callback for gguf::File::open backed by the type registry.
bool type_geometry(uint32_t type, gguf::TypeGeometry* out);

}  // namespace ikllm
