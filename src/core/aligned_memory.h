// 64-byte aligned raw memory through the global aligned operator new: a failure is a
// std::bad_alloc like every other allocation in the engine, and a test build that replaces
// operator new (allocation-failure injection) sees these allocations too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ikllm {

inline void* aligned_alloc64(size_t bytes) {
    return ::operator new((bytes + 63) / 64 * 64, std::align_val_t{64});
}
inline void aligned_free64(void* p) noexcept {
    if (p) ::operator delete(p, std::align_val_t{64});
}

// Asks for transparent huge pages on the 2 MiB pages inside [p, p + bytes) (a hint; ignored
// where the kernel has THP off). For big activation buffers written with large strides (e.g. a
// per-head product's output rows tens of KiB apart), 4 KiB pages cost a TLB miss per row.
inline void advise_huge_pages(void* p, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHuge = 2u << 20;
    const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
    if (e > a) (void)::madvise(reinterpret_cast<void*>(a), e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

}  // namespace ikllm
