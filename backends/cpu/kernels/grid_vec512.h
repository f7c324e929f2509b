// Pass 1 of the grid i-quants (grid_int.h) in AVX-512 VBMI vectors, for IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS and IQ3_S (and IQ1_S / IQ1_M two blocks at a time: 16 banks): the same GridRaw (grid magnitudes, negation masks, 16 scales) as the scalar
// pass, bit for bit. The scalar pass spent most of a token's product time on 32-64 table loads
// per block; gathers are no faster (8 ns per 8 entries on AMD Zen 4). Here the grid entries come
// from register-resident byte tables instead:
//  - every grid entry is stored packed, a small code per weight (IQ2: 2 bits for {8, 25, 43};
//    IQ3_XXS: 3 bits for {4, 12, ..., 52, 62}; IQ3_S: 3 bits for 1, 3, ..., 15), 16 bits an entry,
//    split into a low-byte and a high-byte table;
//  - 64 indices at once look up both byte tables with vpermi2b (128 entries an instruction), the
//    index bits above 7 choosing among the results by mask;
//  - each output qword gets its entry's packed bits (vpermb), vpmultishiftqb cuts one code per
//    byte, and vpermb maps the codes to the magnitudes.
// Signs and scales are vector arithmetic on the block's bytes (same float operations as the
// scalar pass).
#pragma once
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VBMI__) && defined(__AVX512DQ__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/grid_tables.h"
#include "quant/type_traits.h"

#define IKLLM_GRID_VEC512 1

namespace ikllm::cpu {
namespace {

// Packed grid entries of one type: byte planes lo / hi of the 16-bit codes of entry i.
struct GridPackedTables {
    alignas(64) uint8_t iq2xxs[2][256];
    alignas(64) uint8_t iq2xs[2][512];
    alignas(64) uint8_t iq2s[2][1024];
    alignas(64) uint8_t iq3xxs[2][256];
    alignas(64) uint8_t iq3s[2][512];
    // IQ1_S / IQ1_M. The grid is sorted by V = sum (g_k + 1) 3^k, so its high base-3 half
    // hi = V div 81 grows with the index, by at most 1 within each aligned run of 16 entries
    // (grid_iq1_tables_hold checks it): entry i is iq1_low[i] = (V mod 81) | (hi(i) - hi(i & ~15)) << 7
    // and iq1_hbase[i >> 4] = hi(i & ~15) -- one byte plane of 2048 entries and one of 128, where
    // the 2-bit codes took two of 2048. iq1_pack[u]: u's four base-3 digits, 2 bits each.
    alignas(64) uint8_t iq1_low[2048];
    alignas(64) uint8_t iq1_hbase[128];
    alignas(64) uint8_t iq1_pack[128];
    bool iq1_ok;  // the runs hold (else the IQ1 kernels keep the scalar lookups)
};

inline uint64_t grid_rd_u64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// Position of byte v in vals (the grid's magnitudes); the grids hold nothing else.
inline int grid_code_of(uint8_t v, const uint8_t* vals, int n) {
    for (int i = 0; i < n; ++i)
        if (vals[i] == v) return i;
    return 0;
}

template <class Entry>
void grid_pack_into(const Entry* grid, int entries, const uint8_t* vals, int nvals, int bits, uint8_t* lo, uint8_t* hi) {
    for (int e = 0; e < entries; ++e) {
        uint32_t p = 0;
        for (int j = 0; j < (int)sizeof(Entry); ++j)
            p |= (uint32_t)grid_code_of((uint8_t)(grid[e] >> (8 * j)), vals, nvals) << (bits * j);
        lo[e] = (uint8_t)p;
        hi[e] = (uint8_t)(p >> 8);
    }
}

// Built on first use, constant afterwards (a function-local static: thread-safe initialization).
inline const GridPackedTables& grid_packed_tables() {
    static const GridPackedTables t = [] {
        GridPackedTables r{};
        static const uint8_t v2[3] = {8, 25, 43};
        static const uint8_t v3xxs[8] = {4, 12, 20, 28, 36, 44, 52, 62};
        static const uint8_t v3s[8] = {1, 3, 5, 7, 9, 11, 13, 15};
        grid_pack_into(quant::kIq2xxsGrid, 256, v2, 3, 2, r.iq2xxs[0], r.iq2xxs[1]);
        grid_pack_into(quant::kIq2xsGrid, 512, v2, 3, 2, r.iq2xs[0], r.iq2xs[1]);
        grid_pack_into(quant::kIq2sGrid, 1024, v2, 3, 2, r.iq2s[0], r.iq2s[1]);
        grid_pack_into(quant::kIq3xxsGrid, 256, v3xxs, 8, 3, r.iq3xxs[0], r.iq3xxs[1]);
        grid_pack_into(quant::kIq3sGrid, 512, v3s, 8, 3, r.iq3s[0], r.iq3s[1]);
        r.iq1_ok = true;
        auto half = [](uint64_t e, int k0) {  // base-3 value of g + 1 over bytes k0 .. k0 + 3
            int v = 0;
            for (int k = k0 + 3; k >= k0; --k) v = 3 * v + ((int)(int8_t)(uint8_t)(e >> (8 * k)) + 1);
            return v;
        };
        for (int i = 0; i < 2048; ++i) {
            const int hi = half(quant::kIq1sGrid[i], 4), base = half(quant::kIq1sGrid[i & ~15], 4);
            if (i % 16 == 0) r.iq1_hbase[i / 16] = (uint8_t)hi;
            if (hi - base != 0 && hi - base != 1) r.iq1_ok = false;
            r.iq1_low[i] = (uint8_t)(half(quant::kIq1sGrid[i], 0) | (hi - base) << 7);
        }
        for (int u = 0; u < 81; ++u)
            r.iq1_pack[u] = (uint8_t)(u % 3 | (u / 3 % 3) << 2 | (u / 9 % 3) << 4 | (u / 27) << 6);
        return r;
    }();
    return t;
}

// table[i] for 64 byte indices: bits 0-6 from idx, bit 7 from idx's own bit 7, bits 8 and 9 from
// the masks (Banks = table bytes / 128).
template <int Banks>
inline __m512i grid_lut8(const uint8_t* table, __m512i idx, __mmask64 b8, __mmask64 b9) {
    auto bank = [&](int k) {
        return _mm512_permutex2var_epi8(_mm512_load_si512(table + 128 * k), idx, _mm512_load_si512(table + 128 * k + 64));
    };
    const __mmask64 b7 = _mm512_movepi8_mask(idx);
    if constexpr (Banks == 2) {
        return _mm512_mask_blend_epi8(b7, bank(0), bank(1));
    } else if constexpr (Banks == 4) {
        return _mm512_mask_blend_epi8(b8, _mm512_mask_blend_epi8(b7, bank(0), bank(1)), _mm512_mask_blend_epi8(b7, bank(2), bank(3)));
    } else {
        static_assert(Banks == 8);
        const __m512i x0 = _mm512_mask_blend_epi8(b8, _mm512_mask_blend_epi8(b7, bank(0), bank(1)), _mm512_mask_blend_epi8(b7, bank(2), bank(3)));
        const __m512i x1 = _mm512_mask_blend_epi8(b8, _mm512_mask_blend_epi8(b7, bank(4), bank(5)), _mm512_mask_blend_epi8(b7, bank(6), bank(7)));
        return _mm512_mask_blend_epi8(b9, x0, x1);
    }
}

// The IQ1 grid's packed 2-bit codes (byte planes lo / hi: weights 0-3 / 4-7) of 64 indices (lo8:
// their low 8 bits, hi3: bits 8-10 in each byte) from the tables above: 16 banks of iq1_low, one
// of iq1_hbase, two of iq1_pack -- 19 vpermt2b where two planes of 2048 took 32.
inline void grid_lookup_iq1(const GridPackedTables& t, __m512i lo8, __m512i hi3, __m512i& lo, __m512i& hi) {
    const __mmask64 b8 = _mm512_test_epi8_mask(hi3, _mm512_set1_epi8(1));
    const __mmask64 b9 = _mm512_test_epi8_mask(hi3, _mm512_set1_epi8(2));
    const __mmask64 b10 = _mm512_test_epi8_mask(hi3, _mm512_set1_epi8(4));
    const __m512i low = _mm512_mask_blend_epi8(b10, grid_lut8<8>(t.iq1_low, lo8, b8, b9), grid_lut8<8>(t.iq1_low + 1024, lo8, b8, b9));
    // index >> 4 (7 bits) -> the run's base of the high half, plus the entry's step (bit 7)
    const __m512i run = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo8, 4), _mm512_set1_epi8(0x0F)), _mm512_slli_epi16(hi3, 4));
    const __m512i hb = _mm512_permutex2var_epi8(_mm512_load_si512(t.iq1_hbase), run, _mm512_load_si512(t.iq1_hbase + 64));
    const __m512i high = _mm512_mask_add_epi8(hb, _mm512_movepi8_mask(low), hb, _mm512_set1_epi8(1));
    const __m512i p0 = _mm512_load_si512(t.iq1_pack), p1 = _mm512_load_si512(t.iq1_pack + 64);
    lo = _mm512_permutex2var_epi8(p0, low, p1);  // vpermt2b reads bits 0-6: the step bit is ignored
    hi = _mm512_permutex2var_epi8(p0, high, p1);
}

