// Prompt-batch GEMM on the AMX tile unit (TDPBF16PS), for any weight type that can decode 16
// rows at a time into bf16 (bf16_fill_avx512.h). Included by matmul_amx.cpp only (built with
// -mamx-tile -mamx-bf16 on top of the AVX-512 flags).
//
// Why bf16 and not int8 tiles: the int8 unit would need a float epilogue per 32-weight block
// (per-block scales on both operands), which costs as much as the VNNI loop it replaces
// (docs/cpu-speed.md). Decoding the weights to bf16 once per call folds every scale into the
// values, so the tile unit accumulates whole rows in fp32 with no epilogue.
//
// Roles: A = weights, 16 rows x 32 k per tile, filled row-major ([K/32][16][32] bf16 per 16-row
// block, contiguous 1 KiB tiles); B = activations, [16 tokens x 32 k] per tile in the unit's
// pair layout [16 k-pairs][16 tokens][2], packed once per call from bf16 rows; C = fp32
// [16 rows][16 tokens], transposed on the way out into y[token][row].
#pragma once
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 seeds AVX-512 intrinsic results with _mm512_undefined_*(), which -Wuninitialized reports
// (a known false positive; same in kquant_simd.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ikllm::cpu::amx {

constexpr int kTileRows = 16;      // rows of every tile used here
constexpr int kChunk = 32;         // k values per tile row (64 bytes of bf16)
constexpr int kTileElems = 16 * 32;  // bf16 values per A or B tile

// ldtilecfg through inline asm: GCC 12's _tile_loadconfig drops the stores that build the
// configuration before it (docs/cpu-speed.md).
struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

inline void configure_tiles() {
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.colsb[i] = 64;
        c.rows[i] = kTileRows;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
}
inline void release_tiles() { __asm__ volatile("tilerelease" ::: "memory"); }

// 16 x 16 transpose of 32-bit elements: r[i] holds row i on entry, column i on return.
inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    // Now r[4q + j], 128-bit lane L, holds column 4L + j of rows 4q..4q+3: column 4L + j is lane L
    // of r[j], r[4 + j], r[8 + j], r[12 + j].
    for (int j = 0; j < 4; ++j) {
        const __m512i a = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88);       // lanes 0,2 of r[j], r[4+j]
        const __m512i b = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xDD);       // lanes 1,3
        const __m512i c = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88);
        const __m512i d = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xDD);
        t[j] = _mm512_shuffle_i32x4(a, c, 0x88);       // lane 0 of every quad
        t[4 + j] = _mm512_shuffle_i32x4(b, d, 0x88);   // lane 1
        t[8 + j] = _mm512_shuffle_i32x4(a, c, 0xDD);   // lane 2
        t[12 + j] = _mm512_shuffle_i32x4(b, d, 0xDD);  // lane 3
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// Packs activation rows (bf16, `stride` bytes apart) for tokens [t0, t0 + n) (n <= 16) into the
// kc B tiles of one 16-token group: tile c = [16 k-pairs][16 tokens] dwords. Missing tokens are 0.
inline void pack_token_group(const uint8_t* act, size_t stride, int n, int64_t kc, uint16_t* out) {
    __m512i r[16];
    for (int64_t c = 0; c < kc; ++c) {
        for (int t = 0; t < 16; ++t)
            r[t] = t < n ? _mm512_loadu_si512((const void*)(act + (size_t)t * stride + (size_t)c * 64)) : _mm512_setzero_si512();
        transpose16(r);
        for (int p = 0; p < 16; ++p) _mm512_store_si512((void*)(out + c * kTileElems + p * 32), r[p]);
    }
}

// C tile (16 weight rows x 16 tokens, fp32, in `c`) -> y[token][row] for `rows` rows and
// `toks` tokens.
inline void store_transposed(const float* c, int rows, int toks, float* y, int64_t ys) {
    __m512i r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512((const void*)(c + 16 * i));
    transpose16(r);
    const __mmask16 m = (__mmask16)((1u << rows) - 1u);
    for (int t = 0; t < toks; ++t) _mm512_mask_storeu_ps(y + t * ys, m, _mm512_castsi512_ps(r[t]));
}

