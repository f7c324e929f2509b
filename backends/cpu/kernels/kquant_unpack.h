// Kernel-side view of the K-quant and ik K/KS weight blocks (kquant_*.cpp, iqk_*.cpp kernels).
// Every weight block is reduced to 256 small integers v, a 16-bit scale per 16 weights and a
// per-16 coefficient of the activation's block sums, so that against one Q8_K activation block
// (d_a, codes a, bsums) the dot product is
//     d_a * ( dw * sum_s sc_s * sum_{j in s} v_j a_j  +  dc * sum_s corr_s * bsums_s ).
// The correction term absorbs mins (Q2_K/Q4_K/Q5_K), code offsets that make v unsigned (Q3_K,
// Q6_K, and the +128 of the "sat" types below) and the shifted second value set of the ik types
// (that set = first set + constant), so only the first set's levels appear in v. IQ6_K uses the
// integer level table iq6nl (as the reference's matmul does), not the polynomial of its to_float.
//
// The kernels reproduce the reference's CPU numerics (measured against the reference logits of
// refdata/quant), which are not those of an exact dot product in three places:
//  * Activations: Q8_K for every type here except Q4_K, Q5_K and Q6_K, whose kernels take
//    Q8_2_X4 (quant-formats.md §15: one bf16 scale and one int16 code sum per 32 weights).
//    Against one 32-weight activation block j (d_j, codes a) a weight block contributes
//        d_j * ( dw * sum_{s in j} sc_s * sum_{i in s} v_i a_i  +  dc * sum_{s in j} corr_s * bsum_s )
//    with bsum_s the per-16 code sums (Q4_K/Q5_K: corr is constant per 32, so the SIMD kernels
//    use the stored per-32 sum; the Q6_K SIMD kernels use signed levels and no correction).
//  * "sat" types (IQ4_XS, IQ4_K, IQ5_K, IQ6_K, IQ4_KS, IQ4_KSS, IQ5_KS), batches below
//    kConvMinTokens: the reference multiplies the levels as unsigned bytes level + 128 with
//    x86 maddubs, whose int16 pair sums saturate: per 16 weights
//        sum over pairs (2i, 2i+1) of sat16((l0+128) a0 + (l1+128) a1)  -  128 * bsum.
//    Here v holds level + 128 (unsigned) and corr includes the -128 * sc. Saturation is common
//    (large levels times large codes) and moves logits by several percent; reproducing it is
//    what makes single-token decoding match the reference.
//  * "conv" types, batches of kConvMinTokens tokens or more: the reference first re-encodes the
//    weights. Every Q8_K type here becomes 8-bit rows with one fp16 scale per 256 (Q8_K_R8):
//    with exact integers P = sc * level, dnew = max|P| * d0 (float; d0 = 1/127, but 1/120 for
//    IQ2_K and 1/125 for IQ2_KS / IQ2_KL); P is kept when dnew < 1 (then dnew = 1), else
//    q = RNE(P * (1/dnew)); the block scale is fp16(dw * dnew) and the dot q . a is exact.
//    Q2_K (affine) is re-encoded from its float values w = d*sc*q - dmin*m: dnew = max|w| / 127,
//    q = RNE(w * (1/dnew)), scale fp16(dnew). Q4_K / Q5_K keep their codes but round the per-32
//    scales dw*sc and dc*m to fp16 (Q8_1-style repacking). Q6_K stays direct at these sizes.
// All integer sums are exact (after the emulated saturation); only float combinations round.
//
// Everything here sits in an anonymous namespace and calls no shared inline function of other
// headers: each kernel file compiles its own copy with its own instruction-set flags (an
// out-of-line copy of a shared inline function could otherwise be taken from an AVX-512 file
// by the linker and run on a CPU without AVX-512).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include "kernels/matmul.h"
#include "quant/act_q8_k.h"
#include "quant/quant_tables.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

// The one Q8_K activation format object (defined in kquant_scalar.cpp).
const ActFormat* act_format_q8_k_kiqk();

