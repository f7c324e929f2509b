#include "model/memory_placement.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/error.h"
#include "model/model.h"

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

// Bytes of [p, p + n) ranges backed by transparent huge pages right now, from /proc/self/smaps
// (AnonHugePages + FilePmdMapped of the mappings that overlap them, each capped at the overlap);
// -1 where smaps cannot be read.
int64_t huge_page_bytes(const std::vector<std::pair<void*, uint64_t>>& ranges) {
    FILE* f = std::fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    uint64_t lo = 0, hi = 0, overlap = 0;
    int64_t total = 0;
    while (std::fgets(line, sizeof line, f)) {
        unsigned long long a = 0, b = 0, kb = 0;
        char c = 0;
        if (std::sscanf(line, "%llx-%llx %c", &a, &b, &c) == 3 && std::strchr(line, '-') < std::strchr(line, ' ')) {
            lo = a;
            hi = b;
            overlap = 0;
            for (auto [p, n] : ranges) {
                const uint64_t s = std::max<uint64_t>(lo, (uint64_t)(uintptr_t)p);
                const uint64_t e = std::min<uint64_t>(hi, (uint64_t)(uintptr_t)p + n);
                if (e > s) overlap += e - s;
            }
        } else if (overlap && (std::sscanf(line, "AnonHugePages: %llu kB", &kb) == 1 ||
                               std::sscanf(line, "FilePmdMapped: %llu kB", &kb) == 1)) {
            total += (int64_t)std::min<uint64_t>(overlap, kb * 1024);
        }
    }
    std::fclose(f);
    return total;
}

std::string huge_pages(const gguf::File& file, bool mmapped) {
    // A mapping is advised now (file THP, where the kernel has it, comes later from khugepaged);
    // a read copy was advised before it was written, so its pages are counted as granted.
    if (mmapped && !file.advise_huge_pages()) return "; huge pages refused by the kernel";
    uint64_t size = 0;
    for (auto [p, n] : file.mapped_ranges()) size += n;
    // Below one huge page nothing can be on huge pages: skip the smaps walk, which costs
    // milliseconds in processes with many mappings (most of a tiny model's load under ASan).
    constexpr uint64_t kHugePage = 2u << 20;
    const int64_t got = size < kHugePage ? 0 : huge_page_bytes(file.mapped_ranges());
    char buf[128];
    if (got < 0) std::snprintf(buf, sizeof buf, "; huge pages requested (madvise)");
    else
        std::snprintf(buf, sizeof buf, "; huge pages requested (madvise), %.0f of %.0f MiB on huge pages now", got / 1048576.0,
                      size / 1048576.0);
    return buf;
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

std::string apply_placement(const gguf::File& file, bool mmapped, const PlacementOptions& opts, const std::string& why) {
    std::string d = (mmapped ? "weights mmapped" : "weights in memory") + why;
    int bind_node = -1;
    if (!opts.numa.empty() && opts.numa != "interleave") {
        if (opts.numa.rfind("bind:", 0) != 0) fail(Status::invalid_argument, "numa must be '', 'interleave' or 'bind:N'");
        char* end = nullptr;
        bind_node = (int)std::strtol(opts.numa.c_str() + 5, &end, 10);
        if (*end || bind_node < 0) fail(Status::invalid_argument, "numa: bad node in '" + opts.numa + "'");
    }
    if (opts.huge_pages) d += huge_pages(file, mmapped);
    d += numa_policy(file, mmapped, opts, bind_node);
    if (opts.prefault) d += mmapped ? prefault(file) : "; prefault not needed (weights read at load)";
    return d;
}

std::string copy_cpu_weights(Model& m, const std::function<void(float)>& progress) {
    // Byte spans of the CPU tensors that lie in the mapping, merged where views overlap.
    const std::vector<std::pair<void*, uint64_t>> ranges = m.file->mapped_ranges();
    auto in_file = [&](const uint8_t* lo, const uint8_t* hi) {
        for (auto [p, n] : ranges)
            if (lo >= static_cast<const uint8_t*>(p) && hi <= static_cast<const uint8_t*>(p) + n) return true;
        return false;
    };
    struct Span {
        const uint8_t* lo;
        const uint8_t* hi;
        uint64_t offset = 0;
    };
    std::vector<Span> spans;
    std::vector<Tensor*> moved;
    for (auto& t : m.weights) {
        if (t->device != 0 || !t->data) continue;
        const uint8_t* lo = static_cast<const uint8_t*>(t->data);
        const uint8_t* hi = lo + (uint64_t)t->nb[1] * (uint64_t)t->n_rows();
        if (!in_file(lo, hi)) continue;
        spans.push_back({lo, hi});
        moved.push_back(t.get());
    }
    if (spans.empty()) return "";
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    std::vector<Span> merged;
    for (const Span& s : spans) {
        if (!merged.empty() && s.lo < merged.back().hi) merged.back().hi = std::max(merged.back().hi, s.hi);
        else merged.push_back(s);
    }
    uint64_t total = 0;
    for (Span& s : merged) {
        s.offset = total;
        total += ((uint64_t)(s.hi - s.lo) + 63) / 64 * 64;  // keeps the file's 32-byte alignment
    }
    char buf[160];
    const uint64_t avail = m.cpu->capabilities().memory_available;
    if (avail == 0 || total > avail / 4 * 3) {
        std::snprintf(buf, sizeof buf, "; CPU weights stay mapped (%.0f MiB, over 3/4 of available memory)",
                      total / 1048576.0);
        return buf;
    }
    std::unique_ptr<backend::Buffer> copy;
    try {
        copy = m.cpu->alloc(total);  // host buffers this large are advised MADV_HUGEPAGE before use
    } catch (const Error& e) {
        if (e.status != Status::out_of_memory) throw;
        return "; CPU weights stay mapped (no memory for a copy)";
    }
    uint8_t* base = static_cast<uint8_t*>(copy->data());
    uint64_t done = 0;
    constexpr uint64_t kPiece = 16u << 20;
    for (const Span& s : merged) {
        for (const uint8_t* p = s.lo; p < s.hi; p += kPiece) {
            progress((float)((double)done / (double)total));
            const uint64_t n = std::min<uint64_t>(kPiece, (uint64_t)(s.hi - p));
            std::memcpy(base + s.offset + (uint64_t)(p - s.lo), p, n);
            done += n;
        }
    }
    for (Tensor* t : moved) {
        const uint8_t* lo = static_cast<const uint8_t*>(t->data);
        auto it = std::upper_bound(merged.begin(), merged.end(), lo, [](const uint8_t* p, const Span& s) { return p < s.lo; });
        const Span& s = *(it - 1);  // the span starting at or before lo contains it
        t->data = base + s.offset + (uint64_t)(lo - s.lo);
    }
    const int64_t huge = total < (2u << 20) ? 0 : huge_page_bytes({{base, total}});
    m.buffers.push_back(std::move(copy));
    m.cpu_weight_copy = base;
    m.cpu_weight_copy_bytes = total;
    if (huge < 0) std::snprintf(buf, sizeof buf, "; CPU weights copied to memory (%.0f MiB)", total / 1048576.0);
    else
        std::snprintf(buf, sizeof buf, "; CPU weights copied to memory (%.0f MiB), %.0f MiB on huge pages now",
                      total / 1048576.0, huge / 1048576.0);
    return buf;
}

}  // namespace ikllm