// IQ1 forms: the z-th 64 grid values (bytes -1, 0, 1) of block half `half` (entries 32 half + 8 z
// .. + 7) from the packed entries of 64 indices (byte planes lo / hi).
inline __m512i grid_expand_iq1(__m512i lo, __m512i hi, int half, int z) {
    alignas(64) static const uint8_t place[8][64] = {
#define Q(k) (k), 64 + (k), 0, 0, 0, 0, 0, 0
#define P(b) {Q(b), Q(b + 1), Q(b + 2), Q(b + 3), Q(b + 4), Q(b + 5), Q(b + 6), Q(b + 7)}
        P(0), P(8), P(16), P(24), P(32), P(40), P(48), P(56)
#undef P
#undef Q
    };
    const __m512i cut = _mm512_set1_epi64(0x0E0C0A0806040200ll);
    const __m512i packed = _mm512_permutex2var_epi8(lo, _mm512_load_si512(place[4 * half + z]), hi);
    return _mm512_sub_epi8(_mm512_and_si512(_mm512_multishift_epi64_epi8(cut, packed), _mm512_set1_epi8(3)), _mm512_set1_epi8(1));
}

// Both byte planes of the entries of 32 indices (bytes 0-31 of idx; masks for bits 8, 9 in their
// low 32 bits): result bytes 0-31 the low planes, 32-63 the high planes.
template <int Banks>
inline __m512i grid_lookup32(const uint8_t (&planes)[2][128 * Banks], __m256i idx32, uint32_t b8, uint32_t b9) {
    const __m512i idx = _mm512_broadcast_i64x4(idx32);
    const __mmask64 m8 = (uint64_t)b8 * 0x100000001ull, m9 = (uint64_t)b9 * 0x100000001ull;
    return _mm512_mask_blend_epi8((__mmask64)0xFFFFFFFF00000000ull, grid_lut8<Banks>(planes[0], idx, m8, m9),
                                  grid_lut8<Banks>(planes[1], idx, m8, m9));
}

