// ikllm's own run-time layouts of IQ2_K, IQ3_K, IQ2_KS, IQ3_KS, IQ4_KS, IQ5_KS, IQ2_KL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_K and IQ4_XS (docs/quant-r8.md): made by run-time repack,
// never read from or written to files.
// Q4_K_R8: 8 rows side by side, 1152 bytes per 256 columns (the 8 plain blocks' room), laid out so
// that one 512-bit register holds two 32-weight sub-blocks of all 8 rows and the sub-block scales
// of the 8 rows unpack with a few vector operations:
//   [0, 16)      d of rows 0-7 (fp16)            [16, 32)  dmin of rows 0-7 (fp16)
//   [32, 96)     byte 32 + 8j + r: low 4 bits of scale (bits 0-3) and min (bits 4-7) of sub-block j, row r
//   [96, 128)    byte 96 + 8(j % 4) + r, bits 4(j / 4) + 0..1: scale bits 4-5; + 2..3: min bits 4-5
//   [128, 1152)  codes: sub-blocks 2p and 2p + 1 (p = 0..3) in 256 bytes at 128 + 256p; column
//                vector l = 0..3 in 64 bytes at + 64l: 32 bytes of sub-block 2p, then 32 of 2p + 1;
//                byte 4r + i of those 32 holds column 4l + i (low nibble) and 16 + 4l + i (high
//                nibble) of row r (the Q4_0_R8 byte map per 32-weight sub-block).
// Lossless both ways: unpacking gives back the plain blocks byte for byte.
// Every function here has internal linkage (static): kernel files compiled for different
// instruction sets include this header, and a shared out-of-line copy could be taken from an
// AVX-512 object by the linker and run on a CPU without it.
#pragma once
#include <cstdint>
#include <cstring>

namespace ikllm::quant {

// The 4-byte granules of Q2_K_R8, Q3_K_R8, IQ2_K_R8, IQ3_K_R8, the KS layouts and IQ5_KS_R8's qh: 32 plain bytes of row r (x)
// <-> the 256 group bytes at g: plain bytes 4k.. at 64k + 4r, plain bytes 16 + 4k.. at 64k + 32 + 4r.
static inline void r8_put_granules(const uint8_t* x, uint8_t* g, int r) {
    for (int k = 0; k < 4; ++k) {
        std::memcpy(g + 64 * k + 4 * r, x + 4 * k, 4);
        std::memcpy(g + 64 * k + 32 + 4 * r, x + 16 + 4 * k, 4);
    }
}
static inline void r8_get_granules(const uint8_t* g, uint8_t* x, int r) {
    for (int k = 0; k < 4; ++k) {
        std::memcpy(x + 4 * k, g + 64 * k + 4 * r, 4);
        std::memcpy(x + 16 + 4 * k, g + 64 * k + 32 + 4 * r, 4);
    }
}

inline constexpr int kQ4KR8Rows = 8;
inline constexpr int kQ4KR8Bytes = 1152;  // per 256 columns of the 8 rows
inline constexpr int kQ4KBlockBytes = 144;

// Byte of the 1152 holding column c (0..31) of sub-block j of row r; the code is its low nibble
// when c < 16, else its high nibble.
static inline int q4k_r8_code_byte(int j, int c, int r) {
    return 128 + 256 * (j >> 1) + 64 * ((c & 15) >> 2) + 32 * (j & 1) + 4 * r + (c & 3);
}

// The 12-byte Q4_K scale pack <-> 8 (scale, min) pairs of 6 bits (quant-formats.md §6.1).
static inline void q4k_r8_kscales(const uint8_t* S, int sc[8], int m[8]) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = S[j] & 63;
        m[j] = S[j + 4] & 63;
        sc[j + 4] = (S[j + 8] & 15) | (S[j] >> 6) << 4;
        m[j + 4] = (S[j + 8] >> 4) | (S[j + 4] >> 6) << 4;
    }
}

// 8 plain Q4_K blocks (b[r] for row r) -> one 1152-byte group block.
static inline void q4k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    std::memset(dst, 0, kQ4KR8Bytes);
    for (int r = 0; r < 8; ++r) {
        std::memcpy(dst + 2 * r, b[r], 2);
        std::memcpy(dst + 16 + 2 * r, b[r] + 2, 2);
        int sc[8], m[8];
        q4k_r8_kscales(b[r] + 4, sc, m);
        for (int j = 0; j < 8; ++j) {
            dst[32 + 8 * j + r] = (uint8_t)((sc[j] & 15) | (m[j] & 15) << 4);
            dst[96 + 8 * (j & 3) + r] |= (uint8_t)(((sc[j] >> 4) | (m[j] >> 4) << 2) << (4 * (j >> 2)));
        }
        // Plain byte 32g + c: column c of sub-block 2g (low nibble) and 2g + 1 (high nibble); the
        // group byte of (2g, c) also holds (2g, c + 16), the one 32 bytes on (2g + 1, c), (2g + 1, c + 16).
        const uint8_t* qs = b[r] + 16;
        for (int g = 0; g < 4; ++g)
            for (int c = 0; c < 16; ++c) {
                const uint8_t lo = qs[32 * g + c], hi = qs[32 * g + c + 16];
                uint8_t* o = dst + q4k_r8_code_byte(2 * g, c, r);
                o[0] = (uint8_t)((lo & 15) | (hi & 15) << 4);
                o[32] = (uint8_t)((lo >> 4) | (hi & 0xF0));
            }
    }
}