namespace {

// Batches with at least this many tokens take the re-encoded ("conv") path (see above).
inline constexpr int64_t kConvMinTokens = 32;

struct KBlock {
    int8_t v[256];
    int16_t sc[16];
    int16_t corr[16];
    float dw, dc;
};

namespace tabs = quant::tables;

inline uint16_t rd_u16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t rd_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline float rd_f32(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }

// Exact fp16 -> float: shift the 15 magnitude bits into float position and rescale by 2^112
// (also right for subnormals); exponent 31 becomes 255 (inf / NaN).
inline float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t mag = (uint32_t)(h & 0x7fffu) << 13;
    float f;
    if ((h & 0x7c00u) == 0x7c00u) {
        mag |= 0x7f800000u;
        if (h & 0x3ffu) mag |= 0x00400000u;
        mag |= sign;
        std::memcpy(&f, &mag, 4);
        return f;
    }
    std::memcpy(&f, &mag, 4);
    f *= 5.192296858534828e33f;  // 2^112
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= sign;
    std::memcpy(&f, &u, 4);
    return f;
}
inline float h2f(const uint8_t* p) { return half_to_float(rd_u16(p)); }

// Scale-field decoders (quant-formats.md §6.1).
inline int nib_get(const uint8_t* b, int s) { return (b[s >> 1] >> (4 * (s & 1))) & 15; }
inline void kscale_get(const uint8_t* S, int j, int* sc, int* m) {
    if (j < 4) {
        *sc = S[j] & 63;
        *m = S[j + 4] & 63;
    } else {
        *sc = (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4);
        *m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4);
    }
}
inline int q3scale_get(const uint8_t* S, int s) {
    const int low4 = s < 8 ? (S[s] & 15) : (S[s - 8] >> 4);
    const int high2 = (S[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
    return (low4 | high2 << 4) - 32;
}

// Byte-oriented layout decoders (quant-formats.md §6.1) writing one code per weight.
inline void p2_codes(const uint8_t* q, uint8_t* c) {
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const int b = q[32 * h + l];
            c[128 * h + l] = (uint8_t)(b & 3);
            c[128 * h + 32 + l] = (uint8_t)((b >> 2) & 3);
            c[128 * h + 64 + l] = (uint8_t)((b >> 4) & 3);
            c[128 * h + 96 + l] = (uint8_t)(b >> 6);
        }
}
inline void p4k_codes(const uint8_t* q, uint8_t* c) {
    for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l) {
            c[64 * g + l] = (uint8_t)(q[32 * g + l] & 15);
            c[64 * g + 32 + l] = (uint8_t)(q[32 * g + l] >> 4);
        }
}
inline void p4n_codes(const uint8_t* q, uint8_t* c) {
    for (int ib = 0; ib < 8; ++ib)
        for (int l = 0; l < 16; ++l) {
            c[32 * ib + l] = (uint8_t)(q[16 * ib + l] & 15);
            c[32 * ib + 16 + l] = (uint8_t)(q[16 * ib + l] >> 4);
        }
}
// ORs the HB plane bit of every weight into bit `shift` of its code.
inline void hb_or(const uint8_t* h, int shift, uint8_t* c) {
    for (int k = 0; k < 8; ++k)
        for (int l = 0; l < 32; ++l) c[32 * k + l] |= (uint8_t)(((h[l] >> k) & 1) << shift);
}
inline void lookup(const uint8_t* c, const int8_t* table, int8_t* v) {
    for (int w = 0; w < 256; ++w) v[w] = table[c[w]];
}

// ---- per-type descriptors: bytes per block, row metadata, signedness of v, unpack ----
// `rowd` is the row scale of the row-scaled types (read by row_scale), unused otherwise.
// uns: v holds unsigned bytes; sat / conv: see the header comment.

struct KDefaults {
    static constexpr bool sat = false, conv = false;
    static constexpr bool conv_float = false;  // conv from float values (dw != dc: Q2_K)
    static constexpr float conv_d0 = 1.0f / 127.0f;  // conv: dnew = max * conv_d0
};

