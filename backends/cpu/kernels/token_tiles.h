// Tokens of a call in register tiles of up to 4, the tile size a compile-time constant.
// Anonymous namespace like the other kernel headers: each ISA file compiles its own copy.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace ikllm::cpu {
namespace {

// f(t, std::integral_constant<int, T>{}) for t = 0, 4, 8, ... with T = min(4, nt - t).
template <class F>
inline void for_token_tiles4(int64_t nt, F&& f) {
    for (int64_t t = 0; t < nt; t += 4) {
        switch (std::min<int64_t>(4, nt - t)) {
            case 1: f(t, std::integral_constant<int, 1>{}); break;
            case 2: f(t, std::integral_constant<int, 2>{}); break;
            case 3: f(t, std::integral_constant<int, 3>{}); break;
            default: f(t, std::integral_constant<int, 4>{}); break;
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
