// The parts of the bf16 prompt-batch attention (attn_amx.h) shared by its two implementations,
// the AMX tile unit (attn_amx.cpp) and AVX512-BF16 vector products (attn_bf16_avx512.cpp): the
// packed key/value layouts, the online softmax over one chunk of scores, and the driver loop.
// Both products read the same layouts (the tile unit's B-tile pair layout is also what one
// `vdpbf16ps` row needs), so the implementations differ only in how a chunk's Q K^T and P V run.
// Packed layouts (bf16, 1 KiB blocks of 16 rows x 64 bytes):
//   keys, per group of 32: [half (keys 0-15 | 16-31)][d_k / 32][16 d-pairs][16 keys][2]
//   values, per group of 32: [d_v / 16][16 key pairs][16 columns][2]
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attn_amx.h"
#include "kernels/bf16_encode_avx512.h"
#include "kernels/exp_avx512.h"
#include "kernels/transpose_avx512.h"

namespace ikllm::cpu::attn_bf16 {

constexpr int64_t kBlockElems = 512;   // bf16 elements of one 16 x 64-byte block
constexpr int64_t kChunkKeys = 256;    // keys per softmax chunk (scores of 32 rows: 32 KiB)

inline size_t key_elems(int64_t n_pad, int64_t d_k) { return (size_t)(n_pad * d_k); }
inline size_t value_elems(int64_t n_pad, int64_t d_v) { return (size_t)(n_pad * d_v); }

// bf16 copies of 32 rows of length d (zero rows from n on), row-major, in a per-thread buffer.
inline uint16_t* encode_rows(const float* rows, int n, int64_t d) {
    thread_local std::vector<uint16_t> buf;
    if ((int64_t)buf.size() < 32 * d) buf.resize((size_t)(32 * d));
    uint16_t* out = buf.data();
    for (int j = 0; j < 32; ++j) {
        if (j < n) simd512::bf16_encode_row(rows + j * d, out + j * d, d);
        else std::memset(out + j * d, 0, (size_t)d * 2);
    }
    return out;
}

inline void pack_keys(const float* rows, int n, int64_t d_k, uint16_t* group) {
    const uint16_t* b = encode_rows(rows, n, d_k);
    const int64_t kc = d_k / 32;
    __m512i r[16];
    for (int half = 0; half < 2; ++half)
        for (int64_t c = 0; c < kc; ++c) {
            // 16 keys x 16 d-pairs (dwords) -> 16 d-pairs x 16 keys
            for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_si512((const void*)(b + (16 * half + k) * d_k + 32 * c));
            simd512::transpose16(r);
            uint16_t* blk = group + (half * kc + c) * kBlockElems;
            for (int p = 0; p < 16; ++p) _mm512_storeu_si512((void*)(blk + 32 * p), r[p]);
        }
}

inline void pack_values(const float* rows, int n, int64_t d_v, uint16_t* group) {
    const uint16_t* b = encode_rows(rows, n, d_v);
    for (int64_t ct = 0; ct < d_v / 16; ++ct) {
        uint16_t* blk = group + ct * kBlockElems;
        for (int p = 0; p < 16; ++p) {  // pair row p: keys 2p, 2p + 1, interleaved per column
            const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(b + (2 * p) * d_v + 16 * ct)));
            const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(b + (2 * p + 1) * d_v + 16 * ct)));
            _mm512_storeu_si512((void*)(blk + 32 * p), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    }
}

