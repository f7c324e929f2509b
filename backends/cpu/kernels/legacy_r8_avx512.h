// Q4_0_R8 and Q8_0_R8 on AVX-512 VNNI (included by legacy_avx512.cpp after
// legacy_panel_avx512.h). Both (quant-formats.md §12.2) store 8 rows side by side: per 32-column
// block the 8 fp16 scales, then the codes in 4-byte column groups of the 8 rows (Q4_0_R8: 4
// vectors of 32 bytes, low and high nibbles; Q8_0_R8: 8 vectors of int8). A 512-bit register
// holds two consecutive blocks of the 8 rows, so one vpdpbusd advances 8 rows by 4 columns in two
// blocks, each row's partial sums stay in its own lanes (no horizontal sums but one add per row at
// the end) and a block needs one float multiply-add for all 8 rows: about 60 % of the plain Q4_0
// single-row kernel's instructions per weight, read as one sequential stream. Codes are unsigned
// (value + offset: 8 for Q4_0, 128 for Q8_0), corrected per block by -offset x the activation
// code sum. Batches of kSymBatchTokens and more fill the plain type's 16-row panels (the R8
// vectors already are the panel's 4-column vectors), so prompts give the plain results, bit for bit.
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

constexpr int kQ40R8Tokens = 4;       // tokens sharing one unpacked block
constexpr int64_t kQ40R8StackBlocks = 1024;  // per-token factors on the stack up to 32768 columns

// Byte offset of block b's 32 codes in a Q8_2_X4 row of nb blocks (groups of 4 blocks: 4 bf16
// scales, 4 int16 sums, 128 codes; then single blocks: scale, sum, 32 codes).
inline int64_t q8x4_code_offset(int64_t nb, int64_t b) {
    const int64_t full = nb / 4 * 4;
    return b < full ? 144 * (b >> 2) + 16 + 32 * (b & 3) : 144 * (full >> 2) + 36 * (b - full) + 4;
}

// Per-token, per-block float scale and -offset x code sum of a Q8_2_X4 row (the weights' codes are
// unsigned: value + offset).
inline void q40r8_act_factors(const uint8_t* row, int64_t nb, int32_t offset, float* da, int32_t* ns) {
    const int64_t full = nb / 4 * 4;
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p = b < full ? row + 144 * (b >> 2) + 2 * (b & 3) : row + 144 * (full >> 2) + 36 * (b - full);
        const int64_t sum_at = b < full ? 8 : 2;
        uint16_t dbits;
        int16_t sum;
        std::memcpy(&dbits, p, 2);
        std::memcpy(&sum, p + sum_at, 2);
        da[b] = bf16_to_f32(dbits);
        ns[b] = -offset * (int32_t)sum;
    }
}

inline int32_t q40r8_word(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// 32 bytes at offset `at` of block p0 (lanes 0-7) and of block p1 (lanes 8-15) as one register.
inline __m512i q40r8_pair_bytes(const uint8_t* p0, const uint8_t* p1, int at) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0 + at))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1 + at)), 1);
}