// One 1152-byte group block -> the 8 plain Q4_K blocks (b[r] for row r, 144 bytes each).
static inline void q4k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* o = b[r];
        std::memcpy(o, src + 2 * r, 2);
        std::memcpy(o + 2, src + 16 + 2 * r, 2);
        int sc[8], m[8];
        for (int j = 0; j < 8; ++j) {
            const int lo = src[32 + 8 * j + r], hi = (src[96 + 8 * (j & 3) + r] >> (4 * (j >> 2))) & 15;
            sc[j] = (lo & 15) | (hi & 3) << 4;
            m[j] = (lo >> 4) | (hi >> 2) << 4;
        }
        uint8_t* S = o + 4;
        for (int j = 0; j < 4; ++j) {
            S[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
            S[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
            S[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
        }
        for (int g = 0; g < 4; ++g)
            for (int c = 0; c < 16; ++c) {  // the inverse of the packing's byte pairs
                const uint8_t* i = src + q4k_r8_code_byte(2 * g, c, r);
                o[16 + 32 * g + c] = (uint8_t)((i[0] & 15) | (i[32] & 15) << 4);
                o[16 + 32 * g + c + 16] = (uint8_t)((i[0] >> 4) | (i[32] & 0xF0));
            }
    }
}


}  // namespace ikllm::quant

namespace ikllm::quant {

// Q6_K_R8: ikllm's run-time layout of Q6_K, 1680 bytes per 256 columns of 8 rows (the 8 plain
// blocks' room). The plain blocks' code bytes are kept and only interleaved in 4-byte granules,
// so a 512-bit register holds one granule of all 8 rows in both 128-weight halves (lanes 0-7 half
// 0, 8-15 half 1) and unpacking is a transpose of granules:
//   [0, 16)       d of rows 0-7 (fp16)
//   [16, 144)     scales (int8): 16 bytes at 16 + 16s (s = 0..7): sc[s] of rows 0-7, then sc[8 + s]
//   [144, 1168)   ql: 64 bytes at 144 + 64g (g = 0..15): plain ql bytes 4g..4g+3 of half 0 of rows
//                 0-7 (4 bytes per row), then those of half 1 (plain bytes 64 + 4g..)
//   [1168, 1680)  qh: 64 bytes at 1168 + 64g (g = 0..7): plain qh bytes 4g.. of half 0, then half 1
inline constexpr int kQ6KR8Bytes = 1680;
inline constexpr int kQ6KBlockBytes = 210;

// Plain byte o (0..209) of a row's Q6_K block <-> its byte in the 8-row group block (row r).
static inline int q6k_r8_byte(int o, int r) {
    if (o < 128) {  // ql: half n = o / 64, granule g = (o % 64) / 4
        const int n = o >> 6, g = (o & 63) >> 2;
        return 144 + 64 * g + 32 * n + 4 * r + (o & 3);
    }
    if (o < 192) {  // qh
        const int n = (o - 128) >> 5, g = ((o - 128) & 31) >> 2;
        return 1168 + 64 * g + 32 * n + 4 * r + (o & 3);
    }
    if (o < 208) {  // scales
        const int s = o - 192;
        return 16 + 16 * (s & 7) + 8 * (s >> 3) + r;
    }
    return 2 * r + (o - 208);  // d
}

static inline void q6k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        for (int o = 0; o < 192; o += 4) std::memcpy(dst + q6k_r8_byte(o, r), x + o, 4);  // ql, qh granules
        for (int o = 192; o < kQ6KBlockBytes; ++o) dst[q6k_r8_byte(o, r)] = x[o];
    }
}
static inline void q6k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* o = b[r];
        for (int g = 0; g < 16; ++g)
            for (int n = 0; n < 2; ++n) std::memcpy(o + 64 * n + 4 * g, src + 144 + 64 * g + 32 * n + 4 * r, 4);
        for (int g = 0; g < 8; ++g)
            for (int n = 0; n < 2; ++n) std::memcpy(o + 128 + 32 * n + 4 * g, src + 1168 + 64 * g + 32 * n + 4 * r, 4);
        for (int s = 0; s < 16; ++s) o[192 + s] = src[16 + 16 * (s & 7) + 8 * (s >> 3) + r];
        std::memcpy(o + 208, src + 2 * r, 2);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// IQ4_K_R8: ikllm's run-time layout of IQ4_K, 1152 bytes per 256 columns of 8 rows. The plain code
// bytes in 4-byte granules (a register: one granule of chunk 2j in lanes 0-7 and of chunk 2j + 1
// in lanes 8-15); per accumulator a = 2j + h (h: low / high nibbles) lane L = row L % 8 of the
// 16-weight sub-block s(a, L) = 4j + h + 2 (L / 8), whose value set bit and scale are stored per lane:
//   [0, 16)      d of rows 0-7 (fp16)
//   [16, 32)     8 uint16 masks: bit L of mask a = extra bit s(a, L) of row L % 8
//   [32, 96)     6-bit scale ls (before - 32) of value i = 16a + L: low 4 bits in byte 32 + i % 64,
//                nibble i / 64; [96, 128) its 2 high bits in byte 96 + i % 32, bits 2 (i / 32)
//   [128, 1152)  codes: 64 bytes at 128 + 256j + 64g: plain qs bytes 32j + 4g.. (chunk 2j) of rows
//                0-7, then plain qs bytes 32j + 16 + 4g.. (chunk 2j + 1)
inline constexpr int kIQ4KR8Bytes = 1152;
inline constexpr int kIQ4KBlockBytes = 144;

