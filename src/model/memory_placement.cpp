#include "model/memory_placement.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/error.h"

#if defined(IKLLM_HAVE_NUMA)
#include <numa.h>
#endif

namespace ikllm {

namespace {
// Faults every mapped page in now, so no token pays a page fault later (MoE experts are otherwise
// faulted in one by one as routing first reaches them). MADV_POPULATE_READ (Linux 5.14) does it
// in one call; where it is unknown (EINVAL), one read per page. Other errors (I/O, a file that
// shrank) are reported, not retried by touching, which would raise SIGBUS.
std::string prefault(const gguf::File& file) {
    for (auto [p, n] : file.mapped_ranges()) {
#if defined(__linux__) && defined(MADV_POPULATE_READ)
        if (::madvise(p, n, MADV_POPULATE_READ) == 0) continue;
        if (errno != EINVAL) return std::string("; prefault failed: ") + std::strerror(errno);
#endif
        const volatile uint8_t* b = static_cast<const uint8_t*>(p);
        uint8_t sink = 0;
        for (uint64_t i = 0; i < n; i += 4096) sink ^= b[i];
        (void)sink;
    }
    return "; weights prefaulted";
}

std::string numa_policy(const gguf::File& file, bool mmapped, const PlacementOptions& opts, int bind_node) {
    if (opts.numa.empty()) return "; numa: system default";
#if defined(IKLLM_HAVE_NUMA)
    if (numa_available() < 0) return "; numa: not available on this machine";
    const int nodes = numa_max_node() + 1;
    if (bind_node >= nodes)
        fail(Status::invalid_argument, "numa: node " + std::to_string(bind_node) + " does not exist (" +
                                           std::to_string(nodes) + " nodes)");
    if (!mmapped) return "; numa policy applies to mapped weights only";
    for (auto [p, n] : file.mapped_ranges()) {
        if (bind_node >= 0) numa_tonode_memory(p, n, bind_node);
        else numa_interleave_memory(p, n, numa_all_nodes_ptr);
    }
    return bind_node >= 0 ? "; numa: bound to node " + std::to_string(bind_node)
                          : "; numa: interleaved over " + std::to_string(nodes) + " node(s)";
#else
    (void)file;
    (void)mmapped;
    (void)bind_node;
    return "; numa: this build has no libnuma";
#endif
}
}  // namespace

std::string apply_placement(const gguf::File& file, bool mmapped, const PlacementOptions& opts) {
    std::string d = mmapped ? "weights mmapped" : "weights in memory";
    int bind_node = -1;
    if (!opts.numa.empty() && opts.numa != "interleave") {
        if (opts.numa.rfind("bind:", 0) != 0) fail(Status::invalid_argument, "numa must be '', 'interleave' or 'bind:N'");
        char* end = nullptr;
        bind_node = (int)std::strtol(opts.numa.c_str() + 5, &end, 10);
        if (*end || bind_node < 0) fail(Status::invalid_argument, "numa: bad node in '" + opts.numa + "'");
    }
    if (opts.huge_pages)
        d += mmapped ? (file.advise_huge_pages() ? "; huge pages requested (madvise)" : "; huge pages refused by the kernel")
                     : "; huge pages apply to mapped weights only";
    d += numa_policy(file, mmapped, opts, bind_node);
    if (opts.prefault) d += mmapped ? prefault(file) : "; prefault applies to mapped weights only";
    return d;
}

}  // namespace ikllm
