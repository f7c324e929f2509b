// Tile-unit attention (attn_amx.h). Per attend() call the 32 query rows are two A tiles; per 32
// keys the scores are four C tiles (rows 0-15 | 16-31 x keys 0-15 | 16-31), per 32 value columns
// the output accumulators are four C tiles loaded from and stored back to the fp32 output rows.
// Packed layouts (bf16, 1 KiB tiles of 16 rows x 64 bytes):
//   keys, per group of 32: [half (keys 0-15 | 16-31)][d_k / 32][16 d-pairs][16 keys][2]
//   values, per group of 32: [d_v / 16][16 key pairs][16 columns][2]
#include "kernels/attn_amx.h"

#include "kernels/matmul.h"

#if (defined(__AMX_BF16__) || defined(__AMXBF16__)) && (defined(__AMX_TILE__) || defined(__AMXTILE__)) && defined(__AVX512BF16__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/amx_bf16.h"
#include "kernels/bf16_encode_avx512.h"
#include "kernels/exp_avx512.h"

namespace ikllm::cpu {
namespace {

using amx::kTileElems;
constexpr int64_t kChunkKeys = 256;  // keys per softmax chunk (scores of 32 rows: 32 KiB)

size_t key_elems(int64_t n_pad, int64_t d_k) { return (size_t)(n_pad * d_k); }
size_t value_elems(int64_t n_pad, int64_t d_v) { return (size_t)(n_pad * d_v); }

// bf16 copies of up to 32 rows of length d (zero rows after n), row-major.
void encode_rows(const float* rows, int n, int64_t d, uint16_t* out) {
    for (int j = 0; j < 32; ++j) {
        if (j < n) simd512::bf16_encode_row(rows + j * d, out + j * d, d);
        else std::memset(out + j * d, 0, (size_t)d * 2);
    }
}

thread_local std::vector<uint16_t> t_pack;

void pack_keys(const float* rows, int n, int64_t d_k, uint16_t* group) {
    if ((int64_t)t_pack.size() < 32 * d_k) t_pack.resize((size_t)(32 * d_k));
    uint16_t* b = t_pack.data();
    encode_rows(rows, n, d_k, b);
    const int64_t kc = d_k / 32;
    __m512i r[16];
    for (int half = 0; half < 2; ++half)
        for (int64_t c = 0; c < kc; ++c) {
            // 16 keys x 16 d-pairs (dwords) -> 16 d-pairs x 16 keys
            for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_si512((const void*)(b + (16 * half + k) * d_k + 32 * c));
            amx::transpose16(r);
            uint16_t* tile = group + (half * kc + c) * kTileElems;
            for (int p = 0; p < 16; ++p) _mm512_storeu_si512((void*)(tile + 32 * p), r[p]);
        }
}

void pack_values(const float* rows, int n, int64_t d_v, uint16_t* group) {
    if ((int64_t)t_pack.size() < 32 * d_v) t_pack.resize((size_t)(32 * d_v));
    uint16_t* b = t_pack.data();
    encode_rows(rows, n, d_v, b);
    for (int64_t ct = 0; ct < d_v / 16; ++ct) {
        uint16_t* tile = group + ct * kTileElems;
        for (int p = 0; p < 16; ++p) {  // pair row p: keys 2p, 2p + 1, interleaved per column
            const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(b + (2 * p) * d_v + 16 * ct)));
            const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(b + (2 * p + 1) * d_v + 16 * ct)));
            _mm512_storeu_si512((void*)(tile + 32 * p), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    }
}

// Per-thread work space of attend(): bf16 queries, one chunk's scores and weights, the fp32
// output accumulators, running max and sum per row.
struct AttnScratch {
    std::vector<uint16_t> q, p;
    std::vector<float> s, o;
};

inline float hmax(__m512 v) { return _mm512_reduce_max_ps(v); }

