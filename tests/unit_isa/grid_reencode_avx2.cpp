// grid_int.h compiled for AVX2 (as grid_avx2.cpp): its vector re-encoding of a block for prompt
// batches (grid_reencode_avx2) against the scalar one (grid_decode_conv). See grid_decode512_test.cpp.
#if !defined(__AVX2__) || defined(__AVX512F__)
#error "compile with the AVX2 kernel flags"
#endif
#include <cstdlib>
#include <cstring>

#include "kernels/grid_int.h"

namespace ikllm::cpu {

namespace {
template <uint32_t Type>
bool same_reencoding(const uint8_t* src) {
    GridCodes ref;
    grid_decode_conv<Type>(src, ref);
    int8_t q[256];
    uint8_t aq[256];
    const float scale = grid_reencode_avx2<Type>(src, q, aq);
    bool ok = std::memcmp(q, ref.q, sizeof q) == 0 && std::memcmp(&scale, &ref.sc[0], sizeof scale) == 0;
    for (int j = 0; j < 256; ++j) ok = ok && aq[j] == (uint8_t)std::abs(q[j]);
    return ok;
}
}  // namespace

bool grid_reencode_avx2_matches(uint32_t type, const uint8_t* src) {
    switch (type) {
        case quant::T_IQ2_XXS: return same_reencoding<quant::T_IQ2_XXS>(src);
        case quant::T_IQ2_XS: return same_reencoding<quant::T_IQ2_XS>(src);
        case quant::T_IQ2_S: return same_reencoding<quant::T_IQ2_S>(src);
        case quant::T_IQ3_XXS: return same_reencoding<quant::T_IQ3_XXS>(src);
        case quant::T_IQ3_S: return same_reencoding<quant::T_IQ3_S>(src);
        case quant::T_IQ1_S: return same_reencoding<quant::T_IQ1_S>(src);
        case quant::T_IQ1_M: return same_reencoding<quant::T_IQ1_M>(src);
        default: return false;
    }
}

}  // namespace ikllm::cpu