static inline int iq4k_r8_sub_block(int a, int lane) { return 4 * (a >> 1) + (a & 1) + 2 * (lane >> 3); }

static inline void iq4k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    std::memset(dst, 0, kIQ4KR8Bytes);
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x, 2);
        const int extra = x[2] | x[3] << 8;
        for (int a = 0; a < 8; ++a)
            for (int half = 0; half < 2; ++half) {
                const int lane = r + 8 * half, s = iq4k_r8_sub_block(a, lane), i = 16 * a + lane;
                if ((extra >> s) & 1) dst[16 + 2 * a + (lane >> 3)] |= (uint8_t)(1 << (lane & 7));
                const int ls = ((x[8 + s / 2] >> (4 * (s % 2))) & 15) | ((x[4 + s / 4] >> (2 * (s % 4))) & 3) << 4;
                dst[32 + (i & 63)] |= (uint8_t)((ls & 15) << (4 * (i >> 6)));
                dst[96 + (i & 31)] |= (uint8_t)((ls >> 4) << (2 * (i >> 5)));
            }
        for (int j = 0; j < 4; ++j)
            for (int g = 0; g < 4; ++g) {
                std::memcpy(dst + 128 + 256 * j + 64 * g + 4 * r, x + 16 + 32 * j + 4 * g, 4);
                std::memcpy(dst + 128 + 256 * j + 64 * g + 32 + 4 * r, x + 16 + 32 * j + 16 + 4 * g, 4);
            }
    }
}
static inline void iq4k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        std::memset(x, 0, 16);
        std::memcpy(x, src + 2 * r, 2);
        int extra = 0;
        for (int a = 0; a < 8; ++a)
            for (int half = 0; half < 2; ++half) {
                const int lane = r + 8 * half, s = iq4k_r8_sub_block(a, lane), i = 16 * a + lane;
                extra |= ((src[16 + 2 * a + (lane >> 3)] >> (lane & 7)) & 1) << s;
                const int ls = ((src[32 + (i & 63)] >> (4 * (i >> 6))) & 15) | ((src[96 + (i & 31)] >> (2 * (i >> 5))) & 3) << 4;
                x[8 + s / 2] |= (uint8_t)((ls & 15) << (4 * (s % 2)));
                x[4 + s / 4] |= (uint8_t)((ls >> 4) << (2 * (s % 4)));
            }
        x[2] = (uint8_t)(extra & 255);
        x[3] = (uint8_t)(extra >> 8);
        for (int j = 0; j < 4; ++j)
            for (int g = 0; g < 4; ++g) {
                std::memcpy(x + 16 + 32 * j + 4 * g, src + 128 + 256 * j + 64 * g + 4 * r, 4);
                std::memcpy(x + 16 + 32 * j + 16 + 4 * g, src + 128 + 256 * j + 64 * g + 32 + 4 * r, 4);
            }
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// IQ4_XS_X8: ikllm's run-time layout of IQ4_XS (named X8: the reference's IQ4_XS_R8 is another,
// file-level layout), 1088 bytes per 256 columns of 8 rows. The codes as in IQ4_K_R8 (a register:
// one 4-byte granule of chunk 2j in lanes 0-7, of chunk 2j + 1 in lanes 8-15, row = lane % 8);
// IQ4_XS has one 6-bit scale per 32-weight chunk, stored per lane: value i = 8c + r (= 16j + L for
// lane L of chunk pair j) is the scale ls (before - 32) of chunk c of row r:
//   [0, 16)      d of rows 0-7 (fp16)
//   [16, 48)     low 4 bits of value i in byte 16 + i % 32, nibble i / 32
//   [48, 64)     its 2 high bits in byte 48 + i % 16, bits 2 (i / 16)
//   [64, 1088)   codes: 64 bytes at 64 + 256j + 64g: plain qs bytes 32j + 4g.. (chunk 2j) of rows
//                0-7, then plain qs bytes 32j + 16 + 4g.. (chunk 2j + 1)
inline constexpr int kIQ4XSX8Bytes = 1088;
inline constexpr int kIQ4XSBlockBytes = 136;

// The 128 plain code bytes of row r (qs) <-> the 1024 group bytes at g (IQ4_XS_X8, IQ4_KS_R8).
static inline void x8_put_codes(const uint8_t* qs, uint8_t* g, int r) {
    for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) {
            std::memcpy(g + 256 * j + 64 * k + 4 * r, qs + 32 * j + 4 * k, 4);
            std::memcpy(g + 256 * j + 64 * k + 32 + 4 * r, qs + 32 * j + 16 + 4 * k, 4);
        }
}
static inline void x8_get_codes(const uint8_t* g, uint8_t* qs, int r) {
    for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) {
            std::memcpy(qs + 32 * j + 4 * k, g + 256 * j + 64 * k + 4 * r, 4);
            std::memcpy(qs + 32 * j + 16 + 4 * k, g + 256 * j + 64 * k + 32 + 4 * r, 4);
        }
}

