// Row-interleaved forms of the 32-column block types (docs: quant-formats.md §12.2, §12.3, §12.9):
// Q4_0_R8, Q8_0_R8, MXFP4_R8, IQ4_NL_R4, Q5_0_R4, Q6_0_R4 and the ARM-style Q4_0_4x4/4x8/8x8.
#include <cmath>

#include "quant/grid_util.h"
#include "quant/interleaved_impl.h"
#include "quant/interleaved_values.h"

namespace ikllm::quant {
namespace {

// Q4_0/IQ4_NL/MXFP4 "NL4" code of column w (0..31) from a 16-byte quant area.
inline int nl4_code(const uint8_t* qs, int w) { return nib(qs[w % 16], w / 16); }

// ---- Q4_0_R8: 144-byte blocks; byte 16+32l+4k+i = Q4_0 qs[4l+i] of row k --------------------
void deq_q4_0_r8(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 144)
        for (int k = 0; k < 8; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + 32 * ib;
            for (int l = 0; l < 4; ++l)
                for (int i = 0; i < 4; ++i) {
                    const uint8_t b = src[16 + 32 * l + 4 * k + i];
                    yk[4 * l + i] = (float)((b & 15) - 8) * d;
                    yk[4 * l + i + 16] = (float)((b >> 4) - 8) * d;
                }
        }
}
void rep_q4_0_r8(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 144)
        for (int k = 0; k < 8; ++k) {
            const uint8_t* b = rows[k] + 18 * ib;
            dst[2 * k] = b[0];
            dst[2 * k + 1] = b[1];
            for (int l = 0; l < 4; ++l)
                for (int i = 0; i < 4; ++i) dst[16 + 32 * l + 4 * k + i] = b[2 + 4 * l + i];
        }
}

// ---- Q8_0_R8: 272-byte blocks ------------------------------------------------------------------
void deq_q8_0_r8(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 272)
        for (int k = 0; k < 8; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + 32 * ib;
            for (int l = 0; l < 4; ++l)
                for (int i = 0; i < 4; ++i) {
                    yk[4 * l + i] = (float)(int8_t)src[16 + 32 * l + 4 * k + i] * d;
                    yk[16 + 4 * l + i] = (float)(int8_t)src[144 + 32 * l + 4 * k + i] * d;
                }
        }
}
void rep_q8_0_r8(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 272)
        for (int k = 0; k < 8; ++k) {
            const uint8_t* b = rows[k] + 34 * ib;
            dst[2 * k] = b[0];
            dst[2 * k + 1] = b[1];
            for (int l = 0; l < 4; ++l)
                for (int i = 0; i < 4; ++i) {
                    dst[16 + 32 * l + 4 * k + i] = b[2 + 4 * l + i];
                    dst[144 + 32 * l + 4 * k + i] = b[2 + 16 + 4 * l + i];
                }
        }
}

// ---- MXFP4_R8: 136-byte blocks, E8M0 exponents then the Q4_0_R8 byte map ------------------------
inline float e8m0_half(uint8_t e) { return std::ldexp(1.0f, (int)e - 128); }  // 2^(e-128), exact

void deq_mxfp4_r8(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 136)
        for (int k = 0; k < 8; ++k) {
            const float d = e8m0_half(src[k]);
            float* yk = y + k * ne0 + 32 * ib;
            for (int l = 0; l < 4; ++l)
                for (int i = 0; i < 4; ++i) {
                    const uint8_t b = src[8 + 32 * l + 4 * k + i];
                    yk[4 * l + i] = d * (float)vals::kMxfp4[b & 15];
                    yk[4 * l + i + 16] = d * (float)vals::kMxfp4[b >> 4];
                }
        }
}
void rep_mxfp4_r8(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 136)
        for (int k = 0; k < 8; ++k) {
            const uint8_t* b = rows[k] + 17 * ib;
            dst[k] = b[0];
            for (int l = 0; l < 4; ++l)
                for (int i = 0; i < 4; ++i) dst[8 + 32 * l + 4 * k + i] = b[1 + 4 * l + i];
        }
}

