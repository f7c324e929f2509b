// Where the weights live in memory: transparent huge pages (the mapping, or the read copy that
// was advised before it was written) and a NUMA policy for the file mapping (model options
// "huge_pages" and "numa"). Returns a one-line description for
// `ikllm info` and the bench header.
#pragma once
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

}  // namespace ikllm