static inline int iq4xs_x8_value(int chunk, int r) { return 8 * chunk + r; }

static inline void iq4xs_x8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    std::memset(dst, 0, 64);
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x, 2);
        const int sh = x[2] | x[3] << 8;
        for (int c = 0; c < 8; ++c) {
            const int ls = ((x[4 + c / 2] >> (4 * (c % 2))) & 15) | ((sh >> (2 * c)) & 3) << 4, i = iq4xs_x8_value(c, r);
            dst[16 + (i & 31)] |= (uint8_t)((ls & 15) << (4 * (i >> 5)));
            dst[48 + (i & 15)] |= (uint8_t)((ls >> 4) << (2 * (i >> 4)));
        }
        x8_put_codes(x + 8, dst + 64, r);
    }
}
static inline void iq4xs_x8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        std::memset(x, 0, 8);
        std::memcpy(x, src + 2 * r, 2);
        int sh = 0;
        for (int c = 0; c < 8; ++c) {
            const int i = iq4xs_x8_value(c, r);
            const int ls = ((src[16 + (i & 31)] >> (4 * (i >> 5))) & 15) | ((src[48 + (i & 15)] >> (2 * (i >> 4))) & 3) << 4;
            x[4 + c / 2] |= (uint8_t)((ls & 15) << (4 * (c % 2)));
            sh |= (ls >> 4) << (2 * c);
        }
        x[2] = (uint8_t)(sh & 255);
        x[3] = (uint8_t)(sh >> 8);
        x8_get_codes(src + 64, x + 8, r);
    }
}

// IQ4_KS_R8: ikllm's run-time layout of the row-scaled IQ4_KS. The group starts with the 8 rows'
// float32 row scales (32 bytes), then per 256 columns 1088 bytes (the 8 plain blocks' room):
//   [0, 64)      byte 8c + r (= 16j + L for lane L of chunk pair j): plain scale byte c of row r
//                (bit 0 the value set, bits 1-7 the scale + 127)
//   [64, 1088)   codes as IQ4_XS_X8's
inline constexpr int kIQ4KSR8Bytes = 1088;
inline constexpr int kIQ4KSBlockBytes = 136;
inline constexpr int kIQ4KSMetaBytes = 4;

static inline void iq4ks_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        for (int c = 0; c < 8; ++c) dst[8 * c + r] = b[r][c];
        x8_put_codes(b[r] + 8, dst + 64, r);
    }
}
static inline void iq4ks_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        for (int c = 0; c < 8; ++c) b[r][c] = src[8 * c + r];
        x8_get_codes(src + 64, b[r] + 8, r);
    }
}

// IQ5_KS_R8: ikllm's run-time layout of the row-scaled IQ5_KS, float32 row scales at the group's
// head as IQ4_KS_R8's, then per 256 columns 1344 bytes (the 8 plain blocks' room):
//   [0, 64)       the scale bytes as IQ4_KS_R8's
//   [64, 1088)    qs (low 4 bits, P4K: byte 32g + l holds column l of chunk 2g and of 2g + 1):
//                 64 bytes at 64 + 256g + 64k: plain bytes 32g + 4k.. of rows 0-7, then 32g + 16 + 4k..
//   [1088, 1344)  qh (bit c of byte l: column l of chunk c): 64 bytes at 1088 + 64k: plain bytes
//                 4k.. of rows 0-7, then 16 + 4k..
// So a qs register holds, per row, columns 4k.. (lanes 0-7) and 16 + 4k.. (8-15) of chunk 2g in its
// low nibbles and of chunk 2g + 1 in its high ones, and the qh register of the same k their fifth bits.
inline constexpr int kIQ5KSR8Bytes = 1344;
inline constexpr int kIQ5KSBlockBytes = 168;

static inline void iq5ks_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        for (int c = 0; c < 8; ++c) dst[8 * c + r] = b[r][c];
        x8_put_codes(b[r] + 8, dst + 64, r);
        r8_put_granules(b[r] + 136, dst + 1088, r);
    }
}
static inline void iq5ks_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        for (int c = 0; c < 8; ++c) b[r][c] = src[8 * c + r];
        x8_get_codes(src + 64, b[r] + 8, r);
        r8_get_granules(src + 1088, b[r] + 136, r);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// Q2_K_R8: ikllm's run-time layout of Q2_K, 672 bytes per 256 columns of 8 rows. The plain code
// bytes in 4-byte granules as IQ4_K_R8's (one granule holds 4 columns at each of the 4 bit
// shifts), so a register holds, per shift j, 4 columns of sub-block 8n + 2j (lanes 0-7) and of
// 8n + 2j + 1 (lanes 8-15) for the 8 rows:
//   [0, 16)      d of rows 0-7 (fp16)             [16, 32)  dmin of rows 0-7 (fp16)
//   [32, 160)    the plain scale bytes (scale | min << 4): sub-block s of row r at 32 + 8s + r
//   [160, 672)   codes: 64 bytes at 160 + 256n + 64g: plain qs bytes 32n + 4g.. of rows 0-7, then
//                plain qs bytes 32n + 16 + 4g.. (n = 0, 1 the 128-weight halves, g = 0..3)
inline constexpr int kQ2KR8Bytes = 672;
inline constexpr int kQ2KBlockBytes = 84;