// ---- IQ4_NL_R4: 72-byte blocks, NIB4 at 8 --------------------------------------------------------
void deq_iq4_nl_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 72)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + 32 * ib;
            for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                    const uint8_t b = src[8 + 16 * t + 4 * k + i];
                    yk[i + kNib4Off[t][0]] = d * (float)vals::kIq4nl[b & 15];
                    yk[i + kNib4Off[t][1]] = d * (float)vals::kIq4nl[b >> 4];
                }
        }
}
// Packs the NL4 codes of 4 rows' 16-byte quant areas into a 64-byte NIB4 area.
void pack_nib4(const uint8_t* const qs[4], uint8_t* qa) {
    for (int t = 0; t < 4; ++t)
        for (int k = 0; k < 4; ++k)
            for (int i = 0; i < 4; ++i)
                qa[16 * t + 4 * k + i] =
                    (uint8_t)(nl4_code(qs[k], i + kNib4Off[t][0]) | nl4_code(qs[k], i + kNib4Off[t][1]) << 4);
}
void rep_iq4_nl_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 72) {
        const uint8_t* qs[4];
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 18 * ib;
            dst[2 * k] = b[0];
            dst[2 * k + 1] = b[1];
            qs[k] = b + 2;
        }
        pack_nib4(qs, dst + 8);
    }
}

// ---- Q5_0_R4: 88-byte blocks: d[4], qh[16] at 8, NIB4 at 24 -------------------------------------
// Value (d*q) + (-16*d): a zero result is always +0 (§13.2).
void deq_q5_0_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 88)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            const float m = -16.0f * d;
            float* yk = y + k * ne0 + 32 * ib;
            for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                    const uint8_t b = src[24 + 16 * t + 4 * k + i], h = src[8 + 4 * k + i];
                    yk[i + kNib4Off[t][0]] = d * (float)((b & 15) | bit(h, t) << 4) + m;
                    yk[i + kNib4Off[t][1]] = d * (float)((b >> 4) | bit(h, t + 4) << 4) + m;
                }
        }
}
void rep_q5_0_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 88) {
        const uint8_t* qs[4];
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 22 * ib;
            dst[2 * k] = b[0];
            dst[2 * k + 1] = b[1];
            qs[k] = b + 6;
            const uint32_t qh = rd_u32(b + 2);
            for (int i = 0; i < 4; ++i) {
                uint8_t h = 0;
                for (int t = 0; t < 4; ++t)
                    h |= (uint8_t)(bit(qh, i + kNib4Off[t][0]) << t | bit(qh, i + kNib4Off[t][1]) << (t + 4));
                dst[8 + 4 * k + i] = h;
            }
        }
        pack_nib4(qs, dst + 24);
    }
}

// ---- Q6_0_R4: 104-byte blocks: d[4], qh[32] at 8, NIB4 at 40 ------------------------------------
inline int q6_0_high2(const uint8_t* qh, int w) {  // Q6_0 (§5.6) high bits of column w
    const int j = w % 16, h = w / 16;
    return bits(qh[j % 8], 4 * (j / 8) + 2 * h, 2);
}
void deq_q6_0_r4(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 104)
        for (int k = 0; k < 4; ++k) {
            const float d = rd_f16(src + 2 * k);
            const float m = -32.0f * d;
            float* yk = y + k * ne0 + 32 * ib;
            for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                    const uint8_t b = src[40 + 16 * t + 4 * k + i];
                    const uint8_t h = src[8 + 4 * k + i + 16 * (t % 2)];
                    const int sh = 2 * (t / 2);
                    yk[i + kNib4Off[t][0]] = d * (float)((b & 15) | bits(h, sh, 2) << 4) + m;
                    yk[i + kNib4Off[t][1]] = d * (float)((b >> 4) | bits(h, sh + 4, 2) << 4) + m;
                }
        }
}
void rep_q6_0_r4(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 104) {
        const uint8_t* qs[4];
        for (int i = 0; i < 32; ++i) dst[8 + i] = 0;
        for (int k = 0; k < 4; ++k) {
            const uint8_t* b = rows[k] + 26 * ib;
            dst[2 * k] = b[0];
            dst[2 * k + 1] = b[1];
            qs[k] = b + 10;
            for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                    const int sh = 2 * (t / 2);
                    dst[8 + 4 * k + i + 16 * (t % 2)] |=
                        (uint8_t)(q6_0_high2(b + 2, i + kNib4Off[t][0]) << sh |
                                  q6_0_high2(b + 2, i + kNib4Off[t][1]) << (sh + 4));
                }
        }
        pack_nib4(qs, dst + 40);
    }
}

