// The AVX-512 VBMI decoder of the grid i-quants (grid_vec512.h; IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S by register table lookups, IQ1_S / IQ1_M by pdep indices) must give the scalar decoder's
// GridRaw byte for byte: the same grid magnitudes, negation masks and float scales, so the
// kernels built on it keep their results. Random block bytes reach every grid index, sign
// pattern and scale; the fp16 block scale is random too (normal, subnormal, zero).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

#include "kernels/matmul.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
bool grid_decode_block_vec512(uint32_t type, const uint8_t* src, uint8_t* out, size_t* n);
bool grid_decode_block_ref(uint32_t type, const uint8_t* src, uint8_t* out, size_t* n);
}  // namespace ikllm::cpu

namespace {
using namespace ikllm;

TEST(GridDecode512, VectorDecoderMatchesScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512 VBMI (the vector decoder's ISA)";
    const uint32_t types[] = {quant::T_IQ2_XXS, quant::T_IQ2_XS, quant::T_IQ2_S, quant::T_IQ3_XXS,
                              quant::T_IQ3_S,   quant::T_IQ1_S,  quant::T_IQ1_M};
    std::mt19937 rng(2026);
    for (uint32_t type : types) {
        const quant::TypeTraits* t = quant::find_type(type);
        ASSERT_NE(t, nullptr);
        int mismatches = 0;
        for (int it = 0; it < 20000; ++it) {
            alignas(64) uint8_t blk[128];
            for (auto& b : blk) b = (uint8_t)rng();
            // fp16 scale: random finite value (IQ1_M keeps it in the scale words' top nibbles: random anyway)
            const uint16_t h = (uint16_t)(it % 3 == 0 ? rng() & 0x7BFF : it % 3 == 1 ? 0x3C00 + (rng() & 0x3FF) : rng() & 0x3FF);
            if (type != quant::T_IQ1_M) std::memcpy(blk, &h, 2);
            uint8_t a[512], b[512];
            size_t na = 0, nb = 0;
            ASSERT_TRUE(cpu::grid_decode_block_vec512(type, blk, a, &na));
            ASSERT_TRUE(cpu::grid_decode_block_ref(type, blk, b, &nb));
            ASSERT_EQ(na, nb);
            if (std::memcmp(a, b, na) != 0 && mismatches++ < 3) {
                size_t i = 0;
                while (a[i] == b[i]) ++i;
                ADD_FAILURE() << t->name << ": block " << it << " differs at byte " << i << " of the decoded form";
            }
        }
        EXPECT_EQ(mismatches, 0) << t->name;
    }
}

}  // namespace
