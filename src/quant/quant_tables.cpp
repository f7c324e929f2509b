// Float views of the bit-pattern tables in quant_tables.h.
#include "quant/quant_tables.h"
#include <bit>

namespace ikllm::quant::tables {

namespace {
struct Iq6kLevels {
    float v[64];
    constexpr Iq6kLevels() : v{} {
        for (int i = 0; i < 64; ++i) v[i] = std::bit_cast<float>(kIq6kF32Bits[i]);
    }
};
constexpr Iq6kLevels kIq6kLevels{};
}  // namespace

const float* iq6k_levels() { return kIq6kLevels.v; }
float iq6k_level(int q) { return kIq6kLevels.v[q & 63]; }

}  // namespace ikllm::quant::tables
