// 64-byte aligned raw memory through the global aligned operator new: a failure is a
// std::bad_alloc like every other allocation in the engine, and a test build that replaces
// operator new (allocation-failure injection) sees these allocations too.
#pragma once
#include <cstddef>
#include <new>

namespace ikllm {

inline void* aligned_alloc64(size_t bytes) {
    return ::operator new((bytes + 63) / 64 * 64, std::align_val_t{64});
}
inline void aligned_free64(void* p) noexcept {
    if (p) ::operator delete(p, std::align_val_t{64});
}

}  // namespace ikllm
