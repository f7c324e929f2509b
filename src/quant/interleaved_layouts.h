// Sub-layouts of the plain 256-column types (docs: quant-formats.md §6.1), read when repacking
// them into row-interleaved groups, plus the 2-bit R4 map of §12.1.
#pragma once
#include <cstdint>

#include "quant/grid_util.h"

namespace ikllm::quant::layout {

// P2: 2-bit code of weight w from a 64-byte plane.
static inline int q2(const uint8_t* Q, int w) { return bits(Q[32 * (w / 128) + (w % 32)], 2 * ((w % 128) / 32), 2); }
// HB: high bit of weight w from a 32-byte plane.
static inline int hb(const uint8_t* H, int w) { return bit(H[w % 32], w / 32); }
// P4K: 4-bit K layout.
static inline int q4k(const uint8_t* Q, int w) { return nib(Q[32 * (w / 64) + (w % 32)], (w / 32) % 2); }
// P4N: NL4 per 32-weight sub-block.
static inline int q4n(const uint8_t* Q, int w) { return nib(Q[16 * (w / 32) + (w % 16)], (w % 32) / 16); }

// K-scale unpack (Q4_K, Q5_K): 12 bytes -> 8 (scale, min) pairs of 6 bits.
static inline void kscales(const uint8_t* S, int sc[8], int m[8]) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = S[j] & 63;
        m[j] = S[j + 4] & 63;
    }
    for (int j = 4; j < 8; ++j) {
        sc[j] = (S[j + 4] & 15) | (S[j - 4] >> 6) << 4;
        m[j] = (S[j + 4] >> 4) | (S[j] >> 6) << 4;
    }
}

// Q3_K scale unpack: 12 bytes -> 16 scales as stored (0..63, i.e. before subtracting 32).
static inline void q3k_scales_raw(const uint8_t* S, int sc[16]) {
    for (int s = 0; s < 16; ++s) {
        const int low4 = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4);
        const int high2 = bits(S[8 + (s % 4)], 2 * (s / 4), 2);
        sc[s] = low4 | high2 << 4;
    }
}

// 2-bit R4 map: byte offset (inside the 256-byte area) and bit shift of (row k, column w).
static inline int r4q2_byte(int k, int w) { return 32 * (w / 32) + 16 * ((w % 32) / 16) + 4 * k + (w % 4); }
static inline int r4q2_shift(int w) { return 2 * ((w % 16) / 4); }

// Writes a 6-bit value v for scale slot `is` (0..63) split as low nibble in lo[is % 32]
// (nibble is / 32) and high 2 bits in hi[is % 16] (bits 2 * (is / 16)).
static inline void put_split6(uint8_t* lo, uint8_t* hi, int is, int v) {
    lo[is % 32] |= (uint8_t)((v & 15) << (4 * (is / 32)));
    hi[is % 16] |= (uint8_t)(((v >> 4) & 3) << (2 * (is / 16)));
}
static inline int get_split6(const uint8_t* lo, const uint8_t* hi, int is) {
    return nib(lo[is % 32], is / 32) | bits(hi[is % 16], 2 * (is / 16), 2) << 4;
}

// NIB4 byte offset (inside a sub-block's 64-byte area) and nibble of (row k, column c = 0..31).
struct Nib4Pos {
    int byte, high;
};
static inline Nib4Pos nib4_pos(int k, int c) {
    // column c = i + off[t][h]: c % 4 = i; (c / 4) selects (t, h) as in kNib4Off.
    static const int8_t kT[8] = {0, 2, 0, 2, 1, 3, 1, 3}, kH[8] = {0, 0, 1, 1, 0, 0, 1, 1};
    return {16 * kT[c / 4] + 4 * k + (c % 4), kH[c / 4]};
}
static inline int nib4_get(const uint8_t* qa, int k, int c) {
    const Nib4Pos p = nib4_pos(k, c);
    return nib(qa[p.byte], p.high);
}
static inline void nib4_put(uint8_t* qa, int k, int c, int v) {
    const Nib4Pos p = nib4_pos(k, c);
    qa[p.byte] |= (uint8_t)(v << (4 * p.high));
}

}  // namespace ikllm::quant::layout