// ---- Q4_0_4x4 / 4x8 / 8x8 (§12.9): N fp16 scales, then 16N quant bytes XOR 0x88 ---------------
template <int N, int W>
void deq_q4_0_nxw(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, src += 18 * N) {
        for (int i = 0; i < 16 * N; ++i) {
            const int r = (i % (N * W)) / W, s = (i / (N * W)) * W + (i % W);
            const uint8_t b = src[2 * N + i];
            const float d = rd_f16(src + 2 * r);
            const int lo = (b & 15) >= 8 ? (b & 15) - 16 : (b & 15);  // sign-extended 4-bit field
            const int hi = (b >> 4) >= 8 ? (b >> 4) - 16 : (b >> 4);
            y[r * ne0 + 32 * ib + s] = (float)lo * d;
            y[r * ne0 + 32 * ib + s + 16] = (float)hi * d;
        }
    }
}
template <int N, int W>
void rep_q4_0_nxw(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 32; ++ib, dst += 18 * N) {
        for (int r = 0; r < N; ++r) {
            dst[2 * r] = rows[r][18 * ib];
            dst[2 * r + 1] = rows[r][18 * ib + 1];
        }
        for (int i = 0; i < 16 * N; ++i) {
            const int r = (i % (N * W)) / W, s = (i / (N * W)) * W + (i % W);
            dst[2 * N + i] = rows[r][18 * ib + 2 + s] ^ 0x88;
        }
    }
}

const InterleavedCodec kLegacyCodecs[] = {
    {T_Q4_0_R8, T_Q4_0, 8, deq_q4_0_r8, rep_q4_0_r8, nullptr},
    {T_Q8_0_R8, T_Q8_0, 8, deq_q8_0_r8, rep_q8_0_r8, nullptr},
    {T_MXFP4_R8, T_MXFP4, 8, deq_mxfp4_r8, rep_mxfp4_r8, nullptr},
    {T_IQ4_NL_R4, T_IQ4_NL, 4, deq_iq4_nl_r4, rep_iq4_nl_r4, nullptr},
    {T_Q5_0_R4, T_Q5_0, 4, deq_q5_0_r4, rep_q5_0_r4, nullptr},
    {T_Q6_0_R4, T_Q6_0, 4, deq_q6_0_r4, rep_q6_0_r4, nullptr},
    {T_Q4_0_4X4, T_Q4_0, 4, deq_q4_0_nxw<4, 4>, rep_q4_0_nxw<4, 4>, nullptr},
    {T_Q4_0_4X8, T_Q4_0, 4, deq_q4_0_nxw<4, 8>, rep_q4_0_nxw<4, 8>, nullptr},
    {T_Q4_0_8X8, T_Q4_0, 8, deq_q4_0_nxw<8, 8>, rep_q4_0_nxw<8, 8>, nullptr},
};

}  // namespace

CodecList interleaved_legacy_codecs() { return {kLegacyCodecs, sizeof(kLegacyCodecs) / sizeof(kLegacyCodecs[0])}; }

}  // namespace ikllm::quant
