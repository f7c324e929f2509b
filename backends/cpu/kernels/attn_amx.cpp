// Tile-unit attention (attn_amx.h). Per attend() call the 32 query rows are two A tiles; per 32
// keys the scores are four C tiles (rows 0-15 | 16-31 x keys 0-15 | 16-31), per 32 value columns
// the output accumulators are four C tiles loaded from and stored back to the fp32 output rows.
// Layouts, softmax and driver loop: attn_bf16_common_avx512.h.
#include "kernels/attn_amx.h"

#include "kernels/matmul.h"

#if (defined(__AMX_BF16__) || defined(__AMXBF16__)) && (defined(__AMX_TILE__) || defined(__AMXTILE__)) && defined(__AVX512BF16__)
#include <immintrin.h>

#include "kernels/amx_bf16.h"
#include "kernels/attn_bf16_common_avx512.h"

namespace ikllm::cpu {
namespace {

using amx::kTileElems;
using attn_bf16::kChunkKeys;

void attend(const float* const* q, const int64_t* n_vis, int nr, float scale, const uint16_t* keys,
            const uint16_t* values, int64_t d_k, int64_t d_v, float* const* out) {
    const int64_t kc = d_k / 32;
    // Scores of 32 keys: four C tiles (rows 0-15 | 16-31 x keys 0-15 | 16-31).
    auto scores = [kc](const uint16_t* Q, const uint16_t* g, int64_t dk, float* s, int) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t c = 0; c < kc; ++c) {
            _tile_loadd(4, Q + 32 * c, dk * 2);
            _tile_loadd(5, Q + 16 * dk + 32 * c, dk * 2);
            _tile_loadd(6, g + c * kTileElems, 64);
            _tile_loadd(7, g + (kc + c) * kTileElems, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, s, kChunkKeys * 4);
        _tile_stored(1, s + 16, kChunkKeys * 4);
        _tile_stored(2, s + 16 * kChunkKeys, kChunkKeys * 4);
        _tile_stored(3, s + 16 * kChunkKeys + 16, kChunkKeys * 4);
        __asm__ volatile("" ::: "memory");  // _tile_stored has no memory clobber (GCC 12)
    };
    // O += P V, 32 output columns (four C tiles over the 32 rows) at a time.
    auto pv = [](float* O, const uint16_t* P, const uint16_t* vchunk, int64_t nsb, int64_t dv, int) {
        for (int64_t cg = 0; cg < dv / 32; ++cg) {
            float* o = O + 32 * cg;
            _tile_loadd(0, o, dv * 4);
            _tile_loadd(1, o + 16, dv * 4);
            _tile_loadd(2, o + 16 * dv, dv * 4);
            _tile_loadd(3, o + 16 * dv + 16, dv * 4);
            for (int64_t j = 0; j < nsb; ++j) {
                const uint16_t* vg = vchunk + (size_t)(32 * j) * dv + (2 * cg) * kTileElems;
                _tile_loadd(4, P + 32 * j, kChunkKeys * 2);
                _tile_loadd(5, P + 16 * kChunkKeys + 32 * j, kChunkKeys * 2);
                _tile_loadd(6, vg, 64);
                _tile_loadd(7, vg + kTileElems, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, o, dv * 4);
            _tile_stored(1, o + 16, dv * 4);
            _tile_stored(2, o + 16 * dv, dv * 4);
            _tile_stored(3, o + 16 * dv + 16, dv * 4);
            __asm__ volatile("" ::: "memory");
        }
    };
    amx::configure_tiles();
    attn_bf16::attend_chunks(q, n_vis, nr, scale, keys, values, d_k, d_v, out, scores, pv);
    amx::release_tiles();
    _mm256_zeroupper();
}

constexpr AmxAttention kAmxAttention{attn_bf16::key_elems, attn_bf16::value_elems, attn_bf16::pack_keys,
                                     attn_bf16::pack_values, attend};

}  // namespace

const AmxAttention* amx_attention() { return amx_usable() ? &kAmxAttention : nullptr; }

}  // namespace ikllm::cpu

#else

namespace ikllm::cpu {
const AmxAttention* amx_attention() { return nullptr; }
}  // namespace ikllm::cpu

#endif
