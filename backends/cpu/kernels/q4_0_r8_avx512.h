// Q4_0_R8 on AVX-512 VNNI (included by legacy_avx512.cpp after legacy_panel_avx512.h).
// Q4_0_R8 (quant-formats.md §12.2) stores 8 rows side by side: per 32-column block the 8 fp16
// scales, then 4 vectors of 32 bytes whose byte 4k + i holds row k's codes of columns 4l + i (low
// nibble) and 4l + i + 16 (high nibble). A 512-bit register holds two consecutive blocks of the 8
// rows, so one vpdpbusd advances 8 rows by 4 columns in two blocks, each row's partial sums stay
// in its own lanes (no horizontal sums but one add per row at the end) and a block needs one
// float multiply-add for all 8 rows: about 60 % of the plain Q4_0 single-row kernel's
// instructions per weight, read as one sequential stream. Batches of kSymBatchTokens and more
// fill the plain Q4_0 panels (the R8 vectors already are the panel's 4-column vectors), so
// prompts give the plain Q4_0 results, bit for bit.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/legacy_panel_avx512.h"
#include "kernels/legacy_sym_accum.h"
#include "kernels/prefetch.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

constexpr int64_t kQ40R8Block = 144;  // bytes of one 32-column block of 8 rows
constexpr int kQ40R8Tokens = 4;       // tokens sharing one unpacked block
constexpr int64_t kQ40R8StackBlocks = 1024;  // per-token factors on the stack up to 32768 columns

// Byte offset of block b's 32 codes in a Q8_2_X4 row of nb blocks (groups of 4 blocks: 4 bf16
// scales, 4 int16 sums, 128 codes; then single blocks: scale, sum, 32 codes).
inline int64_t q8x4_code_offset(int64_t nb, int64_t b) {
    const int64_t full = nb / 4 * 4;
    return b < full ? 144 * (b >> 2) + 16 + 32 * (b & 3) : 144 * (full >> 2) + 36 * (b - full) + 4;
}

// Per-token, per-block float scale and -8 x code sum (the Q4_0 offset) of a Q8_2_X4 row.
inline void q40r8_act_factors(const uint8_t* row, int64_t nb, float* da, int32_t* ns) {
    const int64_t full = nb / 4 * 4;
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = b < full ? row + 144 * (b >> 2) + 2 * (b & 3) : row + 144 * (full >> 2) + 36 * (b - full);
        const int64_t sum_at = b < full ? 8 : 2;
        uint16_t dbits;
        int16_t sum;
        std::memcpy(&dbits, p, 2);
        std::memcpy(&sum, p + sum_at, 2);
        da[b] = bf16_to_f32(dbits);
        ns[b] = -8 * (int32_t)sum;
    }
}

inline int32_t q40r8_word(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// The code vector l of block p0 (lanes 0-7) and p1 (lanes 8-15) as one register.
inline __m512i q40r8_codes(const uint8_t* p0, const uint8_t* p1, int l) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0 + 16 + 32 * l))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1 + 16 + 32 * l)), 1);
}
inline __m512 q40r8_scales(const uint8_t* p0, const uint8_t* p1) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0))),
                                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)), 1));
}
inline __m512i q40r8_pair_i32(int32_t lo, int32_t hi) {
    return _mm512_inserti64x4(_mm512_set1_epi32(lo), _mm256_set1_epi32(hi), 1);
}
inline __m512 q40r8_pair_f32(float lo, float hi) {
    return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}

// One 8-row group times T tokens, two blocks per register: block b in lanes 0-7, block b + 1 in
// lanes 8-15, so the group is read as one sequential stream (two groups side by side, 16 rows
// per register, decoded twice as fast from cache but streamed ~12 % slower from memory with two
// threads: two streams per core). a[t]: token t's Q8_2_X4 row; da / ns: its factors
// (q40r8_act_factors). Lane k of the result is row k: the sum of the two halves.
template <int T>
void q40r8_tile(const uint8_t* g, int64_t nb, const uint8_t* const* a, const float* const* da, const int32_t* const* ns,
                float* y, int64_t ys) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    const __m512i m = _mm512_set1_epi8(15);
    // Activation dwords of the two blocks' 64 code bytes for code vector l: lanes 0-7 dword l
    // (lo) or 4 + l (hi) of block b, lanes 8-15 the same of block b + 1.
    __m512i ix_lo[4], ix_hi[4];
    for (int l = 0; l < 4; ++l) {
        ix_lo[l] = q40r8_pair_i32(l, 8 + l);
        ix_hi[l] = q40r8_pair_i32(4 + l, 12 + l);
    }
    const int64_t full = nb / 4 * 4;
    alignas(64) uint8_t pad[kQ40R8Block];  // a lone last block's partner: codes 8, scales 0
    std::memset(pad, 0, 16);
    std::memset(pad + 16, 0x88, kQ40R8Block - 16);
    for (int64_t b = 0; b < nb; b += 2) {
        const uint8_t* p0 = g + kQ40R8Block * b;
        const bool two = b + 1 < nb;
        const uint8_t* p1 = two ? p0 + kQ40R8Block : pad;
        for (int k = 0; k < 2 * (int)kQ40R8Block; k += 64) __builtin_prefetch(p0 + kWeightPrefetchAhead + k, 0, 3);
        const __m512 dw = q40r8_scales(p0, p1);
        __m512i lo[4], hi[4];
        for (int l = 0; l < 4; ++l) {
            const __m512i q = q40r8_codes(p0, p1, l);
            lo[l] = _mm512_and_si512(q, m);
            hi[l] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m);
        }
        const int64_t b1 = two ? b + 1 : b;  // the lone block's partner reads its own codes (scale 0)
        for (int t = 0; t < T; ++t) {
            // Blocks b and b + 1 of a group of 4 lie side by side (64 code bytes); the single
            // blocks past the last group do not.
            const __m512i av = b + 1 < full ? _mm512_loadu_si512(a[t] + q8x4_code_offset(nb, b))
                                            : _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(
                                                                     reinterpret_cast<const __m256i*>(a[t] + q8x4_code_offset(nb, b)))),
                                                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                                                     a[t] + q8x4_code_offset(nb, b1))),
                                                                 1);
            // Four short chains instead of one of 8 (exact integer sums: the order does not
            // matter); one chain of chained vpdpbusd latencies filled the scheduler.
            __m512i s[4] = {q40r8_pair_i32(ns[t][b], ns[t][b1]), _mm512_setzero_si512(), _mm512_setzero_si512(),
                            _mm512_setzero_si512()};
            for (int l = 0; l < 4; ++l) {
                s[l % 2] = _mm512_dpbusd_epi32(s[l % 2], lo[l], _mm512_permutexvar_epi32(ix_lo[l], av));
                s[2 + l % 2] = _mm512_dpbusd_epi32(s[2 + l % 2], hi[l], _mm512_permutexvar_epi32(ix_hi[l], av));
            }
            const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, q40r8_pair_f32(da[t][b], da[t][b1])), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t)
        _mm256_storeu_ps(y + t * ys, _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1)));
}

