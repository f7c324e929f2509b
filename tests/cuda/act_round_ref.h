// Host reference of the activation rounding (act_round.cuh) for the emulation tests: rows [T][K]
// of x rounded to the 8-bit format of `mode` -- int8 codes, one scale per 32 values (equal
// within a block of 256 for q8_256) and the rounded values code * scale.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/act_round.cuh"

namespace ikllm::cuda::test {

struct RoundedRows {
    std::vector<int8_t> q;   // [T][K]
    std::vector<float> d32;  // [T][K / 32]
    std::vector<float> x;    // [T][K]: q * d
};

inline RoundedRows round_rows(int mode, const std::vector<float>& x, int64_t T, int64_t K) {
    const int64_t B = act_round_block(mode);
    RoundedRows r;
    r.q.assign((size_t)(T * K), 0);
    r.d32.assign((size_t)(T * K / 32), 0.f);
    r.x.assign((size_t)(T * K), 0.f);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t b0 = 0; b0 < K; b0 += B) {
            float amax = 0.f;
            for (int64_t i = b0; i < b0 + B && i < K; ++i) amax = std::max(amax, std::fabs(x[t * K + i]));
            float d, id;
            act_scale(mode, amax, &d, &id);
            for (int64_t i = b0; i < b0 + B && i < K; ++i) {
                const float c = act_code(x[t * K + i], id);
                r.q[t * K + i] = (int8_t)(int)c;
                r.x[t * K + i] = c * d;
            }
            for (int64_t i = b0; i < b0 + B && i < K; i += 32) r.d32[(t * K + i) / 32] = d;
        }
    return r;
}

}  // namespace ikllm::cuda::test
