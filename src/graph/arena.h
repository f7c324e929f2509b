// Bump allocator for activations of one batch. Blocks are kept across resets, so once a
// session has seen its largest batch the decode path allocates nothing. Blocks grow from
// 256 KiB to 16 MiB: a small model's session then holds (and touches) little memory, a big
// one reaches full-size blocks after a few.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "core/aligned_memory.h"

namespace ikllm {

class Arena {
public:
    void reset() {
        block_ = 0;
        used_ = 0;
    }
    // 64-byte aligned, uninitialised.
    void* alloc(size_t bytes) {
        bytes = (bytes + 63) / 64 * 64;
        while (block_ < blocks_.size()) {
            if (used_ + bytes <= blocks_[block_].size) {
                void* p = blocks_[block_].data.get() + used_;
                used_ += bytes;
                return p;
            }
            ++block_;
            used_ = 0;
        }
        const size_t block = kFirstBlock << (blocks_.size() < kGrowths ? blocks_.size() : kGrowths);
        const size_t size = bytes > block ? bytes : block;
        Block b;
        b.data.reset(static_cast<uint8_t*>(aligned_alloc64(size)));
        b.size = size;
        advise_huge_pages(b.data.get(), size);
        blocks_.push_back(std::move(b));
        block_ = blocks_.size() - 1;
        used_ = bytes;
        return blocks_[block_].data.get();
    }
    // Every block allocated so far (device mirrors are made per block).
    template <typename F>
    void for_each_block(F&& f) const {
        for (auto& b : blocks_) f(static_cast<const void*>(b.data.get()), b.size);
    }
    size_t capacity() const {
        size_t s = 0;
        for (auto& b : blocks_) s += b.size;
        return s;
    }

private:
    static constexpr size_t kFirstBlock = 256u << 10;
    static constexpr size_t kGrowths = 6;  // 256 KiB << 6 = 16 MiB
    struct Free { void operator()(uint8_t* p) const { aligned_free64(p); } };
    struct Block {
        std::unique_ptr<uint8_t, Free> data;
        size_t size = 0;
    };
    std::vector<Block> blocks_;
    size_t block_ = 0;
    size_t used_ = 0;
};

}  // namespace ikllm
