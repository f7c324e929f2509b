// Grid i-quant decoders against their scalar twins, byte for byte.
// The AVX-512 VBMI decoder of the grid i-quants (grid_vec512.h; IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S by register table lookups, IQ1_S / IQ1_M by pdep indices) must give the scalar decoder's
// GridRaw byte for byte: the same grid magnitudes, negation masks and float scales, so the
// kernels built on it keep their results. Random block bytes reach every grid index, sign
// pattern and scale; the fp16 block scale is random too (normal, subnormal, zero).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
bool grid_decode_block_vec512(uint32_t type, const uint8_t* src, uint8_t* out, size_t* n);
bool grid_decode_block_ref(uint32_t type, const uint8_t* src, uint8_t* out, size_t* n);
bool grid_decode_block_avx2(uint32_t type, const uint8_t* src, uint8_t* out, size_t* n);
bool grid_decode_r4_vec512(uint32_t type, const uint8_t* src, int k, uint8_t* out, size_t* n);
bool grid_decode_r4_ref(uint32_t type, const uint8_t* src, int k, uint8_t* out, size_t* n);
bool grid_decode_r4_avx2(uint32_t type, const uint8_t* src, int k, uint8_t* out, size_t* n);
bool grid_reencode_avx2_matches(uint32_t type, const uint8_t* src);
bool grid_decode_row_vec512(uint32_t type, const uint8_t* src, int nb, uint8_t* out, size_t* n);
bool grid_decode_row_ref(uint32_t type, const uint8_t* src, int nb, uint8_t* out, size_t* n);
}  // namespace ikllm::cpu

