// The activation arena: aligned bump allocation, block sizes growing from 256 KiB to 16 MiB
// (small models' sessions stay small), and no new block once a batch has been seen.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "graph/arena.h"

using ikllm::Arena;

namespace {

std::vector<size_t> block_sizes(const Arena& a) {
    std::vector<size_t> sizes;
    a.for_each_block([&](const void*, size_t bytes) { sizes.push_back(bytes); });
    return sizes;
}

// The allocations of one "batch": each as large as the block it should open.
std::vector<void*> run_batch(Arena& a, const std::vector<size_t>& sizes) {
    std::vector<void*> ps;
    for (size_t s : sizes) {
        void* p = a.alloc(s);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
        std::memset(p, 0xA5, s);  // writable over its whole size (ASan checks the bounds)
        ps.push_back(p);
    }
    return ps;
}

}  // namespace

TEST(GraphArena, SmallAllocationsShareTheFirstBlock) {
    Arena a;
    char* p = static_cast<char*>(a.alloc(1));
    char* q = static_cast<char*>(a.alloc(100));
    EXPECT_EQ(q - p, 64);  // rounded up to 64 bytes
    EXPECT_EQ(block_sizes(a), std::vector<size_t>{256u << 10});
}

TEST(GraphArena, BlocksDoubleUpTo16MiB) {
    Arena a;
    const size_t k = 256u << 10;
    std::vector<size_t> want;
    for (int i = 0; i < 9; ++i) want.push_back(k << (i < 6 ? i : 6));
    run_batch(a, want);
    EXPECT_EQ(block_sizes(a), want);
    EXPECT_EQ(a.capacity(), (k * 63) + 3 * (16u << 20));  // 256 KiB .. 8 MiB, then three of 16 MiB
}

// A bump allocator only moves forward: what follows a big allocation opens the next block size.
TEST(GraphArena, AnAllocationLargerThanTheNextBlockGetsItsOwn) {
    Arena a;
    run_batch(a, {1000, (40u << 20) + 3, 1000});
    EXPECT_EQ(block_sizes(a), (std::vector<size_t>{256u << 10, (40u << 20) + 64, 1u << 20}));
}

TEST(GraphArena, ResetReusesTheBlocks) {
    Arena a;
    const std::vector<size_t> batch = {1000, 300u << 10, 5u << 20, 100, 20u << 20, 4096};
    const std::vector<void*> first = run_batch(a, batch);
    const std::vector<size_t> sizes = block_sizes(a);
    a.reset();
    EXPECT_EQ(run_batch(a, batch), first);  // the same addresses: nothing new allocated
    EXPECT_EQ(block_sizes(a), sizes);
    a.reset();
    run_batch(a, {64, 64});
    EXPECT_EQ(block_sizes(a), sizes);
}
