// Kernel-side view of the K-quant and ik K/KS weight blocks (kquant_*.cpp, iqk_*.cpp kernels).
// Every weight block is reduced to 256 small integers v, a 16-bit scale per 16 weights and a
// per-16 coefficient of the activation's block sums, so that against one Q8_K activation block
// (d_a, codes a, bsums) the dot product is
//     d_a * ( dw * sum_s sc_s * sum_{j in s} v_j a_j  +  dc * sum_s corr_s * bsums_s ).
// The correction term absorbs mins (Q2_K/Q4_K/Q5_K), code offsets that make v unsigned (Q3_K,
// Q6_K) and the shifted second value set of the ik types (that set = first set + constant), so
// only the first set's levels appear in v. All integer sums are exact; only the final
// float combination rounds. IQ6_K uses the integer level table iq6nl (as the reference's
// matmul does), not the polynomial of its to_float.
//
// Everything here sits in an anonymous namespace: each kernel file compiles its own copy with
// its own instruction-set flags (shared inline symbols would let the linker mix ISAs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/act_q8_k.h"
#include "quant/kquant_iqk.h"
#include "quant/kquant_layout.h"
#include "quant/quant_tables.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

// The one Q8_K activation format object (defined in kquant_scalar.cpp).
const ActFormat* act_format_q8_k_kiqk();

namespace {

struct KBlock {
    int8_t v[256];
    int16_t sc[16];
    int16_t corr[16];
    float dw, dc;
};

using quant::rd_f32;
using quant::rd_u16;
namespace L = quant::layout;
namespace tabs = quant::tables;

inline float h2f(const uint8_t* p) { return f16_to_f32(rd_u16(p)); }

// ---- per-type descriptors: bytes per block, row metadata, signedness of v, unpack ----
// `rowd` is the row scale of the row-scaled types (read by row_scale), unused otherwise.

struct KQ2K {
    static constexpr uint32_t id = quant::T_Q2_K;
    static constexpr int bytes = 84, meta = 0;
    static constexpr bool uns = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        for (int w = 0; w < 256; ++w) k.v[w] = (int8_t)L::p2_get(b + 16, w);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = b[s] & 15;
            k.corr[s] = b[s] >> 4;
        }
        k.dw = h2f(b + 80);
        k.dc = -h2f(b + 82);
    }
};

struct KQ3K {
    static constexpr uint32_t id = quant::T_Q3_K;
    static constexpr int bytes = 110, meta = 0;
    static constexpr bool uns = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        // v = q + 4 in 0..7; the -4 goes into the correction
        for (int w = 0; w < 256; ++w) k.v[w] = (int8_t)(L::p2_get(b + 32, w) | L::hb_get(b, w) << 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)L::q3scale_get(b + 96, s);
            k.corr[s] = (int16_t)(-4 * k.sc[s]);
        }
        k.dw = k.dc = h2f(b + 108);
    }
};

template <bool Five>
struct KQ45K {
    static constexpr uint32_t id = Five ? quant::T_Q5_K : quant::T_Q4_K;
    static constexpr int bytes = Five ? 176 : 144, meta = 0;
    static constexpr bool uns = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint8_t* qs = Five ? b + 48 : b + 16;
        for (int w = 0; w < 256; ++w) {
            int q = L::p4k_get(qs, w);
            if (Five) q |= L::hb_get(b + 16, w) << 4;
            k.v[w] = (int8_t)q;
        }
        for (int j = 0; j < 8; ++j) {
            int sc, m;
            L::kscale_get(b + 4, j, &sc, &m);
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)sc;
            k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)m;
        }
        k.dw = h2f(b);
        k.dc = -h2f(b + 2);
    }
};
using KQ4K = KQ45K<false>;
using KQ5K = KQ45K<true>;