// One block of up to 32 weight rows (A tiles a0, a1 = a0 + 16 rows) against up to 32 tokens (B
// tiles b0, b1 = next token group) over kc chunks; TR / TT: second row block / token group present.
template <bool TR, bool TT>
inline void block_kernel(const uint16_t* a0, const uint16_t* a1, const uint16_t* b0, const uint16_t* b1, int64_t kc,
                         float (*ct)[256]) {
    _tile_zero(0);
    if (TT) _tile_zero(1);
    if (TR) _tile_zero(2);
    if (TR && TT) _tile_zero(3);
    for (int64_t c = 0; c < kc; ++c) {
        _tile_loadd(4, a0 + c * kTileElems, 64);
        _tile_loadd(6, b0 + c * kTileElems, 64);
        _tile_dpbf16ps(0, 4, 6);
        if (TT) {
            _tile_loadd(7, b1 + c * kTileElems, 64);
            _tile_dpbf16ps(1, 4, 7);
        }
        if (TR) {
            _tile_loadd(5, a1 + c * kTileElems, 64);
            _tile_dpbf16ps(2, 5, 6);
            if (TT) _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, ct[0], 64);
    if (TT) _tile_stored(1, ct[1], 64);
    if (TR) _tile_stored(2, ct[2], 64);
    if (TR && TT) _tile_stored(3, ct[3], 64);
    __asm__ volatile("" ::: "memory");  // _tile_stored has no memory clobber (GCC 12)
}

// Per-thread buffers of the kernel (grown once, reused by every call on the thread).
struct Scratch {
    std::vector<uint16_t> a, b;
    static uint16_t* aligned(std::vector<uint16_t>& v, size_t n) {
        if (v.size() < n + 32) v.resize(n + 32);
        return reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~(uintptr_t)63);
    }
};
inline Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// y[t * ys + r] = dot(W row r, act row t) for r in [r0, r1), t < nt. Fill::rows(w, wrb, r, n, K,
// out) decodes rows r..r+n-1 (n <= 16) into one 16-row A block, zero rows after n.
template <class Fill>
void gemm(const uint8_t* w, size_t wrb, int64_t K, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
          int64_t nt, float* y, int64_t ys) {
    if (r1 <= r0 || nt <= 0) return;
    const int64_t kc = K / kChunk;
    const int64_t groups = (nt + 15) / 16;
    Scratch& s = scratch();
    uint16_t* B = Scratch::aligned(s.b, (size_t)(groups * kc * kTileElems));
    uint16_t* A = Scratch::aligned(s.a, (size_t)(2 * kc * kTileElems));
    for (int64_t g = 0; g < groups; ++g)
        pack_token_group(act + (size_t)(16 * g) * arb, arb, (int)std::min<int64_t>(16, nt - 16 * g), kc,
                         B + g * kc * kTileElems);
    alignas(64) float ct[4][256];
    configure_tiles();
    for (int64_t rb = r0; rb < r1; rb += 32) {
        const int n0 = (int)std::min<int64_t>(16, r1 - rb);
        const int n1 = (int)std::clamp<int64_t>(r1 - rb - 16, 0, 16);
        Fill::rows(w, wrb, rb, n0, K, A);
        if (n1 > 0) Fill::rows(w, wrb, rb + 16, n1, K, A + kc * kTileElems);
        const uint16_t* a1 = A + kc * kTileElems;
        for (int64_t g = 0; g < groups; g += 2) {
            const bool tt = g + 1 < groups;
            const uint16_t* b0 = B + g * kc * kTileElems;
            const uint16_t* b1 = b0 + kc * kTileElems;
            if (n1 > 0) {
                if (tt) block_kernel<true, true>(A, a1, b0, b1, kc, ct);
                else block_kernel<true, false>(A, a1, b0, b1, kc, ct);
            } else {
                if (tt) block_kernel<false, true>(A, a1, b0, b1, kc, ct);
                else block_kernel<false, false>(A, a1, b0, b1, kc, ct);
            }
            const int m0 = (int)std::min<int64_t>(16, nt - 16 * g);
            float* yb = y + (16 * g) * ys + rb;
            store_transposed(ct[0], n0, m0, yb, ys);
            if (tt) store_transposed(ct[1], n0, (int)std::min<int64_t>(16, nt - 16 * (g + 1)), yb + 16 * ys, ys);
            if (n1 > 0) {
                store_transposed(ct[2], n1, m0, yb + 16, ys);
                if (tt) store_transposed(ct[3], n1, (int)std::min<int64_t>(16, nt - 16 * (g + 1)), yb + 16 * ys + 16, ys);
            }
        }
    }
    release_tiles();
}

}  // namespace ikllm::cpu::amx
