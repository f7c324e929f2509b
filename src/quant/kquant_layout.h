// Bit layouts shared by the K-quant and ik K/KS formats (docs: quant-formats.md §6.1):
// read and write one code of a 256-weight block. Writers expect a zeroed destination.
#pragma once
#include <cstdint>

namespace ikllm::quant::layout {

// P2: 2-bit planes, 64 bytes.
inline int p2_get(const uint8_t* q, int w) { return (q[32 * (w >> 7) + (w & 31)] >> (2 * ((w & 127) >> 5))) & 3; }
inline void p2_put(uint8_t* q, int w, int v) { q[32 * (w >> 7) + (w & 31)] |= (uint8_t)((v & 3) << (2 * ((w & 127) >> 5))); }
// HB: high-bit plane, 32 bytes.
inline int hb_get(const uint8_t* h, int w) { return (h[w & 31] >> (w >> 5)) & 1; }
inline void hb_put(uint8_t* h, int w, int v) { h[w & 31] |= (uint8_t)((v & 1) << (w >> 5)); }
// P4K: 4-bit K layout, 128 bytes (32-byte groups hold 64 weights: low nibbles then high nibbles).
inline int p4k_get(const uint8_t* q, int w) { return (q[32 * (w >> 6) + (w & 31)] >> (4 * ((w >> 5) & 1))) & 15; }
inline void p4k_put(uint8_t* q, int w, int v) { q[32 * (w >> 6) + (w & 31)] |= (uint8_t)((v & 15) << (4 * ((w >> 5) & 1))); }
// P4N: NL4 layout per 32 weights, 128 bytes.
inline int p4n_get(const uint8_t* q, int w) { return (q[16 * (w >> 5) + (w & 15)] >> (4 * ((w & 31) >> 4))) & 15; }
inline void p4n_put(uint8_t* q, int w, int v) { q[16 * (w >> 5) + (w & 15)] |= (uint8_t)((v & 15) << (4 * ((w & 31) >> 4))); }
// Nibble s%2 of byte s/2 (scale arrays).
inline int nib_get(const uint8_t* b, int s) { return (b[s >> 1] >> (4 * (s & 1))) & 15; }
inline void nib_put(uint8_t* b, int s, int v) { b[s >> 1] |= (uint8_t)((v & 15) << (4 * (s & 1))); }

// K-scale pack (Q4_K, Q5_K): 12 bytes <-> 8 (scale, min) pairs of 6 bits.
inline void kscale_get(const uint8_t* S, int j, int* sc, int* m) {
    if (j < 4) {
        *sc = S[j] & 63;
        *m = S[j + 4] & 63;
    } else {
        *sc = (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4);
        *m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4);
    }
}
inline void kscale_put(uint8_t* S, const int* sc, const int* m) {
    for (int k = 0; k < 12; ++k) S[k] = 0;
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            S[j] |= (uint8_t)(sc[j] & 63);
            S[j + 4] |= (uint8_t)(m[j] & 63);
        } else {
            S[j + 4] |= (uint8_t)((sc[j] & 15) | ((m[j] & 15) << 4));
            S[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            S[j] |= (uint8_t)((m[j] >> 4) << 6);
        }
    }
}

// Q3_K scale pack: 12 bytes <-> 16 signed scales in [-32, 31].
inline int q3scale_get(const uint8_t* S, int s) {
    const int low4 = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4);
    const int high2 = (S[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
    return (low4 | high2 << 4) - 32;
}
inline void q3scale_put(uint8_t* S, const int* sc) {
    for (int k = 0; k < 12; ++k) S[k] = 0;
    for (int s = 0; s < 16; ++s) {
        const int u = sc[s] + 32;
        if (s < 8) S[s] |= (uint8_t)(u & 15);
        else S[s - 8] |= (uint8_t)((u & 15) << 4);
        S[8 + (s & 3)] |= (uint8_t)(((u >> 4) & 3) << (2 * (s >> 2)));
    }
}

}  // namespace ikllm::quant::layout
