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

#include "kernels/transpose_avx512.h"

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

using simd512::transpose16;

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

// One 2 x 2 block of C tiles over kc chunks: A operands a0, a1 (16 rows x 32 k each), B operands
// b0, b1 (pair layout), C tile i = (a[i / 2], b[i % 2]): zero when `first`, else loaded from cin[i]
// (64-byte rows); stored to cout[i] with row stride cstride[i] bytes. TA / TB: a1 / b1 present.
// Row-major GEMM: A = weights, B = tokens; token-major: A = tokens, B = weights.
template <bool TA, bool TB>
inline void block_kernel(const uint16_t* a0, const uint16_t* a1, const uint16_t* b0, const uint16_t* b1, int64_t kc,
                         bool first, float* const cin[4], float* const cout[4], const size_t cstride[4]) {
    if (first) {
        _tile_zero(0);
        if (TB) _tile_zero(1);
        if (TA) _tile_zero(2);
        if (TA && TB) _tile_zero(3);
    } else {
        _tile_loadd(0, cin[0], 64);
        if (TB) _tile_loadd(1, cin[1], 64);
        if (TA) _tile_loadd(2, cin[2], 64);
        if (TA && TB) _tile_loadd(3, cin[3], 64);
    }
    for (int64_t c = 0; c < kc; ++c) {
        _tile_loadd(4, a0 + c * kTileElems, 64);
        _tile_loadd(6, b0 + c * kTileElems, 64);
        _tile_dpbf16ps(0, 4, 6);
        if (TB) {
            _tile_loadd(7, b1 + c * kTileElems, 64);
            _tile_dpbf16ps(1, 4, 7);
        }
        if (TA) {
            _tile_loadd(5, a1 + c * kTileElems, 64);
            _tile_dpbf16ps(2, 5, 6);
            if (TB) _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, cout[0], cstride[0]);
    if (TB) _tile_stored(1, cout[1], cstride[1]);
    if (TA) _tile_stored(2, cout[2], cstride[2]);
    if (TA && TB) _tile_stored(3, cout[3], cstride[3]);
    __asm__ volatile("" ::: "memory");  // _tile_stored has no memory clobber (GCC 12)
}
// Dispatch on which of a1 / b1 exist.
inline void block(bool ta, bool tb, const uint16_t* a0, const uint16_t* a1, const uint16_t* b0, const uint16_t* b1,
                  int64_t kc, bool first, float* const cin[4], float* const cout[4], const size_t cstride[4]) {
    if (ta) {
        if (tb) block_kernel<true, true>(a0, a1, b0, b1, kc, first, cin, cout, cstride);
        else block_kernel<true, false>(a0, a1, b0, b1, kc, first, cin, cout, cstride);
    } else {
        if (tb) block_kernel<false, true>(a0, a1, b0, b1, kc, first, cin, cout, cstride);
        else block_kernel<false, false>(a0, a1, b0, b1, kc, first, cin, cout, cstride);
    }
}

// Per-thread buffers of the kernel (grown once, reused by every call on the thread).
struct Scratch {
    std::vector<uint16_t> a, b;
    std::vector<float> c;
    template <class T>
    static T* aligned(std::vector<T>& v, size_t n) {
        const size_t pad = 64 / sizeof(T);
        if (v.size() < n + pad) v.resize(n + pad);
        return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~(uintptr_t)63);
    }
};
inline Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// Cache blocking of one call: rows in super-blocks of kRowBlock, K in blocks of kKBlock (a
// multiple of 256, the K-quant block). Per (row super-block, K-block) the decoded weights (64 KiB),
// the K-block's slice of the packed activations (nt x 1 KiB) and the fp32 accumulators of the
// super-block (nt x 512 B) stay in L2 while every (row pair, token pair) block passes over them;
// a row pair's weights (32 KiB) stay in L1 across the token pairs.
constexpr int64_t kKBlock = 512;
constexpr int64_t kRowBlock = 128;

