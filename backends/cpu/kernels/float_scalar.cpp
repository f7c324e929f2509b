// Portable reference kernels for float weights: F32 x F32, F16 x F32, BF16 x BF16 (activations
// rounded to bf16 as the reference does, quant-formats.md §15). Plain sequential float sums;
// the SIMD kernels are tested against these.
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

inline float dot_row(const float* a, const float* b, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

// Decode a weight row (or activation row) to float, then dot against every token.
template <void (*Decode)(const uint8_t*, float*, int64_t), void (*DecodeAct)(const uint8_t*, float*, int64_t)>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb, int64_t nt,
         float* y, int64_t ys) {
    std::vector<float> wrow((size_t)ne0), xrow((size_t)ne0);
    for (int64_t r = r0; r < r1; ++r) {
        Decode(w + (size_t)r * wrb, wrow.data(), ne0);
        for (int64_t t = 0; t < nt; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            const float* x;
            if constexpr (DecodeAct == nullptr) {
                x = reinterpret_cast<const float*>(a);
            } else {
                DecodeAct(a, xrow.data(), ne0);
                x = xrow.data();
            }
            y[t * ys + r] = dot_row(wrow.data(), x, ne0);
        }
    }
}

void dec_f32(const uint8_t* s, float* d, int64_t n) { std::memcpy(d, s, (size_t)n * 4); }
void dec_f16(const uint8_t* s, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        d[i] = f16_to_f32(h);
    }
}
void dec_bf16(const uint8_t* s, float* d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        d[i] = bf16_to_f32(h);
    }
}

// F32 activations are read in place (decoder nullptr); the F32 path needs no copy of weights
// either, but keeping one code path makes this the simplest possible reference.
}  // namespace

KernelTable float_kernels_scalar() {
    static const MatmulKernel kKernels[] = {
        {quant::T_F32, Isa::scalar, act_format_f32(), run<dec_f32, nullptr>},
        {quant::T_F16, Isa::scalar, act_format_f32(), run<dec_f16, nullptr>},
        {quant::T_BF16, Isa::scalar, act_format_bf16(), run<dec_bf16, dec_bf16>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
