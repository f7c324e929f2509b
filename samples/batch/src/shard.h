// --shard K/N: a deterministic subset of the documents, decided by the id alone, so N copies of
// the same command (array jobs) cover every document exactly once whatever order they list them.
#pragma once

#include <cstdint>
#include <string>

namespace batch {

struct Shard {
    uint32_t index = 1;  // K, 1-based
    uint32_t count = 1;  // N
};

// Parses "K/N" (1 <= K <= N). Throws std::runtime_error.
Shard parse_shard(const std::string& text);

// FNV-1a 64 of the id: stable across machines and versions.
uint64_t id_hash(const std::string& id);

bool in_shard(const Shard& shard, const std::string& id);

}  // namespace batch
