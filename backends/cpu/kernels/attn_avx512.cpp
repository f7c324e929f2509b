// AVX-512 attention primitives: 16-wide dot products (one accumulator, masked tails, 16 keys
// reduced at once),
// fused scale-and-add, f16 rows widened with vcvtph2ps.
#include "kernels/attn_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#if defined(__GNUC__) && !defined(__clang__)  // GCC's own intrinsics (_mm512_undefined_*)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace ikllm::cpu {
namespace {
// The vector dot() reduces: one accumulator over 16-float chunks, the masked tail last (N > 0:
// the length known at compile time, so the chunks unroll and the query chunks stay in registers
// across the keys of scores()).
template <int N>
inline __m512 dot_partial(const float* a, const float* b, int64_t n) {
    if constexpr (N > 0) n = N;
    __m512 s = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) s = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s);
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s);
    }
    return s;
}
// Lane sums by one fixed tree, lanes (i, i + 8), then (i, i + 4), (i, i + 2), (0, 1); scores()
// reduces 16 keys at once along the same tree, so its sums equal dot()'s bit for bit.
inline float hsum_tree(__m512 v) {
    const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}
float dot(const float* a, const float* b, int64_t n) { return hsum_tree(dot_partial<0>(a, b, n)); }
// v[j] -> lane j: hsum_tree(v[j]) for 16 vectors, each tree level pairing two vectors' halves
// in one add (lane order after the last level: 4 L + m holds vector 4 m + L, undone by a permute).
inline __m512 hsum_tree16(const __m512 v[16]) {
    __m512 u[8], w[4], z[2];
    for (int m = 0; m < 8; ++m)
        u[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44), _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
    for (int p = 0; p < 4; ++p)
        w[p] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * p], u[2 * p + 1], 0x88), _mm512_shuffle_f32x4(u[2 * p], u[2 * p + 1], 0xDD));
    for (int r = 0; r < 2; ++r)
        z[r] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * r], w[2 * r + 1], 0x44), _mm512_shuffle_ps(w[2 * r], w[2 * r + 1], 0xEE));
    const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), t);
}
template <int N>
void scores_n(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    const __m512 vs = _mm512_set1_ps(scale);
    for (int64_t j0 = 0; j0 < nk; j0 += 16) {
        const int64_t m = nk - j0 < 16 ? nk - j0 : 16;
        for (int q = 0; q < nq; ++q) {
            __m512 v[16];
            if (m == 16) {
                for (int j = 0; j < 16; ++j) v[j] = dot_partial<N>(a[q], k + (j0 + j) * n, n);
            } else {
                for (int64_t j = 0; j < 16; ++j) v[j] = j < m ? dot_partial<N>(a[q], k + (j0 + j) * n, n) : _mm512_setzero_ps();
            }
            _mm512_mask_storeu_ps(s + q * ss + j0, (__mmask16)((1u << m) - 1), _mm512_mul_ps(hsum_tree16(v), vs));
        }
    }
}
// Long rows (MLA's 576): each chunk of a key row feeds 4 queries (loads, not the FMAs, bound the
// one-query loop there), 4 keys x 4 queries of chains at a time, each as dot_partial<0> computes
// it; the chains' vectors wait on the stack for the 16-key reductions.
void scores_long(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    const __m512 vs = _mm512_set1_ps(scale);
    const int64_t n16 = n / 16 * 16;
    const __mmask16 tail = (__mmask16)((1u << (n - n16)) - 1);
    alignas(64) __m512 part[4][16];
    for (int64_t j0 = 0; j0 < nk; j0 += 16) {
        const int64_t m = nk - j0 < 16 ? nk - j0 : 16;
        for (int q0 = 0; q0 < nq; q0 += 4) {
            const float* qr[4];
            for (int i = 0; i < 4; ++i) qr[i] = a[q0 + i < nq ? q0 + i : nq - 1];  // spare lanes repeat the last query
            for (int64_t jj = 0; jj < m; jj += 4) {
                const float* kr[4];
                for (int i = 0; i < 4; ++i) kr[i] = k + (j0 + (jj + i < m ? jj + i : m - 1)) * n;
                __m512 c[4][4];
                for (int x = 0; x < 4; ++x)
                    for (int y = 0; y < 4; ++y) c[x][y] = _mm512_setzero_ps();
                for (int64_t i = 0; i < n16; i += 16) {
                    __m512 kv[4];
                    for (int y = 0; y < 4; ++y) kv[y] = _mm512_loadu_ps(kr[y] + i);
                    for (int x = 0; x < 4; ++x) {
                        const __m512 qv = _mm512_loadu_ps(qr[x] + i);
                        for (int y = 0; y < 4; ++y) c[x][y] = _mm512_fmadd_ps(qv, kv[y], c[x][y]);
                    }
                }
                if (tail) {
                    __m512 kv[4];
                    for (int y = 0; y < 4; ++y) kv[y] = _mm512_maskz_loadu_ps(tail, kr[y] + n16);
                    for (int x = 0; x < 4; ++x) {
                        const __m512 qv = _mm512_maskz_loadu_ps(tail, qr[x] + n16);
                        for (int y = 0; y < 4; ++y) c[x][y] = _mm512_fmadd_ps(qv, kv[y], c[x][y]);
                    }
                }
                for (int x = 0; x < 4; ++x)
                    for (int y = 0; y < 4 && jj + y < 16; ++y) part[x][jj + y] = c[x][y];
            }
            for (int x = 0; x < 4 && q0 + x < nq; ++x)
                _mm512_mask_storeu_ps(s + (q0 + x) * ss + j0, (__mmask16)((1u << m) - 1), _mm512_mul_ps(hsum_tree16(part[x]), vs));
        }
    }
}
void scores(const float* const* a, int nq, const float* k, int64_t nk, int64_t n, float scale, float* s, int64_t ss) {
    switch (n) {  // the usual head sizes unrolled
        case 64: return scores_n<64>(a, nq, k, nk, n, scale, s, ss);
        case 128: return scores_n<128>(a, nq, k, nk, n, scale, s, ss);
        default: return n >= 256 ? scores_long(a, nq, k, nk, n, scale, s, ss) : scores_n<0>(a, nq, k, nk, n, scale, s, ss);
    }
}
void scale_axpy(float* y, float s, float w, const float* x, int64_t n) {
    const __m512 vs = _mm512_set1_ps(s), vw = _mm512_set1_ps(w);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(vw, _mm512_loadu_ps(x + i), _mm512_mul_ps(_mm512_loadu_ps(y + i), vs)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m,
                              _mm512_fmadd_ps(vw, _mm512_maskz_loadu_ps(m, x + i), _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), vs)));
    }
}
// Queries in groups of up to 4, 64 columns (4 registers) per query at a time: 16 accumulators,
// each V load feeds up to 4 queries' FMAs. Masked tails for n % 16.
template <int Q>
void pv_group(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, const float* v, int64_t vs, int64_t nk,
              int64_t n) {
    for (int64_t i0 = 0; i0 < n; i0 += 64) {
        const int64_t w = n - i0 < 64 ? n - i0 : 64;
        const int nr = (int)((w + 15) / 16);
        __mmask16 mk[4];
        for (int r = 0; r < 4; ++r) {
            const int64_t left = w - 16 * r;
            mk[r] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : (__mmask16)0;
        }
        __m512 y[Q][4];
        for (int q = 0; q < Q; ++q) {
            const __m512 s = _mm512_set1_ps(rescale[q]);
            for (int r = 0; r < 4; ++r)
                y[q][r] = r < nr ? _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[r], acc + q * acc_stride + i0 + 16 * r), s) : _mm512_setzero_ps();
        }
        for (int64_t j = 0; j < nk; ++j) {
            __m512 x[4];
            for (int r = 0; r < 4; ++r) x[r] = r < nr ? _mm512_maskz_loadu_ps(mk[r], v + j * vs + i0 + 16 * r) : _mm512_setzero_ps();
            for (int q = 0; q < Q; ++q) {
                const __m512 pw = _mm512_set1_ps(p[q * ps + j]);
                for (int r = 0; r < 4; ++r) y[q][r] = _mm512_fmadd_ps(pw, x[r], y[q][r]);
            }
        }
        for (int q = 0; q < Q; ++q)
            for (int r = 0; r < nr; ++r) _mm512_mask_storeu_ps(acc + q * acc_stride + i0 + 16 * r, mk[r], y[q][r]);
    }
}
void pv_tile(float* acc, int64_t acc_stride, const float* rescale, const float* p, int64_t ps, int nq, const float* v, int64_t vs,
             int64_t nk, int64_t n) {
    int q = 0;
    for (; q + 4 <= nq; q += 4) pv_group<4>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, vs, nk, n);
    switch (nq - q) {
        case 3: pv_group<3>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, vs, nk, n); break;
        case 2: pv_group<2>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, vs, nk, n); break;
        case 1: pv_group<1>(acc + q * acc_stride, acc_stride, rescale + q, p + q * ps, ps, v, vs, nk, n); break;
        default: break;
    }
}
// q8_0 cache rows (34-byte blocks: f16 scale, 32 codes): d * code, as the scalar decoder.
void load_row_q8_0(const uint8_t* p, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, p += 34) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss((unsigned short)(p[0] | p[1] << 8)));
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
        _mm512_storeu_ps(dst + 32 * b, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)))));
        _mm512_storeu_ps(dst + 32 * b + 16,
                         _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)))));
    }
}
void load_row(uint32_t type, const void* src, float* dst, int64_t n) {
    if (type == quant::T_Q8_0 && n % 32 == 0) return load_row_q8_0(static_cast<const uint8_t*>(src), dst, n);
    if (type != quant::T_F16) {
        quant::kv_decode_row(type, src, dst, n);
        return;
    }
    const uint16_t* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)));
    }
}
// f16 rows of 64 or 128 (the usual head sizes) converted inline: the per-row call and type
// dispatch cost as much as the conversion there.
template <int N>
void load_rows_f16(const uint8_t* const* rows, int64_t nr, float* dst) {
    for (int64_t j = 0; j < nr; ++j)
        for (int i = 0; i < N; i += 16)
            _mm512_storeu_ps(dst + j * N + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + 2 * i))));
}
void load_rows(uint32_t type, const uint8_t* const* rows, int64_t nr, float* dst, int64_t n) {
    if (type == quant::T_F16 && n == 64) return load_rows_f16<64>(rows, nr, dst);
    if (type == quant::T_F16 && n == 128) return load_rows_f16<128>(rows, nr, dst);
    if (type == quant::T_Q8_0 && n % 32 == 0) {
        for (int64_t j = 0; j < nr; ++j) load_row_q8_0(rows[j], dst + j * n, n);
        return;
    }
    for (int64_t j = 0; j < nr; ++j) load_row(type, rows[j], dst + j * n, n);
}
constexpr AttnKernels kAvx512{Isa::avx512, dot, scores, scale_axpy, pv_tile, load_row, load_rows};
}  // namespace
const AttnKernels* attn_kernels_avx512() { return &kAvx512; }
}  // namespace ikllm::cpu
#else
namespace ikllm::cpu {
const AttnKernels* attn_kernels_avx512() { return nullptr; }
}  // namespace ikllm::cpu
#endif
