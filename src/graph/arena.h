// Bump allocator for activations of one batch. Blocks are kept across resets, so once a
// session has seen its largest batch the decode path allocates nothing. Blocks grow from
// 256 KiB to 16 MiB: a small model's session then holds (and touches) little memory, a big
// one reaches full-size blocks after a few.
//
// Three pools: one for what lives through the whole batch (inputs, buffers shared by all
// layers), and two that the layers take in turn. A layer's activations are dead once the next
// layer has run (only its output, the residual stream, is read there), so layer i reuses the
// pool of layer i - 2 (GraphBuilder::begin_layer): a prompt batch holds two layers' activations
// instead of all of them (llama-1b, 512 tokens: 0.85 GiB -> ~0.1 GiB).
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
    static constexpr int kBatch = 0;   // lives through the whole batch
    static constexpr int kPools = 3;   // kBatch, then the two layer pools (1, 2)

    // reuse_layers false: every layer keeps its own memory (tests compare the two op lists).
    explicit Arena(bool reuse_layers = true) : reuse_layers_(reuse_layers) {}
    bool reuses_layers() const { return reuse_layers_; }

    // Every pool empty, allocations go to kBatch.
    void reset() {
        for (Pool& p : pools_) p.rewind();
        cur_ = kBatch;
    }
    // Every block freed (after a failed batch: what it grew to is not kept).
    void release() {
        for (Pool& p : pools_) {
            p.blocks.clear();
            p.rewind();
        }
        cur_ = kBatch;
    }
    // Later alloc() calls take memory from `pool`; rewind empties it first (its earlier
    // contents are dead).
    void use_pool(int pool, bool rewind) {
        cur_ = pool;
        if (rewind) pools_[pool].rewind();
    }
    // 64-byte aligned, uninitialised.
    void* alloc(size_t bytes) { return pools_[cur_].alloc(bytes); }
    void* alloc_batch(size_t bytes) { return pools_[kBatch].alloc(bytes); }
    // Every block allocated so far (device mirrors are made per block).
    template <typename F>
    void for_each_block(F&& f) const {
        for (const Pool& p : pools_)
            for (auto& b : p.blocks) f(static_cast<const void*>(b.data.get()), b.size);
    }
    // The blocks of one pool.
    template <typename F>
    void for_each_block_of(int pool, F&& f) const {
        for (auto& b : pools_[pool].blocks) f(static_cast<const void*>(b.data.get()), b.size);
    }
    size_t capacity() const {
        size_t s = 0;
        for_each_block([&](const void*, size_t n) { s += n; });
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
    struct Pool {
        std::vector<Block> blocks;
        size_t block = 0, used = 0;
        void rewind() {
            block = 0;
            used = 0;
        }
        void* alloc(size_t bytes) {
            bytes = (bytes + 63) / 64 * 64;
            while (block < blocks.size()) {
                if (used + bytes <= blocks[block].size) {
                    void* p = blocks[block].data.get() + used;
                    used += bytes;
                    return p;
                }
                ++block;
                used = 0;
            }
            const size_t grown = kFirstBlock << (blocks.size() < kGrowths ? blocks.size() : kGrowths);
            const size_t size = bytes > grown ? bytes : grown;
            Block b;
            b.data.reset(static_cast<uint8_t*>(aligned_alloc64(size)));
            b.size = size;
            advise_huge_pages(b.data.get(), size);
            blocks.push_back(std::move(b));
            block = blocks.size() - 1;
            used = bytes;
            return blocks[block].data.get();
        }
    };
    Pool pools_[kPools];
    int cur_ = kBatch;
    bool reuse_layers_;
};

}  // namespace ikllm