// B tiles of a whole call (`nt` tokens, K columns): [group][K/32][16 k-pairs][16 tokens][2] bf16.
inline size_t packed_elems(int64_t K, int64_t nt) { return (size_t)((nt + 15) / 16 * (K / kChunk) * kTileElems); }

// y[t * ys + r] = dot(W row r, token t) for r in [r0, r1), t < nt, the tokens already packed (B,
// 64-byte aligned, packed_elems(K, nt) values). Fill::rows(w, wrb, r, n, k0, nk, out) decodes
// columns [k0, k0 + nk) of rows r..r+n-1 (n <= 16) into one 16-row A block ([nk/32][16][32]),
// zero rows after n.
template <class Fill>
void gemm_block_packed(const uint8_t* w, size_t wrb, int64_t K, int64_t r0, int64_t r1, const uint16_t* B, int64_t nt,
                       float* y, int64_t ys) {
    const int64_t kc = K / kChunk;
    const int64_t groups = (nt + 15) / 16;
    const int64_t kcb = std::min<int64_t>(kc, kKBlock / kChunk);
    constexpr int64_t kSuper = kRowBlock / 16;  // row blocks per super-block
    Scratch& s = scratch();
    uint16_t* A = Scratch::aligned(s.a, (size_t)(kSuper * kcb * kTileElems));
    float* C = Scratch::aligned(s.c, (size_t)(kSuper * groups * 256));  // [row block][group][16][16]
    auto ctile = [&](int64_t rb, int64_t g) { return C + (rb * groups + g) * 256; };
    for (int64_t rs = r0; rs < r1; rs += kRowBlock) {
        const int64_t rows = std::min(kRowBlock, r1 - rs), rblocks = (rows + 15) / 16;
        configure_tiles();
        for (int64_t c0 = 0; c0 < kc; c0 += kcb) {
            const int64_t n = std::min(kcb, kc - c0);
            for (int64_t rb = 0; rb < rblocks; ++rb)
                Fill::rows(w, wrb, rs + 16 * rb, (int)std::min<int64_t>(16, rows - 16 * rb), c0 * kChunk, n * kChunk,
                           A + rb * n * kTileElems);
            const bool first = c0 == 0;
            for (int64_t rb = 0; rb < rblocks; rb += 2) {
                const bool tr = rb + 1 < rblocks;
                const uint16_t* a0 = A + rb * n * kTileElems;
                const uint16_t* a1 = a0 + n * kTileElems;
                for (int64_t g = 0; g < groups; g += 2) {
                    const bool tt = g + 1 < groups;
                    const uint16_t* b0 = B + (g * kc + c0) * kTileElems;
                    const uint16_t* b1 = b0 + kc * kTileElems;
                    float* cs[4] = {ctile(rb, g), tt ? ctile(rb, g + 1) : nullptr, tr ? ctile(rb + 1, g) : nullptr,
                                    tr && tt ? ctile(rb + 1, g + 1) : nullptr};
                    static constexpr size_t kRows[4] = {64, 64, 64, 64};
                    block(tr, tt, a0, a1, b0, b1, n, first, cs, cs, kRows);
                }
            }
        }
        release_tiles();
        for (int64_t rb = 0; rb < rblocks; ++rb)
            for (int64_t g = 0; g < groups; ++g)
                store_transposed(ctile(rb, g), (int)std::min<int64_t>(16, rows - 16 * rb),
                                 (int)std::min<int64_t>(16, nt - 16 * g), y + (16 * g) * ys + rs + 16 * rb, ys);
    }
}

