#include "model/memory_placement.h"

#include <cstdlib>

#include "core/error.h"

#if defined(IKLLM_HAVE_NUMA)
#include <numa.h>
#endif

namespace ikllm {

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
    if (opts.numa.empty()) return d + "; numa: system default";
#if defined(IKLLM_HAVE_NUMA)
    if (numa_available() < 0) return d + "; numa: not available on this machine";
    const int nodes = numa_max_node() + 1;
    if (bind_node >= nodes)
        fail(Status::invalid_argument, "numa: node " + std::to_string(bind_node) + " does not exist (" +
                                           std::to_string(nodes) + " nodes)");
    if (!mmapped) return d + "; numa policy applies to mapped weights only";
    for (auto [p, n] : file.mapped_ranges()) {
        if (bind_node >= 0) numa_tonode_memory(p, n, bind_node);
        else numa_interleave_memory(p, n, numa_all_nodes_ptr);
    }
    return d + (bind_node >= 0 ? "; numa: bound to node " + std::to_string(bind_node)
                               : "; numa: interleaved over " + std::to_string(nodes) + " node(s)");
#else
    return d + "; numa: this build has no libnuma";
#endif
}

}  // namespace ikllm