static inline void q2k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x + 80, 2);
        std::memcpy(dst + 16 + 2 * r, x + 82, 2);
        for (int s = 0; s < 16; ++s) dst[32 + 8 * s + r] = x[s];
        for (int n = 0; n < 2; ++n) r8_put_granules(x + 16 + 32 * n, dst + 160 + 256 * n, r);
    }
}
static inline void q2k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        std::memcpy(x + 80, src + 2 * r, 2);
        std::memcpy(x + 82, src + 16 + 2 * r, 2);
        for (int s = 0; s < 16; ++s) x[s] = src[32 + 8 * s + r];
        for (int n = 0; n < 2; ++n) r8_get_granules(src + 160 + 256 * n, x + 16 + 32 * n, r);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// Q3_K_R8: ikllm's run-time layout of Q3_K, 880 bytes per 256 columns of 8 rows: the code and
// high-bit bytes in the granules of Q2_K_R8 (hmask granules serve both 128-weight halves, at bit
// 4n + j), the 16 signed 6-bit scales per row stored per lane as IQ4_K_R8's (value i = 16p + L:
// sub-block 2p + L / 8 of row L % 8, as sc + 32):
//   [0, 16)      d of rows 0-7 (fp16)
//   [16, 112)    sc + 32 of value i: low 4 bits in byte 16 + i % 64, nibble i / 64; the 2 high bits
//                in byte 80 + i % 32, bits 2 (i / 32)
//   [112, 368)   hmask: 64 bytes at 112 + 64g: plain hmask bytes 4g.. of rows 0-7, then 16 + 4g..
//   [368, 880)   qs: 64 bytes at 368 + 256n + 64g: plain qs bytes 32n + 4g.., then 32n + 16 + 4g..
inline constexpr int kQ3KR8Bytes = 880;
inline constexpr int kQ3KBlockBytes = 110;

static inline int q3k_r8_value(int s, int r) { return 16 * (s >> 1) + 8 * (s & 1) + r; }

static inline void q3k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    std::memset(dst + 16, 0, 96);
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x + 108, 2);
        const uint8_t* S = x + 96;
        for (int s = 0; s < 16; ++s) {
            const int low4 = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4), high2 = (S[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
            const int i = q3k_r8_value(s, r);
            dst[16 + (i & 63)] |= (uint8_t)(low4 << (4 * (i >> 6)));
            dst[80 + (i & 31)] |= (uint8_t)(high2 << (2 * (i >> 5)));
        }
        r8_put_granules(x, dst + 112, r);
        for (int n = 0; n < 2; ++n) r8_put_granules(x + 32 + 32 * n, dst + 368 + 256 * n, r);
    }
}
static inline void q3k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        std::memcpy(x + 108, src + 2 * r, 2);
        uint8_t* S = x + 96;
        std::memset(S, 0, 12);
        for (int s = 0; s < 16; ++s) {
            const int i = q3k_r8_value(s, r);
            const int low4 = (src[16 + (i & 63)] >> (4 * (i >> 6))) & 15, high2 = (src[80 + (i & 31)] >> (2 * (i >> 5))) & 3;
            S[s & 7] |= (uint8_t)(low4 << (4 * (s >> 3)));
            S[8 + (s & 3)] |= (uint8_t)(high2 << (2 * (s >> 2)));
        }
        r8_get_granules(src + 112, x, r);
        for (int n = 0; n < 2; ++n) r8_get_granules(src + 368 + 256 * n, x + 32 + 32 * n, r);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// Q5_K_R8: ikllm's run-time layout of Q5_K, 1408 bytes per 256 columns of 8 rows: Q4_K_R8's 1152
// bytes for d, dmin, the scales and the low 4 bits of the codes (the plain Q5_K fields moved to
// Q4_K's places), then the fifth bits in the byte map of those code bytes:
//   [1152, 1408)  64 bytes per sub-block pair p at 1152 + 64p: bit 2l (2l + 1) of byte B is the
//                 fifth bit of the low (high) nibble's code in byte B of code vector l of pair p
//                 (byte 128 + 256p + 64l + B)
inline constexpr int kQ5KR8Bytes = 1408;
inline constexpr int kQ5KBlockBytes = 176;

// The byte (1152 + 64p + B) and bit of the fifth bit of column c (0..31) of sub-block j of row r.
static inline int q5k_r8_hbit_byte(int j, int c, int r) { return 1152 + 64 * (j >> 1) + 32 * (j & 1) + 4 * r + (c & 3); }
static inline int q5k_r8_hbit_shift(int c) { return 2 * ((c & 15) >> 2) + (c >> 4); }