struct KQ6K {
    static constexpr uint32_t id = quant::T_Q6_K;
    static constexpr int bytes = 210, meta = 0;
    static constexpr bool uns = true;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        // v = q + 32 in 0..63; the -32 goes into the correction
        for (int w = 0; w < 256; ++w) {
            const int c = w >> 7, r = w & 127, t = r >> 5, l = r & 31;
            const int low4 = (b[64 * c + 32 * (t & 1) + l] >> (4 * (t >> 1))) & 15;
            const int high2 = (b[128 + 32 * c + l] >> (2 * t)) & 3;
            k.v[w] = (int8_t)(low4 | high2 << 4);
        }
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int8_t)b[192 + s];
            k.corr[s] = (int16_t)(-32 * k.sc[s]);
        }
        k.dw = k.dc = h2f(b + 208);
    }
};

struct KIq4Xs {
    static constexpr uint32_t id = quant::T_IQ4_XS;
    static constexpr int bytes = 136, meta = 0;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t sh = rd_u16(b + 2);
        for (int j = 0; j < 8; ++j) {
            const int ls = (L::nib_get(b + 4, j) | ((sh >> (2 * j)) & 3) << 4) - 32;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq4nl[L::p4n_get(b + 8, w)];
        for (int s = 0; s < 16; ++s) k.corr[s] = 0;
        k.dw = k.dc = h2f(b);
    }
};

struct KIq2K {
    static constexpr uint32_t id = quant::T_IQ2_K;
    static constexpr int bytes = 76, meta = 0;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)(L::nib_get(b + 4, s) - 8);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 5 * k.sc[s]);
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq2nl[L::p2_get(b + 12, w)];
        k.dw = k.dc = h2f(b);
    }
};

struct KIq3K {
    static constexpr uint32_t id = quant::T_IQ3_K;
    static constexpr int bytes = 110, meta = 0;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2), sh = rd_u16(b + 4);
        for (int s = 0; s < 16; ++s) {
            const int mag = 2 * L::nib_get(b + 6, s) + 1;
            k.sc[s] = (int16_t)(((sh >> s) & 1) ? -mag : mag);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 4 * k.sc[s]);
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq3nl[L::p2_get(b + 14, w) | L::hb_get(b + 78, w) << 2];
        k.dw = k.dc = h2f(b);
    }
};

inline int k6_scale(const uint8_t* b, int s) {
    return (L::nib_get(b + 8, s) | ((b[4 + (s >> 2)] >> (2 * (s & 3))) & 3) << 4) - 32;
}

struct KIq4K {
    static constexpr uint32_t id = quant::T_IQ4_K;
    static constexpr int bytes = 144, meta = 0;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)k6_scale(b, s);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 4 * k.sc[s]);
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq4k[L::p4n_get(b + 16, w)];
        k.dw = k.dc = h2f(b);
    }
};

struct KIq5K {
    static constexpr uint32_t id = quant::T_IQ5_K;
    static constexpr int bytes = 176, meta = 0;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int16_t)k6_scale(b, s);
            k.corr[s] = (int16_t)(((extra >> s) & 1) * 2 * k.sc[s]);
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq5nl[L::p4k_get(b + 16, w) | L::hb_get(b + 144, w) << 4];
        k.dw = k.dc = h2f(b);
    }
};

struct KIq6K {
    static constexpr uint32_t id = quant::T_IQ6_K;
    static constexpr int bytes = 212, meta = 0;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t*) { return 0; }
    static void unpack(const uint8_t* b, float, KBlock& k) {
        const uint16_t extra = rd_u16(b + 2);
        for (int s = 0; s < 16; ++s) {
            k.sc[s] = (int8_t)b[4 + s];
            k.corr[s] = (int16_t)(((extra >> s) & 1) * k.sc[s]);
        }
        for (int w = 0; w < 256; ++w) {
            const int c = w >> 6, r = w & 63;
            const int low4 = (b[20 + 32 * c + (r & 31)] >> (4 * (r >> 5))) & 15;
            const int high2 = (b[148 + 32 * (c >> 1) + (r & 31)] >> (4 * (c & 1) + 2 * (r >> 5))) & 3;
            k.v[w] = tabs::kIq6nl[low4 | high2 << 4];
        }
        k.dw = k.dc = h2f(b);
    }
};