// IQ2 forms: one 8-weight entry per index; z-th 64 magnitudes from the packed entries of indices
// 8z .. 8z + 7 (lh: low planes in bytes 0-31, high planes in 32-63).
inline __m512i grid_expand_iq2(__m512i lh, int z) {
    alignas(64) static const uint8_t place[4][64] = {
#define P(z)                                                                                                        \
    {8 * z + 0, 32 + 8 * z + 0, 0, 0, 0, 0, 0, 0, 8 * z + 1, 32 + 8 * z + 1, 0, 0, 0, 0, 0, 0,                     \
     8 * z + 2, 32 + 8 * z + 2, 0, 0, 0, 0, 0, 0, 8 * z + 3, 32 + 8 * z + 3, 0, 0, 0, 0, 0, 0,                     \
     8 * z + 4, 32 + 8 * z + 4, 0, 0, 0, 0, 0, 0, 8 * z + 5, 32 + 8 * z + 5, 0, 0, 0, 0, 0, 0,                     \
     8 * z + 6, 32 + 8 * z + 6, 0, 0, 0, 0, 0, 0, 8 * z + 7, 32 + 8 * z + 7, 0, 0, 0, 0, 0, 0}
        P(0), P(1), P(2), P(3)
#undef P
    };
    // Byte j of each qword: bits 2j .. 2j + 7 (the code in bits 0-1; vpermb reads bits 0-5 and
    // the magnitude table repeats every 4 entries).
    const __m512i cut = _mm512_set1_epi64(0x0E0C0A0806040200ll);
    const __m512i mags = _mm512_broadcast_i32x4(_mm_setr_epi8(8, 25, 43, 0, 8, 25, 43, 0, 8, 25, 43, 0, 8, 25, 43, 0));
    const __m512i packed = _mm512_permutexvar_epi8(_mm512_load_si512(place[z]), lh);
    return _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(cut, packed), mags);
}