static inline void q5k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    uint8_t q4[8][kQ4KBlockBytes];  // each row as a Q4_K block: d, dmin, scales, qs
    const uint8_t* v[8];
    for (int r = 0; r < 8; ++r) {
        std::memcpy(q4[r], b[r], 16);
        std::memcpy(q4[r] + 16, b[r] + 48, 128);
        v[r] = q4[r];
    }
    q4k_r8_pack_block(v, dst);
    std::memset(dst + kQ4KR8Bytes, 0, kQ5KR8Bytes - kQ4KR8Bytes);
    for (int r = 0; r < 8; ++r)
        for (int j = 0; j < 8; ++j)
            for (int c = 0; c < 32; ++c)
                if ((b[r][16 + c] >> j) & 1) dst[q5k_r8_hbit_byte(j, c, r)] |= (uint8_t)(1u << q5k_r8_hbit_shift(c));
}
static inline void q5k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    uint8_t q4[8][kQ4KBlockBytes];
    uint8_t* v[8];
    for (int r = 0; r < 8; ++r) v[r] = q4[r];
    q4k_r8_unpack_block(src, v);
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        std::memcpy(x, q4[r], 16);
        std::memcpy(x + 48, q4[r] + 16, 128);
        std::memset(x + 16, 0, 32);
        for (int j = 0; j < 8; ++j)
            for (int c = 0; c < 32; ++c)
                x[16 + c] |= (uint8_t)(((src[q5k_r8_hbit_byte(j, c, r)] >> q5k_r8_hbit_shift(c)) & 1) << j);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// IQ2_K_R8: ikllm's run-time layout of IQ2_K, 608 bytes per 256 columns of 8 rows (the 8 plain
// blocks' room). Codes in Q2_K_R8's granules, so a register holds, per shift j, 4 columns of
// sub-blocks 8n + 2j (lanes 0-7) and 8n + 2j + 1 (lanes 8-15) of the 8 rows:
//   [0, 16)     d of rows 0-7 (fp16)          [16, 32)  extra (value-set bits) of rows 0-7 (u16)
//   [32, 96)    the plain scale bytes (nibbles of sub-blocks 2p, 2p + 1): byte p of row r at 32 + 8p + r
//   [96, 608)   codes: 64 bytes at 96 + 256n + 64g: plain qs bytes 32n + 4g.. of rows 0-7, then
//               plain qs bytes 32n + 16 + 4g.. (n = 0, 1 the 128-weight halves, g = 0..3)
inline constexpr int kIQ2KR8Bytes = 608;
inline constexpr int kIQ2KBlockBytes = 76;

static inline void iq2k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x, 2);
        std::memcpy(dst + 16 + 2 * r, x + 2, 2);
        for (int p = 0; p < 8; ++p) dst[32 + 8 * p + r] = x[4 + p];
        for (int n = 0; n < 2; ++n) r8_put_granules(x + 12 + 32 * n, dst + 96 + 256 * n, r);
    }
}
// Row r's d, extra and scale bytes (the plain block's first 12) from the group block.
static inline void iq2k_r8_get_meta(const uint8_t* src, uint8_t* x, int r) {
    std::memcpy(x, src + 2 * r, 2);
    std::memcpy(x + 2, src + 16 + 2 * r, 2);
    for (int p = 0; p < 8; ++p) x[4 + p] = src[32 + 8 * p + r];
}
static inline void iq2k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        iq2k_r8_get_meta(src, x, r);
        for (int n = 0; n < 2; ++n) r8_get_granules(src + 96 + 256 * n, x + 12 + 32 * n, r);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// IQ3_K_R8: ikllm's run-time layout of IQ3_K, 880 bytes per 256 columns of 8 rows: codes and
// high-bit plane in Q3_K_R8's granules, scales and value-set bits as IQ2_K_R8's:
//   [0, 16)     d of rows 0-7 (fp16)     [16, 32) extra of rows 0-7 (u16)    [32, 48) scale signs (u16)
//   [48, 112)   the plain scale-nibble bytes: byte p of row r at 48 + 8p + r
//   [112, 368)  qh: 64 bytes at 112 + 64g: plain qh bytes 4g.. of rows 0-7, then 16 + 4g..
//   [368, 880)  qs: 64 bytes at 368 + 256n + 64g: plain qs bytes 32n + 4g.., then 32n + 16 + 4g..
inline constexpr int kIQ3KR8Bytes = 880;
inline constexpr int kIQ3KBlockBytes = 110;

static inline void iq3k_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x, 2);
        std::memcpy(dst + 16 + 2 * r, x + 2, 2);
        std::memcpy(dst + 32 + 2 * r, x + 4, 2);
        for (int p = 0; p < 8; ++p) dst[48 + 8 * p + r] = x[6 + p];
        r8_put_granules(x + 78, dst + 112, r);
        for (int n = 0; n < 2; ++n) r8_put_granules(x + 14 + 32 * n, dst + 368 + 256 * n, r);
    }
}
// Row r's d, extra, scale signs and scale bytes (the plain block's first 14) from the group block.
static inline void iq3k_r8_get_meta(const uint8_t* src, uint8_t* x, int r) {
    std::memcpy(x, src + 2 * r, 2);
    std::memcpy(x + 2, src + 16 + 2 * r, 2);
    std::memcpy(x + 4, src + 32 + 2 * r, 2);
    for (int p = 0; p < 8; ++p) x[6 + p] = src[48 + 8 * p + r];
}
static inline void iq3k_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        iq3k_r8_get_meta(src, x, r);
        r8_get_granules(src + 112, x + 78, r);
        for (int n = 0; n < 2; ++n) r8_get_granules(src + 368 + 256 * n, x + 14 + 32 * n, r);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// IQ2_KS_R8 and IQ3_KS_R8: ikllm's run-time layouts of the row-scaled IQ2_KS / IQ3_KS. An 8-row