// attend() of attn_amx.h around two chunk steps of the implementation:
//   scores(Q, keys_of_32, d_k, S, nr): S[r][0..32) = Q[r] . k_j for the 32 keys of one group
//     (Q: 32 bf16 rows of d_k, rows >= nr zero; S rows kChunkKeys floats apart);
//   pv(O, P, values_of_chunk, nsb, d_v, nr): O[r][:] += sum_j P[r][j] v_j over nsb groups of 32
//     (P: 32 bf16 rows kChunkKeys apart, rows >= nr zero; O: 32 fp32 rows of d_v).
// Q, K, P and V are bf16, everything else fp32; the softmax is online across chunks of
// kChunkKeys keys (exact max within a chunk), and the running sum adds the rounded weights, so
// P V / sum is normalized exactly.
template <class Scores, class Pv>
void attend_chunks(const float* const* q, const int64_t* n_vis, int nr, float scale, const uint16_t* keys,
                   const uint16_t* values, int64_t d_k, int64_t d_v, float* const* out, Scores&& scores, Pv&& pv) {
    struct Work {
        std::vector<uint16_t> q, p;
        std::vector<float> s, o;
    };
    thread_local Work ws;
    constexpr int R = kAmxAttnRows;
    ws.q.resize((size_t)(R * d_k));
    ws.p.assign((size_t)(R * kChunkKeys), 0);
    ws.s.resize((size_t)(R * kChunkKeys));
    ws.o.assign((size_t)(R * d_v), 0.0f);
    uint16_t* Q = ws.q.data();
    uint16_t* P = ws.p.data();
    float* S = ws.s.data();
    float* O = ws.o.data();
    for (int r = 0; r < R; ++r) {
        if (r < nr) simd512::bf16_encode_row(q[r], Q + r * d_k, d_k);
        else std::memset(Q + r * d_k, 0, (size_t)d_k * 2);
    }
    float mx[R], sum[R];
    int64_t nmax = 0;
    for (int r = 0; r < R; ++r) {
        mx[r] = -std::numeric_limits<float>::infinity();
        sum[r] = 0.0f;
        if (r < nr) nmax = std::max(nmax, n_vis[r]);
    }
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int64_t c0 = 0; c0 < nmax; c0 += kChunkKeys) {
        const int64_t nk = std::min(kChunkKeys, nmax - c0);
        const int64_t nsb = (nk + 31) / 32;  // 32-key groups
        for (int64_t j = 0; j < nsb; ++j) scores(Q, keys + (size_t)(c0 + 32 * j) * d_k, d_k, S + 32 * j, nr);
        // Online softmax per row; P = bf16(exp(s - max)) for visible keys, 0 elsewhere in the chunk.
        for (int r = 0; r < nr; ++r) {
            float* s = S + r * kChunkKeys;
            uint16_t* p = P + r * kChunkKeys;
            const int64_t nv = std::clamp<int64_t>(n_vis[r] - c0, 0, nk);
            if (nv == 0) {
                std::memset(p, 0, (size_t)nsb * 64);
                continue;
            }
            __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
            for (int64_t i = 0; i < nv; i += 16) {
                const __mmask16 m = nv - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nv - i)) - 1);
                const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), vscale);
                _mm512_storeu_ps(s + i, x);
                vmax = _mm512_mask_max_ps(vmax, m, vmax, x);
            }
            const float m_new = std::max(mx[r], _mm512_reduce_max_ps(vmax));
            if (m_new > mx[r]) {
                const float alpha = mx[r] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(mx[r] - m_new);
                if (alpha != 1.0f) {
                    const __m512 va = _mm512_set1_ps(alpha);
                    float* o = O + r * d_v;
                    for (int64_t i = 0; i < d_v; i += 16) _mm512_storeu_ps(o + i, _mm512_mul_ps(_mm512_loadu_ps(o + i), va));
                    sum[r] *= alpha;
                }
                mx[r] = m_new;
            }
            const __m512 vm = _mm512_set1_ps(m_new);
            __m512 acc = _mm512_setzero_ps();
            for (int64_t i = 0; i < 32 * nsb; i += 16) {
                const __mmask16 m = i >= nv ? 0 : nv - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nv - i)) - 1);
                const __m512 e = _mm512_maskz_mov_ps(m, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), vm)));
                const __m256i eb = simd512::bf16_rne(e);
                _mm256_storeu_si256((__m256i*)(p + i), eb);
                acc = _mm512_add_ps(acc, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(eb), 16)));
            }
            sum[r] += _mm512_reduce_add_ps(acc);
        }
        pv(O, P, values + (size_t)c0 * d_v, nsb, d_v, nr);
    }
    for (int r = 0; r < nr; ++r) {
        const __m512 inv = _mm512_set1_ps(sum[r] > 0 ? 1.0f / sum[r] : 0.0f);
        for (int64_t i = 0; i < d_v; i += 16) _mm512_storeu_ps(out[r] + i, _mm512_mul_ps(_mm512_loadu_ps(O + r * d_v + i), inv));
    }
}

}  // namespace ikllm::cpu::attn_bf16
