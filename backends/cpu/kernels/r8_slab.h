// Prompt batches of ikllm's run-time 8-row layouts (quant/kquant_r8.h) that have no panel fill of
// their own: slabs of rows unpacked to the plain blocks, then the plain type's kernel, so the
// results are the plain type's, bit for bit. The unpacking is a transpose of 4-byte granules plus
// the scales: small against a batch's products over the same rows.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>

#include "kernels/matmul.h"

namespace ikllm::cpu {

using R8UnpackGroupFn = void (*)(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0);

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

}  // namespace ikllm::cpu