// +128 on the levels of a sat type (bytes become unsigned) and -128 * sc into the correction.
inline void to_sat(KBlock& k) {
    for (int w = 0; w < 256; ++w) k.v[w] = (int8_t)((uint8_t)k.v[w] ^ 0x80u);
    for (int s = 0; s < 16; ++s) k.corr[s] = (int16_t)(k.corr[s] - 128 * k.sc[s]);
}

struct KQ2K : KDefaults {
    static constexpr uint32_t id = quant::T_Q2_K;
    static constexpr int bytes = 84, meta = 0;
    static constexpr bool uns = true, conv = true, conv_float = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        p2_codes(b + 16, (uint8_t*)k.v);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = b[s] & 15;
            k.corr[s] = b[s] >> 4;
        }
        k.dw = h2f(b + 80);
        k.dc = -h2f(b + 82);
    }
};

struct KQ3K : KDefaults {
    static constexpr uint32_t id = quant::T_Q3_K;
    static constexpr int bytes = 110, meta = 0;
    static constexpr bool uns = true, conv = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        // v = q + 4 in 0..7; the -4 goes into the correction
        p2_codes(b + 32, (uint8_t*)k.v);
        hb_or(b, 2, (uint8_t*)k.v);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)q3scale_get(b + 96, s);
            k.corr[s] = (int16_t)(-4 * k.sc[s]);
        }
        k.dw = k.dc = h2f(b + 108);
    }
};

template <bool Five>
struct KQ45K : KDefaults {
    static constexpr uint32_t id = Five ? quant::T_Q5_K : quant::T_Q4_K;
    static constexpr int bytes = Five ? 176 : 144, meta = 0;
    static constexpr bool uns = true, conv = true;  // conv: fp16 per-32 scales
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint8_t* qs = Five ? b + 48 : b + 16;
        p4k_codes(qs, (uint8_t*)k.v);
        if (Five) hb_or(b + 16, 4, (uint8_t*)k.v);
        for (int j = 0; j < 8; ++j) {
            int sc, m;
            kscale_get(b + 4, j, &sc, &m);
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)sc;
            k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)m;
        }
        k.dw = h2f(b);
        k.dc = -h2f(b + 2);
    }
};
using KQ4K = KQ45K<false>;
using KQ5K = KQ45K<true>;

struct KQ6K : KDefaults {
    static constexpr uint32_t id = quant::T_Q6_K;
    static constexpr int bytes = 210, meta = 0;
    static constexpr bool uns = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        // v = q + 32 in 0..63; the -32 goes into the correction
        for (int c = 0; c < 2; ++c)
            for (int l = 0; l < 32; ++l) {
                const int q0 = b[64 * c + l], q1 = b[64 * c + 32 + l], h = b[128 + 32 * c + l];
                int8_t* v = k.v + 128 * c + l;
                v[0] = (int8_t)((q0 & 15) | (h & 3) << 4);
                v[32] = (int8_t)((q1 & 15) | ((h >> 2) & 3) << 4);
                v[64] = (int8_t)((q0 >> 4) | ((h >> 4) & 3) << 4);
                v[96] = (int8_t)((q1 >> 4) | ((h >> 6) & 3) << 4);
            }
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int8_t)b[192 + s];
            k.corr[s] = (int16_t)(-32 * k.sc[s]);
        }
        k.dw = k.dc = h2f(b + 208);
    }
};

struct KIq4Xs : KDefaults {
    static constexpr uint32_t id = quant::T_IQ4_XS;
    static constexpr int bytes = 136, meta = 0;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t sh = rd_u16(b + 2);
        for (int j = 0; j < 8; ++j) {
            const int ls = (nib_get(b + 4, j) | ((sh >> (2 * j)) & 3) << 4) - 32;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
        }
        uint8_t c[256];
        p4n_codes(b + 8, c);
        lookup(c, tabs::kIq4nl, k.v);
        for (int s = 0; s < 16; ++s) k.corr[s] = 0;
        k.dw = k.dc = h2f(b);
        to_sat(k);
    }
};

