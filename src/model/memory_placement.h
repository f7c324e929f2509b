// Where the weights live in memory: transparent huge pages (the mapping, or the read copy that
// was advised before it was written) and a NUMA policy for the file mapping (model options
// "huge_pages" and "numa"). Returns a one-line description for
// `ikllm info` and the bench header.
#pragma once
#include <functional>
#include <string>

#include "gguf/gguf_file.h"

namespace ikllm {

struct PlacementOptions {
    bool huge_pages = false;
    std::string numa;  // "" (system default), "interleave", "bind:N"
    bool prefault = false;  // fault the mapped weights in at load (after the NUMA policy)
};

// Throws invalid_argument for a malformed numa value. Never fails on a machine without NUMA
// or THP: the description says what was applied.
// `why` follows "weights mmapped" / "weights in memory" (how use_mmap auto chose).
std::string apply_placement(const gguf::File& file, bool mmapped, const PlacementOptions& opts,
                            const std::string& why = "");

class Model;
// use_mmap auto with GPU placement keeps the file mapped (the GPU's weights are uploaded from
// it); the weights left on the CPU are then copied into one host buffer on huge pages when they
// fit in 3/4 of the available memory, so the CPU's share of a hybrid model (routed experts)
// streams like a read copy. Tensors outside the mapping (repacked, derived) stay as they are;
// a failed allocation keeps the mapping. Returns what it did, for the placement line.
// `progress(f)`, f in [0, 1], is called before every 16 MiB copied (it may throw to cancel).
std::string copy_cpu_weights(Model& m, const std::function<void(float)>& progress);

}  // namespace ikllm
