// Float tensor types F32, F16, BF16, F64 (quant-formats.md §4): exact decoding, and encoding with
// the reference's conversions (fp16 RNE with subnormals; bf16 "ref" RNE, NaN kept quiet).
#include <cstring>

#include "core/fp16.h"
#include "quant/families.h"

namespace ikllm::quant {
namespace {

void f32_dequant(const uint8_t* src, float* dst, int64_t n) { std::memcpy(dst, src, (size_t)n * 4); }
void f32_quantize(const float* src, uint8_t* dst, int64_t n, const float*) { std::memcpy(dst, src, (size_t)n * 4); }

void f16_dequant(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = f16_to_f32(h);
    }
}
void f16_quantize(const float* src, uint8_t* dst, int64_t n, const float*) {
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

void bf16_dequant(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
    }
}
void bf16_quantize(const float* src, uint8_t* dst, int64_t n, const float*) {
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

// The reference has no to_float for F64; an ordinary double -> float (RNE) conversion.
void f64_dequant(const uint8_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, src + 8 * i, 8);
        dst[i] = (float)v;
    }
}
void f64_quantize(const float* src, uint8_t* dst, int64_t n, const float*) {
    for (int64_t i = 0; i < n; ++i) {
        const double v = src[i];
        std::memcpy(dst + 8 * i, &v, 8);
    }
}

constexpr FamilyEntry kFloatEntries[] = {
    {T_F32, f32_dequant, f32_quantize},
    {T_F16, f16_dequant, f16_quantize},
    {T_BF16, bf16_dequant, bf16_quantize},
    {T_F64, f64_dequant, f64_quantize},
};

}  // namespace

FamilyTable float_family() { return {kFloatEntries, sizeof(kFloatEntries) / sizeof(kFloatEntries[0])}; }

}  // namespace ikllm::quant