struct KIq2K : KDefaults {
    static constexpr uint32_t id = quant::T_IQ2_K;
    static constexpr int bytes = 76, meta = 0;
    static constexpr bool uns = false, conv = true;
    static constexpr float conv_d0 = 1.0f / 120.0f;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)(nib_get(b + 4, s) - 8);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 5 * k.sc[s]);
        }
        uint8_t c[256];
        p2_codes(b + 12, c);
        lookup(c, tabs::kIq2nl, k.v);
        k.dw = k.dc = h2f(b);
    }
};

struct KIq3K : KDefaults {
    static constexpr uint32_t id = quant::T_IQ3_K;
    static constexpr int bytes = 110, meta = 0;
    static constexpr bool uns = false, conv = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2), sh = rd_u16(b + 4);
        for (int s = 0; s < 16; ++s) {
            const int mag = 2 * nib_get(b + 6, s) + 1;
            k.sc[s] = (int16_t)(((sh >> s) & 1) ? -mag : mag);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 4 * k.sc[s]);
        }
        uint8_t c[256];
        p2_codes(b + 14, c);
        hb_or(b + 78, 2, c);
        lookup(c, tabs::kIq3nl, k.v);
        k.dw = k.dc = h2f(b);
    }
};

inline int k6_scale(const uint8_t* b, int s) {
    return (nib_get(b + 8, s) | ((b[4 + (s >> 2)] >> (2 * (s & 3))) & 3) << 4) - 32;
}

struct KIq4K : KDefaults {
    static constexpr uint32_t id = quant::T_IQ4_K;
    static constexpr int bytes = 144, meta = 0;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)k6_scale(b, s);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 4 * k.sc[s]);
        }
        uint8_t c[256];
        p4n_codes(b + 16, c);
        lookup(c, tabs::kIq4k, k.v);
        k.dw = k.dc = h2f(b);
        to_sat(k);
    }
};

struct KIq5K : KDefaults {
    static constexpr uint32_t id = quant::T_IQ5_K;
    static constexpr int bytes = 176, meta = 0;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)k6_scale(b, s);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 2 * k.sc[s]);
        }
        uint8_t c[256];
        p4k_codes(b + 16, c);
        hb_or(b + 144, 4, c);
        lookup(c, tabs::kIq5nl, k.v);
        k.dw = k.dc = h2f(b);
        to_sat(k);
    }
};

struct KIq6K : KDefaults {
    static constexpr uint32_t id = quant::T_IQ6_K;
    static constexpr int bytes = 212, meta = 0;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int8_t)b[4 + s];
            k.corr[s] = (int16_t)(((extra >> s) & 1) * k.sc[s]);
        }
        uint8_t c[256];
        p4k_codes(b + 20, c);
        for (int g = 0; g < 4; ++g)  // high bits of chunk k: qh[32 (k/4) + l] bits 2 (k%4)
            for (int l = 0; l < 32; ++l) {
                const int h = b[148 + 32 * (g >> 1) + l] >> (4 * (g & 1));
                c[64 * g + l] |= (uint8_t)((h & 3) << 4);
                c[64 * g + 32 + l] |= (uint8_t)(((h >> 2) & 3) << 4);
            }
        lookup(c, tabs::kIq6nl, k.v);
        k.dw = k.dc = h2f(b);
        to_sat(k);
    }
};

struct KIq2Ks : KDefaults {
    static constexpr uint32_t id = quant::T_IQ2_KS;
    static constexpr int bytes = 70, meta = 2;
    static constexpr bool uns = false, conv = true;
    static constexpr float conv_d0 = 1.0f / 125.0f;
    static float row_scale(const uint8_t* row) { return h2f(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        const uint16_t extra = rd_u16(b);
        for (int j = 0; j < 8; ++j) {
            const int ls = (nib_get(b + 2, j) | ((extra >> (8 + j)) & 1) << 4) - 16;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
            k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)(((extra >> j) & 1) * 5 * ls);
        }
        uint8_t c[256];
        p2_codes(b + 6, c);
        lookup(c, tabs::kIq2nl, k.v);
        k.dw = k.dc = rowd;
    }
};

