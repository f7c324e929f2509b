// Host address range of a KV cache layer whose rows live on a GPU. The scheduler keys device
// mirrors by host address, so such a layer keeps one; but its pages are only committed while
// host code works on the rows (state save/load, shifts, copy-on-write), and are given back
// once the device holds the current bytes again. The layer's cache thus costs no host RAM
// between those accesses. Fresh (and dropped) pages read as zeros, like the device copy.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend.h"

namespace ikllm {

class KvHostShadow final : public backend::Buffer {
public:
    explicit KvHostShadow(size_t bytes);  // throws Error(out_of_memory) when the range cannot be reserved
    ~KvHostShadow() override;
    void* data() override { return data_; }
    size_t size() const override { return size_; }
    // Returns the pages to the system; the range reads as zeros afterwards.
    void drop() noexcept;
    // Bytes of the range backed by physical memory now (diagnostics and tests).
    uint64_t resident_bytes() const;

private:
    void* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_ = 0;  // 0: no lazy mapping on this system (plain zeroed memory)
};

}  // namespace ikllm