void attend(const float* const* q, const int64_t* n_vis, int nr, float scale, const uint16_t* keys,
            const uint16_t* values, int64_t d_k, int64_t d_v, float* const* out) {
    thread_local AttnScratch ws;
    constexpr int R = kAmxAttnRows;
    const int64_t kc = d_k / 32;
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
    amx::configure_tiles();
    for (int64_t c0 = 0; c0 < nmax; c0 += kChunkKeys) {
        const int64_t nk = std::min(kChunkKeys, nmax - c0);
        const int64_t nsb = (nk + 31) / 32;  // 32-key sub-blocks
        // Scores S[r][j] = q_r . k_(c0 + j)
        for (int64_t j = 0; j < nsb; ++j) {
            const uint16_t* g = keys + (size_t)(c0 + 32 * j) * d_k;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t c = 0; c < kc; ++c) {
                _tile_loadd(4, Q + 32 * c, d_k * 2);
                _tile_loadd(5, Q + 16 * d_k + 32 * c, d_k * 2);
                _tile_loadd(6, g + c * kTileElems, 64);
                _tile_loadd(7, g + (kc + c) * kTileElems, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            float* s = S + 32 * j;
            _tile_stored(0, s, kChunkKeys * 4);
            _tile_stored(1, s + 16, kChunkKeys * 4);
            _tile_stored(2, s + 16 * kChunkKeys, kChunkKeys * 4);
            _tile_stored(3, s + 16 * kChunkKeys + 16, kChunkKeys * 4);
        }
        __asm__ volatile("" ::: "memory");  // _tile_stored has no memory clobber (GCC 12)
        // Online softmax per row; P = bf16(exp(s - max)) for visible keys, 0 elsewhere in the
        // chunk; the running sum adds the rounded weights, so P V / sum is normalized exactly.
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
            const float m_new = std::max(mx[r], hmax(vmax));
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
        // O += P V, 32 output columns (four C tiles over the 32 rows) at a time.
        const uint16_t* vchunk = values + (size_t)c0 * d_v;
        for (int64_t cg = 0; cg < d_v / 32; ++cg) {
            float* o = O + 32 * cg;
            _tile_loadd(0, o, d_v * 4);
            _tile_loadd(1, o + 16, d_v * 4);
            _tile_loadd(2, o + 16 * d_v, d_v * 4);
            _tile_loadd(3, o + 16 * d_v + 16, d_v * 4);
            for (int64_t j = 0; j < nsb; ++j) {
                const uint16_t* vg = vchunk + (size_t)(32 * j) * d_v + (2 * cg) * kTileElems;
                _tile_loadd(4, P + 32 * j, kChunkKeys * 2);
                _tile_loadd(5, P + 16 * kChunkKeys + 32 * j, kChunkKeys * 2);
                _tile_loadd(6, vg, 64);
                _tile_loadd(7, vg + kTileElems, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, o, d_v * 4);
            _tile_stored(1, o + 16, d_v * 4);
            _tile_stored(2, o + 16 * d_v, d_v * 4);
            _tile_stored(3, o + 16 * d_v + 16, d_v * 4);
            __asm__ volatile("" ::: "memory");
        }
    }
    amx::release_tiles();
    for (int r = 0; r < nr; ++r) {
        const __m512 inv = _mm512_set1_ps(sum[r] > 0 ? 1.0f / sum[r] : 0.0f);
        for (int64_t i = 0; i < d_v; i += 16) _mm512_storeu_ps(out[r] + i, _mm512_mul_ps(_mm512_loadu_ps(O + r * d_v + i), inv));
    }
    _mm256_zeroupper();
}

constexpr AmxAttention kAmxAttention{key_elems, value_elems, pack_keys, pack_values, attend};

}  // namespace

const AmxAttention* amx_attention() { return amx_usable() ? &kAmxAttention : nullptr; }

}  // namespace ikllm::cpu

#else

namespace ikllm::cpu {
const AmxAttention* amx_attention() { return nullptr; }
}  // namespace ikllm::cpu

#endif
