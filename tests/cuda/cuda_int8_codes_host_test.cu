// Host check of the integer weight view (backends/cuda/int8_codes.cuh) used by the int8
// matrix-vector kernel: for every type with Int8Codes, on rows quantized by the CPU quantizer
// and on random bytes,
//   1. scale * code[i] + bias equals BlockDecoder::decode8 (the float kernels' decoder, itself
//      bit-identical to the CPU registry) for every value (NaN == NaN, -0 == +0);
//   2. scale constant over 32 values (16 for kScale16 types) and bias over 32, as the kernels assume;
//   3. a whole row's product with int8 activation codes, computed the kernel's way (per chunk:
//      xd * (scale * dp4a-sum + bias * code-sum)), is within 2e-6 (relative) of the double
//      product of the decoded weights and the activation values.
// When a GPU is present the device versions (byte_perm lookups, dp4a; for kSat views the
// saturating product of sat8 through dp2a) are run on the same rows and must equal the host's
// bit for bit. Exit code 1 on any mismatch.
#include <cmath>
#include <iterator>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/int8_codes.cuh"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::cuda;

namespace {

constexpr int kRows = 4;
constexpr int64_t kNe0 = 768;  // a multiple of 256

// Value i of the chunk the kernel's way, and the chunk's product with activation codes xq.
template <class C>
IKLLM_HD void chunk_eval(const uint8_t* row, int64_t c, const int8_t* xq, float vals[8], float* dot, float* sat) {
    constexpr int cpb = C::D::kBlockElems / 8;
    uint32_t lo, hi;
    float scale, bias;
    C::codes8(row, c / cpb, (int)(c % cpb), lo, hi, scale, bias);
    for (int i = 0; i < 8; ++i) vals[i] = bd::fadd(bd::fmul(scale, bd::i2f((int8_t)(uint8_t)((i < 4 ? lo : hi) >> 8 * (i & 3)))), bias);
    uint32_t x0, x1;
    std::memcpy(&x0, xq, 4);
    std::memcpy(&x1, xq + 4, 4);
    float v = bd::fmul(scale, (float)bd::dp4a(lo, x0, bd::dp4a(hi, x1, 0)));  // uncontracted: device == host
    if (C::kHasBias) v = bd::fadd(v, bd::fmul(bias, (float)bd::dp4a(0x01010101u, x0, bd::dp4a(0x01010101u, x1, 0))));
    *dot = v;
    *sat = 0.f;
    if constexpr (C::kSat) {  // the small-batch product of mat_vec_int8_kernel
        int icorr;
        C::sat8(row, c / cpb, (int)(c % cpb), lo, hi, scale, icorr);
        const int qs = bd::dp4a(0x01010101u, x0, bd::dp4a(0x01010101u, x1, 0));
        *sat = bd::fmul(scale, bd::i2f(bd::sat_dot8(lo, hi, x0, x1) + icorr * qs));
    }
}

template <class C>
__global__ void eval_kernel(const uint8_t* q, size_t rb, const int8_t* xq, float* vals, float* dots, float* sats) {
    const int64_t chunks = kNe0 / 8;
    const int r = blockIdx.y;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
        chunk_eval<C>(q + r * rb, c, xq + c * 8, vals + (r * kNe0 + c * 8), dots + r * chunks + c, sats + r * chunks + c);
}

template <class C>
void eval_host(const std::vector<uint8_t>& q, size_t rb, const std::vector<int8_t>& xq, std::vector<float>& vals,
               std::vector<float>& dots, std::vector<float>& sats) {
    const int64_t chunks = kNe0 / 8;
    for (int r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < chunks; ++c)
            chunk_eval<C>(q.data() + r * rb, c, xq.data() + c * 8, &vals[r * kNe0 + c * 8], &dots[r * chunks + c],
                          &sats[r * chunks + c]);
}

template <class C>
bool eval_device(const std::vector<uint8_t>& q, size_t rb, const std::vector<int8_t>& xq, std::vector<float>& vals,
                 std::vector<float>& dots, std::vector<float>& sats) {
    uint8_t* dq = nullptr;
    int8_t* dx = nullptr;
    float *dv = nullptr, *dd = nullptr, *ds = nullptr;
    bool ok = cudaMalloc(&dq, q.size()) == cudaSuccess && cudaMalloc(&dx, xq.size()) == cudaSuccess &&
              cudaMalloc(&dv, 4 * vals.size()) == cudaSuccess && cudaMalloc(&dd, 4 * dots.size()) == cudaSuccess &&
              cudaMalloc(&ds, 4 * sats.size()) == cudaSuccess;
    if (ok) {
        cudaMemcpy(dq, q.data(), q.size(), cudaMemcpyHostToDevice);
        cudaMemcpy(dx, xq.data(), xq.size(), cudaMemcpyHostToDevice);
        eval_kernel<C><<<dim3(1, kRows), 64>>>(dq, rb, dx, dv, dd, ds);
        ok = cudaDeviceSynchronize() == cudaSuccess &&
             cudaMemcpy(vals.data(), dv, 4 * vals.size(), cudaMemcpyDeviceToHost) == cudaSuccess &&
             cudaMemcpy(dots.data(), dd, 4 * dots.size(), cudaMemcpyDeviceToHost) == cudaSuccess &&
             cudaMemcpy(sats.data(), ds, 4 * sats.size(), cudaMemcpyDeviceToHost) == cudaSuccess;
    }
    cudaFree(dq);
    cudaFree(dx);
    cudaFree(dv);
    cudaFree(dd);
    cudaFree(ds);
    return ok;
}

bool same_value(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

bool g_have_gpu = false;

template <class C>
bool test_type(uint32_t id, std::mt19937& rng) {
    using D = typename C::D;
    const quant::TypeTraits* tt = quant::find_type(id);
    if (!tt || !tt->quantize) {
        std::printf("id %3u: no CPU quantizer -> FAIL\n", id);
        return false;
    }
    const size_t rb = quant::row_bytes(*tt, kNe0);
    const int64_t chunks = kNe0 / 8;
    std::vector<uint8_t> q(rb * kRows);
    std::vector<float> x((size_t)kNe0), dec((size_t)(kRows * kNe0)), vals(dec.size()), dots((size_t)(kRows * chunks)),
        sats(dots.size());
    std::vector<int8_t> xq((size_t)kNe0);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    long value_bad = 0, dot_bad = 0, dev_bad = 0, group_bad = 0;
    double worst_rel = 0;
    for (int pass = 0; pass < 5; ++pass) {  // pass 0: quantized rows; 1..4: random bytes
        const bool quantized = pass == 0;
        for (int r = 0; r < kRows; ++r) {
            if (quantized) {
                for (auto& v : x) v = nd(rng) * std::ldexp(1.0f, 4 * r - 6);
                tt->quantize(x.data(), q.data() + r * rb, kNe0, nullptr);
            } else {
                for (size_t i = 0; i < rb; ++i) q[r * rb + i] = (uint8_t)rng();
            }
            for (int64_t e = 0; e < kNe0; e += 8)
                D::decode8(q.data() + r * rb, e / D::kBlockElems, (int)((e % D::kBlockElems) / 8), &dec[r * kNe0 + e]);
        }
        // Scale constant over each 32 values (16 where kScale16) and bias over 32: the kernels
        // apply them once per group.
        for (int r = 0; r < kRows; ++r)
            for (int64_t c = 0; c < chunks; ++c) {
                constexpr int cpb = D::kBlockElems / 8;
                uint32_t lo, hi;
                float sc[2], bi[2];
                const int64_t c0 = c & ~int64_t(C::kScale16 ? 1 : 3);
                C::codes8(q.data() + r * rb, c / cpb, (int)(c % cpb), lo, hi, sc[0], bi[0]);
                C::codes8(q.data() + r * rb, c0 / cpb, (int)(c0 % cpb), lo, hi, sc[1], bi[1]);
                group_bad += !same_value(sc[0], sc[1]);
                // (the bias per 32 values; per 16 for the views without a direct mma form: Q2_K)
                const int64_t c1 = c & ~int64_t(C::kDirectMma ? 3 : 1);
                C::codes8(q.data() + r * rb, c1 / cpb, (int)(c1 % cpb), lo, hi, sc[1], bi[1]);
                group_bad += !same_value(bi[0], bi[1]);
            }
        for (auto& v : xq) v = (int8_t)((int)(rng() % 255) - 127);
        eval_host<C>(q, rb, xq, vals, dots, sats);
        // (Views whose codes are their matmul's integer levels, not decode8's: kCodesDecode.)
        if (C::kCodesDecode)
            for (size_t i = 0; i < dec.size(); ++i) value_bad += !same_value(dec[i], vals[i]);
        if (quantized && C::kCodesDecode) {
            const float xd = 0.0123f;
            for (int r = 0; r < kRows; ++r) {
                double exact = 0, norm = 0, got = 0;
                for (int64_t i = 0; i < kNe0; ++i) {
                    exact += (double)dec[r * kNe0 + i] * xq[i] * xd;
                    norm += std::fabs((double)dec[r * kNe0 + i] * xq[i] * xd);
                }
                for (int64_t c = 0; c < chunks; ++c) got += (double)(xd * dots[r * chunks + c]);
                const double rel = std::fabs(got - exact) / (norm > 0 ? norm : 1.0);
                worst_rel = std::fmax(worst_rel, rel);
                dot_bad += !(rel <= 2e-6);
            }
        }
        if (g_have_gpu) {
            std::vector<float> gv(vals.size()), gd(dots.size()), gs(sats.size());
            if (!eval_device<C>(q, rb, xq, gv, gd, gs)) {
                ++dev_bad;
            } else {
                for (size_t i = 0; i < gv.size(); ++i) dev_bad += !same_bits(gv[i], vals[i]) && !(std::isnan(gv[i]) && std::isnan(vals[i]));
                for (size_t i = 0; i < gd.size(); ++i) dev_bad += !same_bits(gd[i], dots[i]) && !(std::isnan(gd[i]) && std::isnan(dots[i]));
                for (size_t i = 0; i < gs.size(); ++i) dev_bad += !same_bits(gs[i], sats[i]) && !(std::isnan(gs[i]) && std::isnan(sats[i]));
            }
        }
    }
    const bool ok = value_bad == 0 && dot_bad == 0 && dev_bad == 0 && group_bad == 0;
    std::printf("%-8s values vs decode8: %ld differ | scale/bias not constant per group: %ld | row products: worst rel %.2e (%ld bad)",
                tt->name, value_bad, group_bad, worst_rel, dot_bad);
    if (g_have_gpu) std::printf(" | device vs host: %ld differ", dev_bad);
    std::printf(" -> %s\n", ok ? "ok" : "FAIL");
    return ok;
}

}  // namespace

int main() {
    int ndev = 0;
    g_have_gpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    std::printf("cuda_int8_codes_host_test: GPU %s\n", g_have_gpu ? "present (device codes checked too)" : "absent (host only)");
    std::mt19937 rng(4242);
    bool ok = true;
    int tested = 0;
    size_t count = 0;
    const quant::TypeTraits* all = quant::all_types(&count);
    for (size_t i = 0; i < count; ++i) {
        const uint32_t id = all[i].id;
        if (dispatch_int8_type(id, [&](auto c) { ok &= test_type<decltype(c)>(id, rng); })) ++tested;
    }
    std::printf("%d types with an int8 view -> %s\n", tested, ok && tested == (int)std::size(kInt8ViewTypes) ? "ok" : "FAIL");
    return ok && tested == (int)std::size(kInt8ViewTypes) ? 0 : 1;
}
