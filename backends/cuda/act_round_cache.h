// The rounded activations of the last quantized product, kept for the next product that reads
// the same rows with the same rounding: q, k and v of a layer (and a shared expert beside its
// router) multiply one normalised input, which was rounded once per product before. Host-only
// bookkeeping (no CUDA): the executor decides which ops keep a copy valid and the copy's memory
// stays reserved in its scratch while valid (matmul.cu with_rounded_activations).
#pragma once
#include <cstdint>

namespace ikllm::cuda {

// What a rounded copy was made from and for: plain rows (one activation block, no row list).
struct ActRoundKey {
    const void* x = nullptr;
    uint64_t x_t = 0;  // row stride, bytes
    int64_t T = 0, K = 0;
    int mode = 0;        // act_round mode (act_round.cuh)
    bool f16 = false;    // rounded to f16 first
    bool codes = false;  // int8 codes and scales written too
    bool operator==(const ActRoundKey& o) const {  // (CUDA sources are C++17: no defaulted ==)
        return x == o.x && x_t == o.x_t && T == o.T && K == o.K && mode == o.mode && f16 == o.f16 && codes == o.codes;
    }
    // [lo, hi): the bytes of x the copy was made from.
    uintptr_t lo() const { return reinterpret_cast<uintptr_t>(x); }
    uintptr_t hi() const { return lo() + (uint64_t)(T - 1) * x_t + 4 * (uint64_t)K; }
};

struct ActRoundCopy {
    float* x = nullptr;
    int8_t* q = nullptr;
    float* d = nullptr;
};

class ActRoundCache {
public:
    const ActRoundCopy* find(const ActRoundKey& k) const { return valid_ && k == key_ ? &copy_ : nullptr; }
    void store(const ActRoundKey& k, const ActRoundCopy& c) {
        key_ = k;
        copy_ = c;
        valid_ = true;
    }
    bool valid() const { return valid_; }
    void clear() { valid_ = false; }
    // An op wrote [lo, hi): a copy of rows it overlapped is stale.
    void written(uintptr_t lo, uintptr_t hi) {
        if (valid_ && lo < key_.hi() && key_.lo() < hi) valid_ = false;
    }

private:
    ActRoundKey key_;
    ActRoundCopy copy_;
    bool valid_ = false;
};

}  // namespace ikllm::cuda
