// 16-bit and 8-bit row-interleaved types: BF16_R16, Q8_K_R8, Q8_K_R16, Q8_KV_R8
// (docs: quant-formats.md §12.10, §12.11).
#include <cmath>
#include <cstring>

#include "quant/interleaved_impl.h"
#include "quant/grid_util.h"

namespace ikllm::quant {
namespace {

// ---- BF16_R16: element 32p + 2k + e of a group is row k, column 2p + e --------------------------
void deq_bf16_r16(const uint8_t* src, float* y, int64_t ne0) {
    for (int64_t p = 0; p < ne0 / 2; ++p)
        for (int k = 0; k < 16; ++k)
            for (int e = 0; e < 2; ++e) y[k * ne0 + 2 * p + e] = bf16_to_f32(rd_u16(src + 2 * (32 * p + 2 * k + e)));
}
void rep_bf16_r16(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int64_t p = 0; p < ne0 / 2; ++p)
        for (int k = 0; k < 16; ++k) std::memcpy(dst + 2 * (32 * p + 2 * k), rows[k] + 4 * p, 4);
}
// The quantize tool truncates float32 to bf16 for this type (§4), unlike plain BF16.
void quant_bf16_r16(const float* x, uint8_t* dst, int64_t ne0, const float*) {
    for (int64_t p = 0; p < ne0 / 2; ++p)
        for (int k = 0; k < 16; ++k)
            for (int e = 0; e < 2; ++e)
                wr_u16(dst + 2 * (32 * p + 2 * k + e), (uint16_t)(f32_to_bits(x[k * ne0 + 2 * p + e]) >> 16));
}

// ---- Q8_K_R8 / Q8_K_R16: fp16 d_k, then 8-bit codes at 4-column granularity -------------------
// R16 stores q XOR 0x80 and decodes (d*u) + (-128*d) (§12.11).
template <int N>
void deq_q8_k_rn(const uint8_t* src, float* y, int64_t ne0) {
    constexpr int kHead = 2 * N, kBlock = N * 258;
    for (int64_t ibl = 0; ibl < ne0 / 256; ++ibl, src += kBlock)
        for (int k = 0; k < N; ++k) {
            const float d = rd_f16(src + 2 * k);
            float* yk = y + k * ne0 + 256 * ibl;
            for (int w = 0; w < 256; ++w) {
                const uint8_t b = src[kHead + 4 * N * (w / 4) + 4 * k + (w % 4)];
                if (N == 16)
                    yk[w] = (d * (float)b) + (-128.0f * d);
                else
                    yk[w] = d * (float)(int8_t)b;
            }
        }
}
// Quantizer (§12.11): per 256 columns d = max|x|/127, q = RNE(x * (127/max|x|)), d kept as fp16.
template <int N>
void quant_q8_k_rn(const float* x, uint8_t* dst, int64_t ne0, const float*) {
    constexpr int kHead = 2 * N, kBlock = N * 258;
    for (int64_t ibl = 0; ibl < ne0 / 256; ++ibl, dst += kBlock)
        for (int k = 0; k < N; ++k) {
            const float* xk = x + k * ne0 + 256 * ibl;
            float amax = 0;
            for (int w = 0; w < 256; ++w) amax = std::fmax(amax, std::fabs(xk[w]));
            const float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
            wr_u16(dst + 2 * k, f32_to_f16(d));
            for (int w = 0; w < 256; ++w) {
                const float r = std::fmin(127.0f, std::fmax(-127.0f, std::nearbyint(xk[w] * id)));
                const uint8_t q = (uint8_t)(int8_t)r;
                dst[kHead + 4 * N * (w / 4) + 4 * k + (w % 4)] = N == 16 ? (uint8_t)(q ^ 0x80) : q;
            }
        }
}

// ---- Q8_KV_R8: 8 float32 d_k, then 128 bytes per 16 columns -------------------------------------
void deq_q8_kv_r8(const uint8_t* src, float* y, int64_t ne0) {
    for (int k = 0; k < 8; ++k) {
        const float d = rd_f32(src + 4 * k);
        for (int64_t w = 0; w < ne0; ++w) {
            const int64_t c = w / 16, l = (w % 16) / 4, i = w % 4;
            y[k * ne0 + w] = d * (float)(int8_t)src[32 + 128 * c + 32 * l + 4 * k + i];
        }
    }
}
void rep_q8_kv_r8(const uint8_t* const* rows, uint8_t* dst, int64_t ne0) {
    for (int k = 0; k < 8; ++k) {
        std::memcpy(dst + 4 * k, rows[k], 4);  // d; the base row's Σq is dropped
        for (int64_t w = 0; w < ne0; ++w) {
            const int64_t c = w / 16, l = (w % 16) / 4, i = w % 4;
            dst[32 + 128 * c + 32 * l + 4 * k + i] = rows[k][8 + w];
        }
    }
}

const InterleavedCodec k8bitCodecs[] = {
    {T_BF16_R16, T_BF16, 16, deq_bf16_r16, rep_bf16_r16, quant_bf16_r16},
    {T_Q8_K_R8, T_F32, 8, deq_q8_k_rn<8>, nullptr, quant_q8_k_rn<8>},
    {T_Q8_K_R16, T_F32, 16, deq_q8_k_rn<16>, nullptr, quant_q8_k_rn<16>},
    {T_Q8_KV_R8, T_Q8_KV, 8, deq_q8_kv_r8, rep_q8_kv_r8, nullptr},
};

}  // namespace

CodecList interleaved_8bit_codecs() { return {k8bitCodecs, sizeof(k8bitCodecs) / sizeof(k8bitCodecs[0])}; }

}  // namespace ikllm::quant