// y[t * ys + r] = dot(W row r, act row t) for r in [r0, r1), t < nt (bf16 activation rows, arb
// bytes apart): packs them, then gemm_block_packed.
template <class Fill>
void gemm_block(const uint8_t* w, size_t wrb, int64_t K, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                int64_t nt, float* y, int64_t ys) {
    const int64_t kc = K / kChunk;
    Scratch& s = scratch();
    uint16_t* B = Scratch::aligned(s.b, packed_elems(K, nt));
    for (int64_t g = 0; g < (nt + 15) / 16; ++g)
        pack_token_group(act + (size_t)(16 * g) * arb, arb, (int)std::min<int64_t>(16, nt - 16 * g), kc,
                         B + g * kc * kTileElems);
    gemm_block_packed<Fill>(w, wrb, K, r0, r1, B, nt, y, ys);
}

// ---- Token-major variant: C = [16 tokens][16 weight rows], stored straight into y. ----
// Roles swapped: the A operand is 16 activation rows x 32 k (bf16 rows as encoded, copied into
// contiguous tiles, no transpose), the B operand the weights in the unit's pair layout (decoded
// row-major, then one 16 x 16 dword transpose per 1 KiB tile). No output transpose: the finished
// C tiles go to y with tile stores. Cheaper than gemm_block when the output (rows x tokens) is
// large against the weights (rows x K), i.e. for big token batches and short rows.

// Activation rows of tokens [t0, t0 + n) (n <= 16) -> kc A tiles [16 tokens][32 k]; rest zero.
inline void copy_token_group(const uint8_t* act, size_t stride, int n, int64_t kc, uint16_t* out) {
    for (int t = 0; t < 16; ++t) {
        const uint8_t* src = act + (size_t)t * stride;
        for (int64_t c = 0; c < kc; ++c)
            _mm512_store_si512((void*)(out + c * kTileElems + t * 32),
                               t < n ? _mm512_loadu_si512((const void*)(src + c * 64)) : _mm512_setzero_si512());
    }
}

// Row-major weight tiles [16 rows][32 k] -> pair layout [16 k-pairs][16 rows], in place.
inline void to_pair_layout(uint16_t* tiles, int64_t count) {
    __m512i r[16];
    for (int64_t c = 0; c < count; ++c) {
        uint16_t* t = tiles + c * kTileElems;
        for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512((const void*)(t + 32 * i));
        transpose16(r);
        for (int i = 0; i < 16; ++i) _mm512_store_si512((void*)(t + 32 * i), r[i]);
    }
}