// The two 8-row layouts: block bytes, code offset, a neutral block (value 0, scale 0) and the
// unsigned codes (value + kOffset) of column vector j = 0..7 (columns 4j..4j+3 of the 8 rows, 4
// bytes per row) of blocks p0 (lanes 0-7) and p1 (lanes 8-15).
struct R8Q4_0 {  // Q4_0_R8: byte 16 + 32l + 4k + i holds columns 4l + i (low nibble) and 16 + 4l + i
    static constexpr int64_t kBlock = 144;
    static constexpr int32_t kOffset = 8;
    static void neutral(uint8_t* p) {
        std::memset(p, 0, 16);
        std::memset(p + 16, 0x88, kBlock - 16);
    }
    static void codes(const uint8_t* p0, const uint8_t* p1, __m512i u[8]) {
        const __m512i m = _mm512_set1_epi8(15);
        for (int l = 0; l < 4; ++l) {
            const __m512i q = q40r8_pair_bytes(p0, p1, 16 + 32 * l);
            u[l] = _mm512_and_si512(q, m);
            u[4 + l] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m);
        }
    }
};
struct R8Q8_0 {  // Q8_0_R8: int8 column 4l + i at byte 16 + 32l + 4k + i, column 16 + 4l + i at 144 + ...
    static constexpr int64_t kBlock = 272;
    static constexpr int32_t kOffset = 128;
    static void neutral(uint8_t* p) { std::memset(p, 0, kBlock); }
    static void codes(const uint8_t* p0, const uint8_t* p1, __m512i u[8]) {
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        for (int j = 0; j < 8; ++j) u[j] = _mm512_xor_si512(q40r8_pair_bytes(p0, p1, 16 + 32 * (j % 4) + 128 * (j / 4)), flip);
    }
};

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
// per register, decoded faster from cache but streamed slower from memory with two threads: two
// streams per core). a[t]: token t's Q8_2_X4 row; da / ns: its factors (q40r8_act_factors).
// Lane k of the result is row k: the sum of the two halves.
template <class L, int T>
void q40r8_tile(const uint8_t* g, int64_t nb, const uint8_t* const* a, const float* const* da, const int32_t* const* ns,
                float* y, int64_t ys) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    // Activation dwords of the two blocks' 64 code bytes for column vector j: lanes 0-7 dword j
    // of block b, lanes 8-15 dword j of block b + 1.
    __m512i ix[8];
    for (int j = 0; j < 8; ++j) ix[j] = q40r8_pair_i32(j, 8 + j);
    const int64_t full = nb / 4 * 4;
    alignas(64) uint8_t pad[L::kBlock];  // a lone last block's partner: value 0, scale 0
    L::neutral(pad);
    for (int64_t b = 0; b < nb; b += 2) {
        const uint8_t* p0 = g + L::kBlock * b;
        const bool two = b + 1 < nb;
        const uint8_t* p1 = two ? p0 + L::kBlock : pad;
        for (int k = 0; k < 2 * (int)L::kBlock; k += 64) __builtin_prefetch(p0 + kWeightPrefetchAhead + k, 0, 3);
        const __m512 dw = q40r8_scales(p0, p1);
        __m512i u[8];
        L::codes(p0, p1, u);
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
            for (int j = 0; j < 8; ++j) s[j % 4] = _mm512_dpbusd_epi32(s[j % 4], u[j], _mm512_permutexvar_epi32(ix[j], av));
            const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, q40r8_pair_f32(da[t][b], da[t][b1])), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t)
        _mm256_storeu_ps(y + t * ys, _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1)));
}

// Panel rows [r, r + rows) (rows 8 or 16, r a multiple of 8): the plain type's panel content
// (value + 128 as unsigned bytes, the block scales).
template <class L>
void fill_panel_r8(const uint8_t* w, size_t wrb, int64_t r, int rows, int64_t nb, LegacyPanel& pn) {
    const uint8_t* g0 = w + (size_t)r * wrb;
    const uint8_t* g1 = rows > 8 ? g0 + 8 * wrb : nullptr;
    alignas(64) uint8_t pad[L::kBlock];  // rows 8-15 of a lone group: value 0, scale 0
    L::neutral(pad);
    const __m512i to_panel = _mm512_set1_epi8((char)(128 - L::kOffset));
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* p0 = g0 + L::kBlock * b;
        const uint8_t* p1 = g1 ? g1 + L::kBlock * b : pad;
        _mm512_storeu_ps(pn.d.data() + (size_t)b * kP32Rows, q40r8_scales(p0, p1));
        __m512i u[8];
        L::codes(p0, p1, u);
        uint8_t* q = pn.q.data() + (size_t)b * 32 * kP32Rows;
        for (int j = 0; j < 8; ++j) _mm512_storeu_si512(q + 64 * j, _mm512_add_epi8(u[j], to_panel));
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

template <class L>
void run_r8(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
            float* y, int64_t ys) {
    const int64_t nb = ne0 / 32;
    if (nt >= kSymBatchTokens) {
        panel_gemm<false>([&](int64_t r, int rows, LegacyPanel& pn) { fill_panel_r8<L>(w, wrb, r, rows, nb, pn); }, nb,
                          act, arb, nt, r0, r1, y, ys);
        return;
    }
    Q40R8Factors f(nt, nb);
    for (int64_t t = 0; t < nt; ++t) q40r8_act_factors(act + (size_t)t * arb, nb, L::kOffset, f.da + t * nb, f.ns + t * nb);
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
            switch (tn) {  // (default: 4)
                case 1: q40r8_tile<L, 1>(g, nb, a, da, ns, out, ys); break;
                case 2: q40r8_tile<L, 2>(g, nb, a, da, ns, out, ys); break;
                case 3: q40r8_tile<L, 3>(g, nb, a, da, ns, out, ys); break;
                default: q40r8_tile<L, 4>(g, nb, a, da, ns, out, ys); break;
            }
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