// group starts with the 8 rows' fp16 row scales (16 bytes, the rows' metadata), then one group
// block per 256 columns in the 8 plain blocks' room (560 / 816 bytes):
//   [0, 8)     byte r: row r's value-set bits (bit c: 32-weight chunk c; IQ2_KS extra's low byte,
//              IQ3_KS extra's high byte)
//   [8, 16)    byte r: row r's fifth scale bits (the other byte of extra)
//   [16, 48)   the plain scale-nibble bytes: byte q of row r at 16 + 8q + r
//   IQ2_KS_R8: [48, 560)  codes as Q2_K_R8's: 64 bytes at 48 + 256n + 64g
//   IQ3_KS_R8: [48, 304)  qh as Q3_K_R8's hmask; [304, 816) qs as Q2_K_R8's, at 304 + 256n + 64g
inline constexpr int kIQ2KSR8Bytes = 560, kIQ2KSBlockBytes = 70;
inline constexpr int kIQ3KSR8Bytes = 816, kIQ3KSBlockBytes = 102;
inline constexpr int kIQ23KSMetaBytes = 2;  // per row: the fp16 row scale

// The first 6 bytes of a plain block (extra, scale nibbles) of row r <-> the group block's 48;
// set_low: the value-set bits are extra's low byte (IQ2_KS), else its high byte (IQ3_KS).
template <bool SetLow>
static inline void ks_r8_put_meta(const uint8_t* x, uint8_t* dst, int r) {
    dst[r] = x[SetLow ? 0 : 1];
    dst[8 + r] = x[SetLow ? 1 : 0];
    for (int q = 0; q < 4; ++q) dst[16 + 8 * q + r] = x[2 + q];
}
template <bool SetLow>
static inline void ks_r8_get_meta(const uint8_t* src, uint8_t* x, int r) {
    x[SetLow ? 0 : 1] = src[r];
    x[SetLow ? 1 : 0] = src[8 + r];
    for (int q = 0; q < 4; ++q) x[2 + q] = src[16 + 8 * q + r];
}

static inline void iq2ks_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        ks_r8_put_meta<true>(b[r], dst, r);
        for (int n = 0; n < 2; ++n) r8_put_granules(b[r] + 6 + 32 * n, dst + 48 + 256 * n, r);
    }
}
static inline void iq2ks_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        ks_r8_get_meta<true>(src, b[r], r);
        for (int n = 0; n < 2; ++n) r8_get_granules(src + 48 + 256 * n, b[r] + 6 + 32 * n, r);
    }
}
static inline void iq3ks_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        ks_r8_put_meta<false>(b[r], dst, r);
        r8_put_granules(b[r] + 70, dst + 48, r);
        for (int n = 0; n < 2; ++n) r8_put_granules(b[r] + 6 + 32 * n, dst + 304 + 256 * n, r);
    }
}
static inline void iq3ks_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        ks_r8_get_meta<false>(src, b[r], r);
        r8_get_granules(src + 48, b[r] + 70, r);
        for (int n = 0; n < 2; ++n) r8_get_granules(src + 304 + 256 * n, b[r] + 6 + 32 * n, r);
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// IQ2_KL_R8: ikllm's run-time layout of the row-scaled IQ2_KL (5-bit codes of weight pairs through
// a 32-entry codebook). The group starts with the 8 rows' fp16 row scales (16 bytes), then per 256
// columns 688 bytes (the 8 plain blocks' room):
//   [0, 16)     scales_h of rows 0-7 (u16)
//   [16, 48)    scales_l: plain byte q of row r at 16 + 8q + r
//   [48, 560)   qs: 128 bytes per 64-weight group c: plain qs byte 16c + p (pair p = 0..15: low
//               nibble the pair's code in chunk 2c, high in 2c + 1) of row r at 48 + 128c + pos(p, r)
//   [560, 688)  qh: plain qh byte p of row r at 560 + pos(p, r)
// with pos(p, r) = 64 (p / 8) + 16 (p / 2 % 4) + 2r + p % 2: a 128-bit lane i of the 64 bytes at
// p / 8 holds pairs 2i, 2i + 1 (of that half) of rows 0-7, so interleaving the two codebook bytes of
// its codes (unpacklo / unpackhi) gives 4 columns of rows 0-3 / 4-7 per dword.
inline constexpr int kIQ2KLR8Bytes = 688, kIQ2KLBlockBytes = 86;

static inline int iq2kl_r8_pos(int p, int r) { return 64 * (p >> 3) + 16 * ((p >> 1) & 3) + 2 * r + (p & 1); }