struct KIq2Ks {
    static constexpr uint32_t id = quant::T_IQ2_KS;
    static constexpr int bytes = 70, meta = 2;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t* row) { return h2f(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        const uint16_t extra = rd_u16(b);
        for (int j = 0; j < 8; ++j) {
            const int ls = (L::nib_get(b + 2, j) | ((extra >> (8 + j)) & 1) << 4) - 16;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
            k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)(((extra >> j) & 1) * 5 * ls);
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq2nl[L::p2_get(b + 6, w)];
        k.dw = k.dc = rowd;
    }
};

struct KIq3Ks {
    static constexpr uint32_t id = quant::T_IQ3_KS;
    static constexpr int bytes = 102, meta = 2;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t* row) { return h2f(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        const uint16_t extra = rd_u16(b);
        for (int j = 0; j < 8; ++j) {
            const int ls = (((b[2 + (j & 3)] >> (4 * (j >> 2))) & 15) | ((extra >> j) & 1) << 4) - 16;
            k.sc[2 * j] = k.sc[2 * j + 1] = (int16_t)ls;
            k.corr[2 * j] = k.corr[2 * j + 1] = (int16_t)(((extra >> (8 + j)) & 1) * 4 * ls);
        }
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq3nl[L::p2_get(b + 6, w) | L::hb_get(b + 70, w) << 2];
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

struct KIq4Ks {
    static constexpr uint32_t id = quant::T_IQ4_KS;
    static constexpr int bytes = 136, meta = 4;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t* row) { return rd_f32(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        ks_scales(b, 4, k);
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq4k[L::p4n_get(b + 8, w)];
        k.dw = k.dc = rowd;
    }
};

struct KIq4Kss {
    static constexpr uint32_t id = quant::T_IQ4_KSS;
    static constexpr int bytes = 128, meta = 4;
    static constexpr bool uns = false;
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
    }
};

struct KIq5Ks {
    static constexpr uint32_t id = quant::T_IQ5_KS;
    static constexpr int bytes = 168, meta = 4;
    static constexpr bool uns = false;
    static float row_scale(const uint8_t* row) { return rd_f32(row); }
    static void unpack(const uint8_t* b, float rowd, KBlock& k) {
        ks_scales(b, 2, k);
        for (int w = 0; w < 256; ++w) k.v[w] = tabs::kIq5nl[L::p4k_get(b + 8, w) | L::hb_get(b + 136, w) << 4];
        k.dw = k.dc = rowd;
    }
};

struct KIq2Kl {
    static constexpr uint32_t id = quant::T_IQ2_KL;
    static constexpr int bytes = 86, meta = 2;
    static constexpr bool uns = false;
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

// Portable kernel: the numerical reference for the SIMD kernels. Weight blocks are unpacked
// once per token block and reused for every token of it.
template <class K>
void scalar_matmul(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                   size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const int64_t nb = ne0 / 256;
    const int64_t tb = token_block(act_row_bytes);
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
                    const uint8_t* a = act + (size_t)(t0 + t) * act_row_bytes + (size_t)b * quant::kQ8KBlockBytes;
                    const int8_t* qa = act_qs(a);
                    int16_t bs[16];
                    std::memcpy(bs, a + quant::kQ8KOffBsums, sizeof(bs));
                    int32_t isum = 0, icorr = 0;
                    for (int s = 0; s < 16; ++s) {
                        int32_t dot = 0;
                        for (int j = 16 * s; j < 16 * s + 16; ++j) dot += (int32_t)kb.v[j] * qa[j];
                        isum += kb.sc[s] * dot;
                        icorr += kb.corr[s] * bs[s];
                    }
                    acc[t] += act_d(a) * (kb.dw * (float)isum + kb.dc * (float)icorr);
                }
            }
            for (int64_t t = 0; t < tn; ++t) y[(t0 + t) * y_stride + r] = acc[t];
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
