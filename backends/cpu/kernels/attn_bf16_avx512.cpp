// bf16 prompt-batch attention on AVX512-BF16 vector products (attn_amx.h), for AVX-512 CPUs
// without the tile unit (AMD Zen 4, Intel before Sapphire Rapids). Same layouts, softmax and
// driver as the tile-unit version (attn_bf16_common_avx512.h); one `vdpbf16ps` multiplies a
// broadcast bf16 pair of a query (or of a weight row of P) with one 64-byte row of a packed block:
// 16 keys (or 16 value columns) x that pair. Register blocks are 8 rows x 32 keys / columns.
#include "kernels/attn_amx.h"

#include "kernels/matmul.h"

#if defined(__AVX512BF16__)
#include <immintrin.h>

#include <cstdlib>
#include <cstring>

#include "kernels/attn_bf16_common_avx512.h"

namespace ikllm::cpu {
namespace {

using attn_bf16::kBlockElems;
using attn_bf16::kChunkKeys;
constexpr int kRows = 8;  // rows per register block

inline __m512 dp(__m512 acc, uint32_t pair, __m512i b) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32((int)pair), (__m512bh)b);
}

// S[r][0..32) = Q[r] . k_j for one group of 32 packed keys, rows in blocks of kRows up to nr.
void scores(const uint16_t* Q, const uint16_t* g, int64_t d_k, float* s, int nr) {
    const int64_t kc = d_k / 32, qd = d_k / 2;  // d-pairs (dwords) per query row
    const uint32_t* Qd = reinterpret_cast<const uint32_t*>(Q);
    for (int r0 = 0; r0 < nr; r0 += kRows) {
        __m512 a0[kRows], a1[kRows];
        for (int r = 0; r < kRows; ++r) a0[r] = a1[r] = _mm512_setzero_ps();
        const uint32_t* qr = Qd + r0 * qd;
        for (int64_t c = 0; c < kc; ++c) {
            const uint16_t* b0 = g + c * kBlockElems;
            const uint16_t* b1 = g + (kc + c) * kBlockElems;
            for (int p = 0; p < 16; ++p) {
                const __m512i k0 = _mm512_loadu_si512((const void*)(b0 + 32 * p));
                const __m512i k1 = _mm512_loadu_si512((const void*)(b1 + 32 * p));
                const int64_t i = 16 * c + p;
                for (int r = 0; r < kRows; ++r) {
                    a0[r] = dp(a0[r], qr[r * qd + i], k0);
                    a1[r] = dp(a1[r], qr[r * qd + i], k1);
                }
            }
        }
        for (int r = 0; r < kRows; ++r) {
            _mm512_storeu_ps(s + (r0 + r) * kChunkKeys, a0[r]);
            _mm512_storeu_ps(s + (r0 + r) * kChunkKeys + 16, a1[r]);
        }
    }
}

// O[r][:] += sum_j P[r][j] v_j over nsb groups of 32 packed values, 32 columns at a time.
void pv(float* O, const uint16_t* P, const uint16_t* vchunk, int64_t nsb, int64_t d_v, int nr) {
    constexpr int64_t pd = kChunkKeys / 2;  // key pairs (dwords) per row of P
    const uint32_t* Pd = reinterpret_cast<const uint32_t*>(P);
    for (int64_t cg = 0; cg < d_v / 32; ++cg)
        for (int r0 = 0; r0 < nr; r0 += kRows) {
            __m512 a0[kRows], a1[kRows];
            float* o = O + r0 * d_v + 32 * cg;
            for (int r = 0; r < kRows; ++r) {
                a0[r] = _mm512_loadu_ps(o + r * d_v);
                a1[r] = _mm512_loadu_ps(o + r * d_v + 16);
            }
            const uint32_t* pr = Pd + r0 * pd;
            for (int64_t j = 0; j < nsb; ++j) {
                const uint16_t* v0 = vchunk + (size_t)(32 * j) * d_v + (2 * cg) * kBlockElems;
                const uint16_t* v1 = v0 + kBlockElems;
                for (int p = 0; p < 16; ++p) {
                    const __m512i w0 = _mm512_loadu_si512((const void*)(v0 + 32 * p));
                    const __m512i w1 = _mm512_loadu_si512((const void*)(v1 + 32 * p));
                    const int64_t i = 16 * j + p;
                    for (int r = 0; r < kRows; ++r) {
                        a0[r] = dp(a0[r], pr[r * pd + i], w0);
                        a1[r] = dp(a1[r], pr[r * pd + i], w1);
                    }
                }
            }
            for (int r = 0; r < kRows; ++r) {
                _mm512_storeu_ps(o + r * d_v, a0[r]);
                _mm512_storeu_ps(o + r * d_v + 16, a1[r]);
            }
        }
}

void attend(const float* const* q, const int64_t* n_vis, int nr, float scale, const uint16_t* keys,
            const uint16_t* values, int64_t d_k, int64_t d_v, float* const* out) {
    attn_bf16::attend_chunks(q, n_vis, nr, scale, keys, values, d_k, d_v, out, scores, pv);
    _mm256_zeroupper();
}

constexpr AmxAttention kAttention{attn_bf16::key_elems, attn_bf16::value_elems, attn_bf16::pack_keys,
                                  attn_bf16::pack_values, attend};

}  // namespace

const AmxAttention* avx512_bf16_attention() {
    // IKLLM_BF16_ATTENTION=0 keeps prompt batches on the fp32 kernels (A/B measurements).
    static const bool off = [] {
        const char* env = std::getenv("IKLLM_BF16_ATTENTION");
        return env && std::strcmp(env, "0") == 0;
    }();
    return !off && best_isa() == Isa::avx512 ? &kAttention : nullptr;
}

}  // namespace ikllm::cpu

#else

namespace ikllm::cpu {
const AmxAttention* avx512_bf16_attention() { return nullptr; }
}  // namespace ikllm::cpu

#endif