// Panel rows [r, r + rows) (rows 8 or 16, r a multiple of 8): the plain Q4_0 panel's content.
void fill_panel_q4_0_r8(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t nb, LegacyPanel& pn) {
    const uint8_t* g0 = w + (size_t)r * wrb;
    const uint8_t* g1 = rows > 8 ? g0 + 8 * wrb : nullptr;
    alignas(64) uint8_t pad[kQ40R8Block];  // rows 8-15 of a lone group: value 0 (code 8), scale 0
    std::memset(pad, 0, 16);
    std::memset(pad + 16, 0x88, kQ40R8Block - 16);
    const __m512i m = _mm512_set1_epi8(15), to_unsigned = _mm512_set1_epi8(120);  // (q - 8) + 128
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p0 = g0 + kQ40R8Block * b;
        const uint8_t* p1 = g1 ? g1 + kQ40R8Block * b : pad;
        _mm512_storeu_ps(pn.d.data() + (size_t)b * kP32Rows, q40r8_scales(p0, p1));
        uint8_t* q = pn.q.data() + (size_t)b * 32 * kP32Rows;
        for (int l = 0; l < 4; ++l) {
            const __m512i v = q40r8_codes(p0, p1, l);
            _mm512_storeu_si512(q + 64 * l, _mm512_add_epi8(_mm512_and_si512(v, m), to_unsigned));
            _mm512_storeu_si512(q + 64 * (4 + l), _mm512_add_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m), to_unsigned));
        }
    }
}

// Per-token factors for up to kQ40R8StackBlocks-block rows on the stack, else on the heap.
struct Q40R8Factors {
    alignas(64) float da_stack[kQ40R8Tokens * kQ40R8StackBlocks];
    alignas(64) int32_t ns_stack[kQ40R8Tokens * kQ40R8StackBlocks];
    std::vector<float> da_heap;
    std::vector<int32_t> ns_heap;
    float* da;
    int32_t* ns;
    Q40R8Factors(int64_t nt, int64_t nb) {
        if (nt * nb <= kQ40R8Tokens * kQ40R8StackBlocks) {
            da = da_stack;
            ns = ns_stack;
        } else {
            da_heap.resize((size_t)(nt * nb));
            ns_heap.resize((size_t)(nt * nb));
            da = da_heap.data();
            ns = ns_heap.data();
        }
    }
};

void run_q4_0_r8(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                 int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32;
    if (nt >= kSymBatchTokens) {
        panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_panel_q4_0_r8(w, wrb, r, rows, nb, pn); }, nb,
                          act, arb, nt, r0, r1, y, ys);
        return;
    }
    Q40R8Factors f(nt, nb);
    for (int64_t t = 0; t < nt; ++t) q40r8_act_factors(act + (size_t)t * arb, nb, f.da + t * nb, f.ns + t * nb);
    // Rows outer, token tiles inner: a group's blocks stay in cache for the next tile.
    for (int64_t r = r0; r < r1; r += 8) {
        const uint8_t* g = w + (size_t)r * wrb;
        for (int64_t t0 = 0; t0 < nt; t0 += kQ40R8Tokens) {
            const int tn = (int)std::min<int64_t>(kQ40R8Tokens, nt - t0);
            const uint8_t* a[kQ40R8Tokens];
            const float* da[kQ40R8Tokens];
            const int32_t* ns[kQ40R8Tokens];
            for (int t = 0; t < tn; ++t) {
                a[t] = act + (size_t)(t0 + t) * arb;
                da[t] = f.da + (t0 + t) * nb;
                ns[t] = f.ns + (t0 + t) * nb;
            }
            float* out = y + t0 * ys + r;
            switch (tn) {
                case 1: q40r8_tile<1>(g, nb, a, da, ns, out, ys); break;
                case 2: q40r8_tile<2>(g, nb, a, da, ns, out, ys); break;
                case 3: q40r8_tile<3>(g, nb, a, da, ns, out, ys); break;
                default: q40r8_tile<4>(g, nb, a, da, ns, out, ys); break;
            }
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
