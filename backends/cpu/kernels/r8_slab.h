// Drivers shared by the kernels of ikllm's run-time 8-row layouts (quant/kquant_r8.h): the token
// tiles of small batches, and for prompt batches without a panel fill of their own, slabs of rows
// unpacked to the plain blocks and run through the plain type's kernel (its results, bit for bit).
// In an anonymous namespace: each kernel file compiles its own copy with its own ISA flags.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/matmul.h"
#include "quant/kquant_r8.h"

namespace ikllm::cpu {
namespace {

using quant::R8UnpackGroupFn;

constexpr int kR8Tokens = 4;  // tokens sharing one decoded group block

// A call's per-token factors: on the stack up to N elements (token generation: no allocation on
// the hot path), else on the heap (batches).
template <class T, size_t N>
struct R8Scratch {
    alignas(64) T stack[N];
    std::vector<T> heap;
    T* p;
    explicit R8Scratch(size_t n) : p(stack) {
        if (n > N) {
            heap.resize(n);
            p = heap.data();
        }
    }
};

// Rows outer (8-row groups), tiles of up to kR8Tokens tokens inner, so a group's blocks stay in
// cache for the next tile: tile(std::integral_constant<int, T>, first_row, first_token).
template <class TileFn>
inline void r8_token_tiles(int64_t r0, int64_t r1, int64_t nt, TileFn&& tile) {
    for (int64_t r = r0; r < r1; r += 8)
        for (int64_t t0 = 0; t0 < nt; t0 += kR8Tokens) {
            switch (std::min<int64_t>(kR8Tokens, nt - t0)) {
                case 1: tile(std::integral_constant<int, 1>{}, r, t0); break;
                case 2: tile(std::integral_constant<int, 2>{}, r, t0); break;
                case 3: tile(std::integral_constant<int, 3>{}, r, t0); break;
                default: tile(std::integral_constant<int, 4>{}, r, t0); break;
            }
        }
}

inline void r8_plain_slabs(R8UnpackGroupFn unpack, MatmulFn plain, const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0,
                           int64_t r1, const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    constexpr int64_t kSlab = 256;  // rows per slab: whole 16-row panels, at most a few MiB
    // (not value-initialised: every byte is written by the unpacking before it is read)
    const std::unique_ptr<uint8_t[]> buf(new uint8_t[(size_t)std::min(kSlab, r1 - r0) * wrb]);
    uint8_t* plain_rows = buf.get();
    for (int64_t r = r0; r < r1; r += kSlab) {
        const int64_t n = std::min(kSlab, r1 - r);
        for (int64_t k = 0; k < n; k += 8) unpack(w + (size_t)(r + k) * wrb, plain_rows + (size_t)k * wrb, wrb, ne0);
        plain(plain_rows, wrb, ne0, 0, n, act, arb, nt, y + r, ys);
    }
}

// The scalar reference of a layout: its rows unpacked, then the plain type's scalar kernel (no code
// shared with the interleaved kernels it checks).
template <R8UnpackGroupFn Unpack, MatmulFn Plain>
void r8_unpacked_matmul(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                        int64_t nt, float* y, int64_t ys) {
    r8_plain_slabs(Unpack, Plain, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

}  // namespace
}  // namespace ikllm::cpu