struct KIq3Ks : KDefaults {
    static constexpr uint32_t id = quant::T_IQ3_KS;
    static constexpr int bytes = 102, meta = 2;
    static constexpr bool uns = false, conv = true;
    static float row_scale(const uint8_t* row) { return h2f(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        const uint16_t extra = rd_u16(b);
        for (int j = 0; j < 8; ++j) {
            const int ls = (((b[2 + (j & 3)] >> (4 * (j >> 2))) & 15) | ((extra >> j) & 1) << 4) - 16;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
            k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)(((extra >> (8 + j)) & 1) * 4 * ls);
        }
        uint8_t c[256];
        p2_codes(b + 6, c);
        hb_or(b + 70, 2, c);
        lookup(c, tabs::kIq3nl, k.v);
        k.dw = k.dc = rowd;
    }
};

// IQ4_KS / IQ5_KS scale byte: bits 1..7 = scale + 127, bit 0 = value set.
inline void ks_scales(const uint8_t* s8, int shift, KBlock& k) {
    for (int j = 0; j < 8; ++j) {
        const int ls = (s8[j] & 254) - 127;
        k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
        k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)((s8[j] & 1) * shift * ls);
    }
}

struct KIq4Ks : KDefaults {
    static constexpr uint32_t id = quant::T_IQ4_KS;
    static constexpr int bytes = 136, meta = 4;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t* row) { return rd_f32(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        ks_scales(b, 4, k);
        uint8_t c[256];
        p4n_codes(b + 8, c);
        lookup(c, tabs::kIq4k, k.v);
        k.dw = k.dc = rowd;
        to_sat(k);
    }
};

struct KIq4Kss : KDefaults {
    static constexpr uint32_t id = quant::T_IQ4_KSS;
    static constexpr int bytes = 128, meta = 4;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t* row) { return rd_f32(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        uint8_t s8[8];
        for (int j = 0; j < 8; ++j) {
            int ls = 0;
            for (int q = 0; q < 8; ++q) {
                const uint16_t u = rd_u16(b + 16 * j + 2 * q);
                ls |= (u & 1) << q;
                const uint16_t e = (uint16_t)(u & 0xFFFE);
                const uint16_t v = (uint16_t)(e ^ (e >> 1));
                k.v[32 * j + 2 * q] = tabs::kIq4k[v & 15];
                k.v[32 * j + 16 + 2 * q] = tabs::kIq4k[(v >> 4) & 15];
                k.v[32 * j + 2 * q + 1] = tabs::kIq4k[(v >> 8) & 15];
                k.v[32 * j + 17 + 2 * q] = tabs::kIq4k[v >> 12];
            }
            s8[j] = (uint8_t)ls;
        }
        ks_scales(s8, 4, k);
        k.dw = k.dc = rowd;
        to_sat(k);
    }
};