template <class Fill>
void gemm_block_t(const uint8_t* w, size_t wrb, int64_t K, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    const int64_t kc = K / kChunk;
    const int64_t groups = (nt + 15) / 16;
    const int64_t kcb = std::min<int64_t>(kc, kKBlock / kChunk);
    constexpr int64_t kSuper = kRowBlock / 16;
    Scratch& s = scratch();
    uint16_t* X = Scratch::aligned(s.b, (size_t)(groups * kc * kTileElems));
    uint16_t* W = Scratch::aligned(s.a, (size_t)(kSuper * kcb * kTileElems));
    float* C = Scratch::aligned(s.c, (size_t)(kSuper * groups * 256));  // [row block][group][16 tokens][16 rows]
    for (int64_t g = 0; g < groups; ++g)
        copy_token_group(act + (size_t)(16 * g) * arb, arb, (int)std::min<int64_t>(16, nt - 16 * g), kc,
                         X + g * kc * kTileElems);
    auto ctile = [&](int64_t rb, int64_t g) { return C + (rb * groups + g) * 256; };
    configure_tiles();
    for (int64_t rs = r0; rs < r1; rs += kRowBlock) {
        const int64_t rows = std::min(kRowBlock, r1 - rs), rblocks = (rows + 15) / 16;
        for (int64_t c0 = 0; c0 < kc; c0 += kcb) {
            const int64_t n = std::min(kcb, kc - c0);
            for (int64_t rb = 0; rb < rblocks; ++rb)
                Fill::rows(w, wrb, rs + 16 * rb, (int)std::min<int64_t>(16, rows - 16 * rb), c0 * kChunk, n * kChunk,
                           W + rb * n * kTileElems);
            to_pair_layout(W, rblocks * n);
            const bool first = c0 == 0, last = c0 + n == kc;
            for (int64_t g = 0; g < groups; g += 2) {
                const bool tt = g + 1 < groups;
                const uint16_t* x0 = X + (g * kc + c0) * kTileElems;
                const uint16_t* x1 = x0 + kc * kTileElems;
                for (int64_t rb = 0; rb < rblocks; rb += 2) {
                    const bool tr = rb + 1 < rblocks;
                    const uint16_t* w0 = W + rb * n * kTileElems;
                    const uint16_t* w1 = w0 + n * kTileElems;
                    float* cin[4] = {ctile(rb, g), ctile(rb + 1, g), ctile(rb, g + 1), ctile(rb + 1, g + 1)};
                    float* cs[4];
                    size_t cst[4];
                    for (int i = 0; i < 4; ++i) {
                        const int64_t gg = g + (i >> 1), bb = rb + (i & 1);
                        // finished and whole: straight into y; otherwise through the buffer
                        const bool direct = last && 16 * gg + 16 <= nt && 16 * bb + 16 <= rows;
                        cs[i] = direct ? y + (16 * gg) * ys + rs + 16 * bb : cin[i];
                        cst[i] = direct ? (size_t)ys * sizeof(float) : 64;
                    }
                    block(tt, tr, x0, x1, w0, w1, n, first, cin, cs, cst);
                }
            }
        }
        // partial tiles (last token group / last row block) from the buffer
        for (int64_t rb = 0; rb < rblocks; ++rb)
            for (int64_t g = 0; g < groups; ++g) {
                const int tr = (int)std::min<int64_t>(16, rows - 16 * rb), tn = (int)std::min<int64_t>(16, nt - 16 * g);
                if (tr == 16 && tn == 16) continue;
                const __mmask16 m = (__mmask16)((1u << tr) - 1u);
                for (int t = 0; t < tn; ++t)
                    _mm512_mask_storeu_ps(y + (16 * g + t) * ys + rs + 16 * rb, m, _mm512_load_ps(ctile(rb, g) + 16 * t));
            }
    }
    release_tiles();
}

// Packed activations of one gemm_block call stay under this size (per thread): larger batches of
// long rows go in balanced token blocks (each decodes the weights again).
constexpr size_t kPackBytes = 4u << 20;

// Which layout costs fewer 16 x 16 transposes for a call: token-major transposes every weight
// tile (rows x K / 512); row-major transposes the activation tiles (nt x K / 512) and every output
// tile (rows x nt / 256, each a scattered store about 2.5x a transpose in L1).
inline bool prefer_token_major(int64_t rows, int64_t K, int64_t nt) {
    return rows * K < nt * K + 5 * rows * nt;
}

template <class Fill>
void gemm(const uint8_t* w, size_t wrb, int64_t K, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
          int64_t nt, float* y, int64_t ys) {
    if (r1 <= r0 || nt <= 0) return;
    const int64_t cap = std::max<int64_t>(64, (int64_t)(kPackBytes / (2 * (size_t)K)) / 32 * 32);
    const int64_t blocks = (nt + cap - 1) / cap;
    const int64_t tb = ((nt + blocks - 1) / blocks + 15) / 16 * 16;
    const bool tok = prefer_token_major(r1 - r0, K, std::min(tb, nt));
    for (int64_t t0 = 0; t0 < nt; t0 += tb) {
        if (tok)
            gemm_block_t<Fill>(w, wrb, K, r0, r1, act + (size_t)t0 * arb, arb, std::min(tb, nt - t0), y + t0 * ys, ys);
        else
            gemm_block<Fill>(w, wrb, K, r0, r1, act + (size_t)t0 * arb, arb, std::min(tb, nt - t0), y + t0 * ys, ys);
    }
}

}  // namespace ikllm::cpu::amx
