// exp(x) for the element-wise kernels: x = n ln2 + r with n = round(x log2 e) and |r| <= ln2 / 2
// (ln2 split in two parts so n ln2 is exact enough), exp(r) = 1 + r + r^2 P(r) with the degree-5
// minimax polynomial of the Cephes library's expf, then scaled by 2^n through the exponent bits.
// Inputs below kExpLo give 0 (the result would be subnormal), inputs above kExpHi are clamped
// (exp(88) = 1.65e38; SiLU and softmax only need "huge"). Within 2 ulp of the exact value.
// Written once as a template over the vector type so the scalar reference and the SIMD kernels
// run the same operations, multiply-adds fused in all of them: every table gives the same bits.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ikllm::cpu {
namespace {

constexpr float kExpLo = -87.0f, kExpHi = 88.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                            4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

// Ops supplies: set1, add, sub, mul, fma(a, b, c) = a * b + c, min, max, round (to nearest even),
// pow2n (2^n for an integral float n in [-126, 127]), zero_below(x, lo, v) (0 where x < lo, else v).
template <class Ops, class V>
inline V exp_approx(V x) {
    const V xc = Ops::min(Ops::max(x, Ops::set1(kExpLo)), Ops::set1(kExpHi));
    const V n = Ops::round(Ops::mul(xc, Ops::set1(kLog2e)));
    V r = Ops::fma(n, Ops::set1(-kLn2Hi), xc);
    r = Ops::fma(n, Ops::set1(-kLn2Lo), r);
    V p = Ops::set1(kExpP[0]);
    for (int i = 1; i < 6; ++i) p = Ops::fma(p, r, Ops::set1(kExpP[i]));
    const V r2 = Ops::mul(r, r);
    const V e = Ops::add(Ops::fma(p, r2, r), Ops::set1(1.0f));
    return Ops::zero_below(x, kExpLo, Ops::mul(e, Ops::pow2n(n)));
}

// The operations one float at a time, multiply-adds fused as in the vector lanes: the scalar
// table, and the SIMD tables' tails.
struct ScalarExpOps {
    static float set1(float v) { return v; }
    static float add(float a, float b) { return a + b; }
    static float mul(float a, float b) { return a * b; }
    static float fma(float a, float b, float c) { return std::fma(a, b, c); }
    static float min(float a, float b) { return a < b ? a : b; }
    static float max(float a, float b) { return a > b ? a : b; }
    static float round(float v) { return std::nearbyint(v); }
    static float pow2n(float n) {
        const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    static float zero_below(float x, float lo, float v) { return x < lo ? 0.0f : v; }
};

}  // namespace
}  // namespace ikllm::cpu