// IQ3 forms: one 4-weight entry per index; z-th 64 magnitudes from indices 16z .. 16z + 15 (lo /
// hi: the byte planes of 64 indices). mags: 8 magnitudes repeated 8 times.
inline __m512i grid_expand_iq3(__m512i lo, __m512i hi, int z, __m512i mags) {
    alignas(64) static const uint8_t place[4][64] = {
#define Q(z, j) 16 * z + 2 * j, 64 + 16 * z + 2 * j, 16 * z + 2 * j + 1, 64 + 16 * z + 2 * j + 1, 0, 0, 0, 0
#define P(z) {Q(z, 0), Q(z, 1), Q(z, 2), Q(z, 3), Q(z, 4), Q(z, 5), Q(z, 6), Q(z, 7)}
        P(0), P(1), P(2), P(3)
#undef P
#undef Q
    };
    // Bytes 0-3: codes at bits 0, 3, 6, 9 of the first entry; 4-7: at 16, 19, 22, 25 (the second).
    const __m512i cut = _mm512_set1_epi64(0x1916131009060300ll);
    const __m512i packed = _mm512_permutex2var_epi8(lo, _mm512_load_si512(place[z]), hi);
    return _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(cut, packed), mags);
}

// Scales of 16-weight groups from 8 bytes of 4-bit scales s (group 2i: low nibble of byte i):
// (d * (0.5 + s)) * 0.25.
inline void grid_scales_nib16(const uint8_t* sc8, float d, float* out) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc8));
    const __m128i m15 = _mm_set1_epi8(15);
    const __m128i n = _mm_unpacklo_epi8(_mm_and_si128(b, m15), _mm_and_si128(_mm_srli_epi16(b, 4), m15));
    const __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(n));
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(d), _mm512_add_ps(_mm512_set1_ps(0.5f), s)), _mm512_set1_ps(0.25f)));
}

// 8 per-32 scales in a ymm to 16 per-16 scales.
inline void grid_scales_dup(__m256 s8, float* out) {
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), _mm512_castps256_ps512(s8)));
}

inline __m512i grid_iq3_mags(uint32_t type) {
    return type == quant::T_IQ3_XXS ? _mm512_set1_epi64(0x3E342C241C140C04ll) : _mm512_set1_epi64(0x0F0D0B0907050301ll);
}

template <uint32_t Type>
constexpr bool grid_has_vec512() {
    return Type == quant::T_IQ2_XXS || Type == quant::T_IQ2_XS || Type == quant::T_IQ2_S || Type == quant::T_IQ3_XXS ||
           Type == quant::T_IQ3_S;
}

}  // namespace
}  // namespace ikllm::cpu
#endif
