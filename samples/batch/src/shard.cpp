#include "shard.h"

#include <cstdlib>
#include <stdexcept>

namespace batch {

Shard parse_shard(const std::string& text) {
    const size_t slash = text.find('/');
    const auto bad = [&] { return std::runtime_error("--shard expects K/N with 1 <= K <= N, got '" + text + "'"); };
    if (slash == std::string::npos) throw bad();
    char* end = nullptr;
    const std::string k = text.substr(0, slash), n = text.substr(slash + 1);
    const unsigned long kv = std::strtoul(k.c_str(), &end, 10);
    if (k.empty() || *end) throw bad();
    const unsigned long nv = std::strtoul(n.c_str(), &end, 10);
    if (n.empty() || *end || kv < 1 || nv < 1 || kv > nv || nv > 1000000) throw bad();
    return Shard{(uint32_t)kv, (uint32_t)nv};
}

uint64_t id_hash(const std::string& id) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

bool in_shard(const Shard& s, const std::string& id) { return id_hash(id) % s.count == s.index - 1; }

}  // namespace batch
