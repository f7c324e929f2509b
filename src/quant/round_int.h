// Round to the nearest integer, ties to even (std::nearbyint in the default rounding mode),
// without a libm call: at the baseline x86-64 ISA (no SSE4.1 roundss) std::nearbyint and
// std::fmin / std::fmax are calls, which made them a large share of the encoders' inner loops.
// |v| is clamped to 4e6 first (below 2^22, where adding 1.5 * 2^23 rounds exactly); NaN -> -4e6.
#pragma once

namespace ikllm::quant {

inline int round_int(float v) {
    v = v > -4.0e6f ? v : -4.0e6f;
    v = v < 4.0e6f ? v : 4.0e6f;
    return (int)(v + 12582912.0f) - 12582912;
}

}  // namespace ikllm::quant