static inline void iq2kl_r8_pack_block(const uint8_t* const b[8], uint8_t* dst) {
    for (int r = 0; r < 8; ++r) {
        const uint8_t* x = b[r];
        std::memcpy(dst + 2 * r, x, 2);
        for (int q = 0; q < 4; ++q) dst[16 + 8 * q + r] = x[2 + q];
        for (int p = 0; p < 16; ++p) {
            for (int c = 0; c < 4; ++c) dst[48 + 128 * c + iq2kl_r8_pos(p, r)] = x[6 + 16 * c + p];
            dst[560 + iq2kl_r8_pos(p, r)] = x[70 + p];
        }
    }
}
static inline void iq2kl_r8_unpack_block(const uint8_t* src, uint8_t* const b[8]) {
    for (int r = 0; r < 8; ++r) {
        uint8_t* x = b[r];
        std::memcpy(x, src + 2 * r, 2);
        for (int q = 0; q < 4; ++q) x[2 + q] = src[16 + 8 * q + r];
        for (int p = 0; p < 16; ++p) {
            for (int c = 0; c < 4; ++c) x[6 + 16 * c + p] = src[48 + 128 * c + iq2kl_r8_pos(p, r)];
            x[70 + p] = src[560 + iq2kl_r8_pos(p, r)];
        }
    }
}

}  // namespace ikllm::quant

namespace ikllm::quant {

// Per 256 columns: 8 plain blocks <-> one group block.
using R8PackBlockFn = void (*)(const uint8_t* const b[8], uint8_t* dst);
using R8UnpackBlockFn = void (*)(const uint8_t* src, uint8_t* const b[8]);
using R8UnpackGroupFn = void (*)(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0);

// Rows [0, 8) of a group (ne0 columns, 256 | ne0) into 8 plain rows of rb bytes. Meta: bytes of
// row metadata, stored for the 8 rows at the group's start (before its blocks).
template <int PlainBytes, int GroupBytes, R8UnpackBlockFn Unpack, int Meta = 0>
static inline void r8_unpack_group(const uint8_t* group, uint8_t* rows, size_t rb, int64_t ne0) {
    for (int r = 0; r < 8 && Meta > 0; ++r) std::memcpy(rows + rb * (size_t)r, group + Meta * r, Meta);
    for (int64_t blk = 0; blk < ne0 / 256; ++blk) {
        uint8_t* b[8];
        for (int r = 0; r < 8; ++r) b[r] = rows + rb * (size_t)r + Meta + PlainBytes * (size_t)blk;
        Unpack(group + 8 * Meta + GroupBytes * (size_t)blk, b);
    }
}
static constexpr R8UnpackGroupFn q4k_r8_unpack_group = r8_unpack_group<kQ4KBlockBytes, kQ4KR8Bytes, q4k_r8_unpack_block>;
static constexpr R8UnpackGroupFn q6k_r8_unpack_group = r8_unpack_group<kQ6KBlockBytes, kQ6KR8Bytes, q6k_r8_unpack_block>;
static constexpr R8UnpackGroupFn iq4k_r8_unpack_group = r8_unpack_group<kIQ4KBlockBytes, kIQ4KR8Bytes, iq4k_r8_unpack_block>;
static constexpr R8UnpackGroupFn iq4xs_x8_unpack_group = r8_unpack_group<kIQ4XSBlockBytes, kIQ4XSX8Bytes, iq4xs_x8_unpack_block>;
static constexpr R8UnpackGroupFn q2k_r8_unpack_group = r8_unpack_group<kQ2KBlockBytes, kQ2KR8Bytes, q2k_r8_unpack_block>;
static constexpr R8UnpackGroupFn q3k_r8_unpack_group = r8_unpack_group<kQ3KBlockBytes, kQ3KR8Bytes, q3k_r8_unpack_block>;
static constexpr R8UnpackGroupFn q5k_r8_unpack_group = r8_unpack_group<kQ5KBlockBytes, kQ5KR8Bytes, q5k_r8_unpack_block>;
static constexpr R8UnpackGroupFn iq2k_r8_unpack_group = r8_unpack_group<kIQ2KBlockBytes, kIQ2KR8Bytes, iq2k_r8_unpack_block>;
static constexpr R8UnpackGroupFn iq3k_r8_unpack_group = r8_unpack_group<kIQ3KBlockBytes, kIQ3KR8Bytes, iq3k_r8_unpack_block>;
static constexpr R8UnpackGroupFn iq2ks_r8_unpack_group =
    r8_unpack_group<kIQ2KSBlockBytes, kIQ2KSR8Bytes, iq2ks_r8_unpack_block, kIQ23KSMetaBytes>;
static constexpr R8UnpackGroupFn iq2kl_r8_unpack_group =
    r8_unpack_group<kIQ2KLBlockBytes, kIQ2KLR8Bytes, iq2kl_r8_unpack_block, kIQ23KSMetaBytes>;
static constexpr R8UnpackGroupFn iq3ks_r8_unpack_group =
    r8_unpack_group<kIQ3KSBlockBytes, kIQ3KSR8Bytes, iq3ks_r8_unpack_block, kIQ23KSMetaBytes>;
static constexpr R8UnpackGroupFn iq4ks_r8_unpack_group =
    r8_unpack_group<kIQ4KSBlockBytes, kIQ4KSR8Bytes, iq4ks_r8_unpack_block, kIQ4KSMetaBytes>;
static constexpr R8UnpackGroupFn iq5ks_r8_unpack_group =
    r8_unpack_group<kIQ5KSBlockBytes, kIQ5KSR8Bytes, iq5ks_r8_unpack_block, kIQ4KSMetaBytes>;

}  // namespace ikllm::quant
