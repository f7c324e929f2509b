#include "session/kv_host_shadow.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/aligned_memory.h"
#include "core/error.h"
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace ikllm {

KvHostShadow::KvHostShadow(size_t bytes) : size_(bytes) {
    if (!bytes) return;
#if defined(__linux__)
    // Anonymous private pages: zero-filled on first touch, nothing committed before. No huge
    // pages: one touched row would commit 2 MiB.
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw Error(Status::out_of_memory, "cannot reserve " + std::to_string(bytes) + " bytes of address space for a KV cache layer");
    data_ = p;
    mapped_ = bytes;
#else
    try {
        data_ = aligned_alloc64(bytes);
    } catch (const std::bad_alloc&) {
        throw Error(Status::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes");
    }
    std::memset(data_, 0, bytes);
#endif
}

KvHostShadow::~KvHostShadow() {
#if defined(__linux__)
    if (mapped_) {
        ::munmap(data_, mapped_);
        return;
    }
#endif
    aligned_free64(data_);
}

void KvHostShadow::drop() noexcept {
#if defined(__linux__)
    // MADV_DONTNEED on private anonymous memory frees the pages; the next touch sees zeros.
    if (mapped_) (void)::madvise(data_, mapped_, MADV_DONTNEED);
#endif
}

uint64_t KvHostShadow::resident_bytes() const {
#if defined(__linux__)
    if (!mapped_) return size_;
    const size_t page = (size_t)::sysconf(_SC_PAGESIZE);
    const size_t n = (mapped_ + page - 1) / page;
    std::vector<unsigned char> in(n);
    if (::mincore(data_, mapped_, in.data()) != 0) return size_;
    uint64_t r = 0;
    for (unsigned char c : in) r += c & 1u;
    return r * page;
#else
    return size_;
#endif
}

}  // namespace ikllm