struct KIq5Ks : KDefaults {
    static constexpr uint32_t id = quant::T_IQ5_KS;
    static constexpr int bytes = 168, meta = 4;
    static constexpr bool uns = true, sat = true, conv = true;
    static float row_scale(const uint8_t* row) { return rd_f32(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        ks_scales(b, 2, k);
        uint8_t c[256];
        p4k_codes(b + 8, c);
        hb_or(b + 136, 4, c);
        lookup(c, tabs::kIq5nl, k.v);
        k.dw = k.dc = rowd;
        to_sat(k);
    }
};

struct KIq2Kl : KDefaults {
    static constexpr uint32_t id = quant::T_IQ2_KL;
    static constexpr int bytes = 86, meta = 2;
    static constexpr bool uns = false, conv = true;
    static constexpr float conv_d0 = 1.0f / 125.0f;
    static float row_scale(const uint8_t* row) { return h2f(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        const uint16_t sh = rd_u16(b);
        for (int j = 0; j < 8; ++j) {
            const int ls = (((b[2 + (j & 3)] >> (4 * (j >> 2))) & 15) | ((sh >> (2 * j)) & 3) << 4) - 32;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
            k.corr[2 * j] = k.corr[2 * j + 1] = 0;
        }
        for (int w = 0; w < 256; w += 2) {
            const int c = w >> 6, r = w & 63, half = r >> 5, p = (r & 31) >> 1;
            const int code = ((b[6 + 16 * c + p] >> (4 * half)) & 15) | ((b[70 + p] >> (2 * c + half)) & 1) << 4;
            k.v[w] = (int8_t)(tabs::kIq2kl[code] & 255);
            k.v[w + 1] = (int8_t)(tabs::kIq2kl[code] >> 8);
        }
        k.dw = k.dc = rowd;
    }
};

// Activation block accessors (Q8_K, quant-formats.md §6.7 / §15).
inline float act_d(const uint8_t* a) { return rd_f32(a + quant::kQ8KOffD); }
inline const int8_t* act_qs(const uint8_t* a) { return (const int8_t*)(a + quant::kQ8KOffQs); }
inline const int16_t* act_bsums(const uint8_t* a) { return (const int16_t*)(a + quant::kQ8KOffBsums); }

// Q8_2_X4 activations of one 256-weight block: two groups of four 32-weight blocks, 144 bytes
// each (4 bf16 d, 4 int16 code sums, 4 x 32 codes). Rows are multiples of 256 here, so there
// are no leftover 36-byte blocks.
inline constexpr size_t kQ82BlockBytes = 288;
inline float q82_d(const uint8_t* a, int j) {
    const uint32_t u = (uint32_t)rd_u16(a + 144 * (j >> 2) + 2 * (j & 3)) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline int q82_sum(const uint8_t* a, int j) { return (int16_t)rd_u16(a + 144 * (j >> 2) + 8 + 2 * (j & 3)); }
inline const int8_t* q82_qs(const uint8_t* a, int j) { return (const int8_t*)(a + 144 * (j >> 2) + 16 + 32 * (j & 3)); }

// Token block size: keep the activations of one token block within ~512 KiB (L2) so that they
// are reused from cache across all weight rows.
inline int64_t token_block(size_t act_row_bytes) {
    int64_t tb = (int64_t)((512u << 10) / (act_row_bytes ? act_row_bytes : 1));
    return tb < 1 ? 1 : (tb > 64 ? 64 : tb);
}

}  // namespace
}  // namespace ikllm::cpu


namespace ikllm::cpu {
namespace {

// Value j of an unpacked block (unsigned bytes for the uns types).
template <class K>
inline int kval(const KBlock& kb, int j) {
    return K::uns ? (int)(uint8_t)kb.v[j] : (int)kb.v[j];
}

// Sum of v_j a_j over the 16 weights j0..j0+15 (qa: their 16 codes); the sat types saturate
// every pair sum to int16 like maddubs.
template <class K>
inline int32_t dot16(const KBlock& kb, int j0, const int8_t* qa) {
    int32_t dot = 0;
    for (int i = 0; i < 16; i += 2) {
        int32_t p = kval<K>(kb, j0 + i) * qa[i] + kval<K>(kb, j0 + i + 1) * qa[i + 1];
        if (K::sat) p = p > 32767 ? 32767 : (p < -32768 ? -32768 : p);
        dot += p;
    }
    return dot;
}

// float -> nearest fp16 value (round half to even, overflow to infinity), as a float; the
// scalar twin of the F16C conversion the SIMD kernels use.
inline float round_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = x & 0x80000000u, ax = x & 0x7fffffffu;
    uint32_t h;  // fp16 magnitude bits
    if (ax >= 0x7f800000u) h = ax > 0x7f800000u ? 0x7e00u : 0x7c00u;
    else if (ax >= 0x477ff000u) h = 0x7c00u;  // rounds to >= 65520: infinity
    else if (ax < 0x38800000u) {              // fp16 subnormal range (or zero)
        if (ax < 0x33000000u) h = 0;          // below half the smallest subnormal
        else {
            const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
            const int sh = 126 - (int)(ax >> 23);  // 14..24
            const uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
            h = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
        }
    } else {
        const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
        h = (r - 0x38000000u) >> 13;
    }
    // back to float (exact)
    uint32_t out;
    if ((h & 0x7c00u) == 0x7c00u) out = sign | 0x7f800000u | ((h & 0x3ffu) << 13);
    else if ((h & 0x7c00u) == 0) {
        float v = (float)(h & 0x3ffu) * 5.9604644775390625e-08f;  // 2^-24
        std::memcpy(&out, &v, 4);
        out |= sign;
    } else out = sign | (((h >> 10) + 112u) << 23) | ((h & 0x3ffu) << 13);
    float r;
    std::memcpy(&r, &out, 4);
    return r;
}

// Re-encoding of one unpacked block for the conv path (header comment): q[256] and the block
// scale. Integer types (dw == dc): P = sc * v + corr, dnew = max|P| * d0, P kept when dnew < 1,
// scale fp16(dw * dnew). Float types (Q2_K): w = dw * (sc * v) + dc * corr (both products exact,
// one rounding), dnew = max|w| * d0, scale fp16(dnew).
template <class K>
inline float conv_block(const KBlock& kb, int8_t* q) {
    // round half to even of a float with |value| <= 127.5 (the 1.5*2^23 adder trick)
    auto rne = [](float v) { return (int8_t)(int)((v + 12582912.0f) - 12582912.0f); };
    if constexpr (K::conv_float) {
        float wv[256], mx = 0.0f;
        for (int j = 0; j < 256; ++j) {
            wv[j] = kb.dw * (float)(kb.sc[j >> 4] * kval<K>(kb, j)) + kb.dc * (float)kb.corr[j >> 4];
            const float a = wv[j] < 0 ? -wv[j] : wv[j];
            mx = a > mx ? a : mx;
        }
        const float dnew = mx * K::conv_d0;
        const float inv = dnew > 0.0f ? 1.0f / dnew : 0.0f;
        for (int j = 0; j < 256; ++j) q[j] = rne(wv[j] * inv);
        return round_to_half(dnew);
    } else {
        int16_t P[256];
        int mx = 0;
        for (int j = 0; j < 256; ++j) {
            const int p = kb.sc[j >> 4] * kval<K>(kb, j) + kb.corr[j >> 4];
            P[j] = (int16_t)p;
            const int a = p < 0 ? -p : p;
            mx = a > mx ? a : mx;
        }
        float dnew = (float)mx * K::conv_d0;
        if (dnew < 1.0f) {
            for (int j = 0; j < 256; ++j) q[j] = (int8_t)P[j];
            dnew = 1.0f;
        } else {
            const float inv = 1.0f / dnew;
            for (int j = 0; j < 256; ++j) q[j] = rne((float)P[j] * inv);
        }
        return round_to_half(kb.dw * dnew);
    }
}

// Portable kernel against Q8_K activations: the numerical reference for the SIMD kernels.
// Weight blocks are unpacked once per token block and reused for every token of it.
template <class K>
void scalar_matmul(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                   size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const int64_t nb = ne0 / 256;
    const int64_t tb = token_block(act_row_bytes);
    const bool conv = K::conv && nt >= kConvMinTokens;
    KBlock kb;
    alignas(32) int8_t q[256];
    float acc[64];
    for (int64_t t0 = 0; t0 < nt; t0 += tb) {
        const int64_t tn = nt - t0 < tb ? nt - t0 : tb;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * w_row_bytes;
            const float rowd = K::row_scale(row);
            for (int64_t t = 0; t < tn; ++t) acc[t] = 0;
            for (int64_t b = 0; b < nb; ++b) {
                K::unpack(row + K::meta + (size_t)b * K::bytes, rowd, kb);
                if (conv) {
                    const float d8 = conv_block<K>(kb, q);
                    for (int64_t t = 0; t < tn; ++t) {
                        const uint8_t* a = act + (size_t)(t0 + t) * act_row_bytes + (size_t)b * quant::kQ8KBlockBytes;
                        const int8_t* qa = act_qs(a);
                        int32_t isum = 0;
                        for (int j = 0; j < 256; ++j) isum += q[j] * qa[j];
                        acc[t] += (d8 * act_d(a)) * (float)isum;
                    }
                    continue;
                }
                for (int64_t t = 0; t < tn; ++t) {
                    const uint8_t* a = act + (size_t)(t0 + t) * act_row_bytes + (size_t)b * quant::kQ8KBlockBytes;
                    const int8_t* qa = act_qs(a);
                    int16_t bs[16];
                    std::memcpy(bs, a + quant::kQ8KOffBsums, sizeof(bs));
                    int64_t isum = 0, icorr = 0;
                    for (int s = 0; s < 16; ++s) {
                        isum += kb.sc[s] * dot16<K>(kb, 16 * s, qa + 16 * s);
                        icorr += kb.corr[s] * bs[s];
                    }
                    // one scale: combine exactly first (the sat types' +128 terms cancel here)
                    if (kb.dw == kb.dc) acc[t] += act_d(a) * (kb.dw * (float)(isum + icorr));
                    else acc[t] += act_d(a) * (kb.dw * (float)isum + kb.dc * (float)icorr);
                }
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * y_stride + r] = acc[t];
        }
    }
}

// Portable kernel against Q8_2_X4 activations (Q4_K / Q5_K / Q6_K): every 32-weight activation
// block has its own scale, so the exact integer dot is taken per 32 and scaled right away.
// Q4_K / Q5_K in conv mode use fp16-rounded per-32 scales (header comment).
template <class K>
void scalar_matmul_q82(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                       size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const int64_t nb = ne0 / 256;
    const int64_t tb = token_block(act_row_bytes);
    const bool conv = K::conv && nt >= kConvMinTokens;
    KBlock kb;
    float acc[64];
    for (int64_t t0 = 0; t0 < nt; t0 += tb) {
        const int64_t tn = nt - t0 < tb ? nt - t0 : tb;
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * w_row_bytes;
            const float rowd = K::row_scale(row);
            for (int64_t t = 0; t < tn; ++t) acc[t] = 0;
            for (int64_t b = 0; b < nb; ++b) {
                K::unpack(row + K::meta + (size_t)b * K::bytes, rowd, kb);
                for (int64_t t = 0; t < tn; ++t) {
                    const uint8_t* a = act + (size_t)(t0 + t) * act_row_bytes + (size_t)b * kQ82BlockBytes;
                    for (int j = 0; j < 8; ++j) {
                        const int8_t* qa = q82_qs(a, j);
                        if (conv) {  // per-32 scale and min (sc, corr equal within the 32)
                            int32_t dot = 0, bs = 0;
                            for (int i = 0; i < 32; ++i) {
                                dot += kval<K>(kb, 32 * j + i) * qa[i];
                                bs += qa[i];
                            }
                            const float D = round_to_half(kb.dw * (float)kb.sc[2 * j]);
                            const float M = round_to_half(kb.dc * (float)kb.corr[2 * j]);
                            acc[t] += q82_d(a, j) * (D * (float)dot + M * (float)bs);
                            continue;
                        }
                        int32_t isum = 0, icorr = 0;
                        for (int h = 0; h < 2; ++h) {
                            const int s = 2 * j + h;
                            int32_t bs = 0;
                            for (int i = 16 * h; i < 16 * h + 16; ++i) bs += qa[i];
                            isum += kb.sc[s] * dot16<K>(kb, 32 * j + 16 * h, qa + 16 * h);
                            icorr += kb.corr[s] * bs;
                        }
                        acc[t] += q82_d(a, j) * (kb.dw * (float)isum + kb.dc * (float)icorr);
                    }
                }
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * y_stride + r] = acc[t];
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