namespace {
using namespace ikllm;

const uint32_t kGridTypes[] = {quant::T_IQ2_XXS, quant::T_IQ2_XS, quant::T_IQ2_S, quant::T_IQ3_XXS,
                               quant::T_IQ3_S,   quant::T_IQ1_S,  quant::T_IQ1_M};

// A random block; the fp16 scale (IQ1_M: in the scale words' top nibbles, random anyway) normal,
// near 1 or subnormal.
void random_block(uint32_t type, int it, std::mt19937& rng, uint8_t* blk, size_t n) {
    for (size_t i = 0; i < n; ++i) blk[i] = (uint8_t)rng();
    const uint16_t h = (uint16_t)(it % 3 == 0 ? rng() & 0x7BFF : it % 3 == 1 ? 0x3C00 + (rng() & 0x3FF) : rng() & 0x3FF);
    if (type != quant::T_IQ1_M) std::memcpy(blk, &h, 2);
}

// Decoders `fn` and the scalar reference agree byte for byte on random blocks of every grid type.
using DecodeFn = bool (*)(uint32_t, const uint8_t*, uint8_t*, size_t*);
void expect_same_bytes(DecodeFn fn, uint32_t seed) {
    std::mt19937 rng(seed);
    for (uint32_t type : kGridTypes) {
        const quant::TypeTraits* t = quant::find_type(type);
        ASSERT_NE(t, nullptr);
        int mismatches = 0;
        for (int it = 0; it < 20000; ++it) {
            alignas(64) uint8_t blk[128];
            random_block(type, it, rng, blk, sizeof blk);
            uint8_t a[512], b[512];
            size_t na = 0, nb = 0;
            ASSERT_TRUE(fn(type, blk, a, &na));
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

TEST(GridDecode512, VectorDecoderMatchesScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512 VBMI (the vector decoder's ISA)";
    expect_same_bytes(cpu::grid_decode_block_vec512, 2026);
}

// A row of nb blocks through the vector pass (grid_raw_row: blocks in pairs) and the scalar one:
// the same bytes?
bool row_decoders_agree(uint32_t type, const std::vector<uint8_t>& row, int nb) {
    std::vector<uint8_t> a(512 * (size_t)nb), b(512 * (size_t)nb);
    size_t na = 0, nr = 0;
    const bool ok = cpu::grid_decode_row_vec512(type, row.data(), nb, a.data(), &na) &&
                    cpu::grid_decode_row_ref(type, row.data(), nb, b.data(), &nr);
    return ok && na == nr && std::memcmp(a.data(), b.data(), na * (size_t)nb) == 0;
}

// IQ1_S / IQ1_M rows on AVX-512 VBMI decode their blocks in pairs from register tables built on a
// property of the grid (sorted, its high base-3 half stepping by at most 1 within aligned runs of
// 16 entries: grid_vec512.h). Every one of the 2048 indices at every position of a pair, rows of
// 1-5 blocks (an odd last block alone), byte for byte against the scalar pass.
TEST(GridDecode512, Iq1RowsInPairsMatchScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512 VBMI (the vector decoder's ISA)";
    std::mt19937 rng(2030);
    for (uint32_t type : {quant::T_IQ1_S, quant::T_IQ1_M}) {
        const size_t bs = type == quant::T_IQ1_S ? 50 : 56;
        int mismatches = 0;
        for (int it = 0; it < 400; ++it) {
            const int nb = 1 + it % 5;
            std::vector<uint8_t> row(bs * (size_t)nb);
            for (int b = 0; b < nb; ++b) random_block(type, it, rng, row.data() + bs * (size_t)b, bs);
            // indices 0..2047 in turn through every slot (IQ1_S: qs at 2, 3 high bits a slot in h;
            // IQ1_M: qs at 0, 3 of 4 bits a slot in qh): 64 slots x 400 rows cover each many times
            for (int b = 0; b < nb; ++b)
                for (int k = 0; k < 32; ++k) {
                    const int idx = (it * 37 + b * 32 + k * 64 + k) & 2047;
                    uint8_t* blk = row.data() + bs * (size_t)b;
                    if (type == quant::T_IQ1_S) {
                        blk[2 + k] = (uint8_t)idx;
                        uint16_t h;
                        std::memcpy(&h, blk + 34 + 2 * (k / 4), 2);
                        h = (uint16_t)((h & ~(7u << (3 * (k % 4)))) | (uint32_t)(idx >> 8) << (3 * (k % 4)));
                        std::memcpy(blk + 34 + 2 * (k / 4), &h, 2);
                    } else {
                        blk[k] = (uint8_t)idx;
                        uint8_t& q = blk[32 + k / 2];
                        q = (uint8_t)((q & ~(7u << (4 * (k % 2)))) | (uint32_t)(idx >> 8) << (4 * (k % 2)));
                    }
                }
            if (!row_decoders_agree(type, row, nb) && mismatches++ < 3)
                ADD_FAILURE() << quant::find_type(type)->name << ": row " << it << " (" << nb << " blocks) differs";
        }
        EXPECT_EQ(mismatches, 0);
    }
}

// IQ2_XXS / IQ2_XS / IQ2_S rows likewise decode their blocks in pairs (64 indices through each
// byte plane's banks at once): random rows of 1-5 blocks, byte for byte against the scalar pass.
TEST(GridDecode512, Iq2RowsInPairsMatchScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512 VBMI (the vector decoder's ISA)";
    std::mt19937 rng(2031);
    for (uint32_t type : {quant::T_IQ2_XXS, quant::T_IQ2_XS, quant::T_IQ2_S}) {
        const quant::TypeTraits* t = quant::find_type(type);
        ASSERT_NE(t, nullptr);
        const size_t bs = t->block_bytes;
        int mismatches = 0;
        for (int it = 0; it < 2000; ++it) {
            const int nb = 1 + it % 5;
            std::vector<uint8_t> row(bs * (size_t)nb);
            for (int b = 0; b < nb; ++b) random_block(type, it, rng, row.data() + bs * (size_t)b, bs);
            if (!row_decoders_agree(type, row, nb) && mismatches++ < 3)
                ADD_FAILURE() << quant::find_type(type)->name << ": row " << it << " (" << nb << " blocks) differs";
        }
        EXPECT_EQ(mismatches, 0) << t->name;
    }
}

// The AVX2 build's pass 1 (sign masks of IQ2_XXS / IQ2_XS / IQ3_XXS computed in vectors, IQ1_S /
// IQ1_M indices by pdep) likewise.
TEST(GridDecodeAvx2, DecoderMatchesScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx2 && cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX2";
    expect_same_bytes(cpu::grid_decode_block_avx2, 2027);
}

// The reference's 4-row forms: pass 1 of each row of a group block (AVX-512: permutes of the
// group's bytes into the plain types' vector lookups) against the scalar pass, byte for byte.
using DecodeR4Fn = bool (*)(uint32_t, const uint8_t*, int, uint8_t*, size_t*);
void expect_same_r4_bytes(DecodeR4Fn fn, uint32_t seed) {
    std::mt19937 rng(seed);
    const uint32_t types[] = {quant::T_IQ2_XXS_R4, quant::T_IQ2_XS_R4, quant::T_IQ2_S_R4, quant::T_IQ3_XXS_R4, quant::T_IQ3_S_R4};
    for (uint32_t type : types) {
        const quant::TypeTraits* t = quant::find_type(type);
        ASSERT_NE(t, nullptr);
        int mismatches = 0;
        for (int it = 0; it < 5000; ++it) {
            alignas(64) uint8_t blk[512];
            for (uint8_t& b : blk) b = (uint8_t)rng();
            for (int k = 0; k < 4; ++k) {  // row scales: normal, near 1 or subnormal
                const uint16_t h = (uint16_t)(it % 3 == 0 ? rng() & 0x7BFF : it % 3 == 1 ? 0x3C00 + (rng() & 0x3FF) : rng() & 0x3FF);
                std::memcpy(blk + 2 * k, &h, 2);
            }
            for (int k = 0; k < 4; ++k) {
                uint8_t a[512], b[512];
                size_t na = 0, nb = 0;
                ASSERT_TRUE(fn(type, blk, k, a, &na));
                ASSERT_TRUE(cpu::grid_decode_r4_ref(type, blk, k, b, &nb));
                ASSERT_EQ(na, nb);
                if (std::memcmp(a, b, na) != 0 && mismatches++ < 3) {
                    size_t i = 0;
                    while (a[i] == b[i]) ++i;
                    ADD_FAILURE() << t->name << ": block " << it << " row " << k << " differs at byte " << i << " of the decoded form";
                }
            }
        }
        EXPECT_EQ(mismatches, 0) << t->name;
    }
}

TEST(GridDecode512, R4VectorDecoderMatchesScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX-512 VBMI (the vector decoder's ISA)";
    expect_same_r4_bytes(cpu::grid_decode_r4_vec512, 2028);
}

TEST(GridDecodeAvx2, R4DecoderMatchesScalarBytes) {
    if (cpu::detected_isa() != cpu::Isa::avx2 && cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX2";
    expect_same_r4_bytes(cpu::grid_decode_r4_avx2, 2029);
}

// Prompt batches on AVX2: the vector re-encoding (8-bit codes, one scale per block) must give the
// scalar one's codes and scale exactly.
TEST(GridDecodeAvx2, ReencodingMatchesScalar) {
    if (cpu::detected_isa() != cpu::Isa::avx2 && cpu::detected_isa() != cpu::Isa::avx512) GTEST_SKIP() << "this CPU has no AVX2";
    std::mt19937 rng(77);
    for (uint32_t type : kGridTypes) {
        int mismatches = 0;
        for (int it = 0; it < 20000; ++it) {
            alignas(64) uint8_t blk[128];
            random_block(type, it, rng, blk, sizeof blk);
            if (!cpu::grid_reencode_avx2_matches(type, blk) && mismatches++ < 3)
                ADD_FAILURE() << quant::find_type(type)->name << ": block " << it << " re-encoded differently";
        }
        EXPECT_EQ(mismatches, 0) << quant::find_type(type)->name;
    }
}

}  // namespace
