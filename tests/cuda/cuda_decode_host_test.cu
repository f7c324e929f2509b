// Host check of the CUDA block decoders (backends/cuda/block_decode.cuh) against the CPU
// registry: for every type dispatch_weight_type supports, quantize random rows with the CPU
// quantizer, decode every 8-value chunk with BlockDecoder<T>::decode8 on the host and compare
// with traits->dequant of the whole row. A second pass decodes random bytes (every bit pattern
// of scales, signs and extra bits) and requires bitwise equality (NaN == NaN). When a GPU is
// present the same rows are also decoded by a kernel and compared the same way.
// Exit code 1 on any mismatch.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/block_decode.cu"  // weight_type_supported (checked against dispatch below)
#include "cuda/block_decode.cuh"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::cuda;

namespace {

constexpr int kRows = 4;
constexpr int64_t kNe0 = 768;  // multiple of 256 and of every block size

template <class D>
__global__ void decode_rows_kernel(const uint8_t* src, size_t row_bytes, int64_t ne0, float* dst) {
    const int64_t r = blockIdx.y;
    const int64_t nchunks = ne0 / 8;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < nchunks; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t e = t * 8;
        float v[8];
        D::decode8(src + r * row_bytes, e / D::kBlockElems, (int)((e % D::kBlockElems) / 8), v);
        for (int i = 0; i < 8; ++i) dst[r * ne0 + e + i] = v[i];
    }
}

template <class D>
void decode_host(const uint8_t* src, size_t row_bytes, int64_t ne0, int rows, float* dst) {
    for (int r = 0; r < rows; ++r)
        for (int64_t e = 0; e < ne0; e += 8)
            D::decode8(src + r * row_bytes, e / D::kBlockElems, (int)((e % D::kBlockElems) / 8), dst + r * ne0 + e);
}

template <class D>
bool decode_device(const uint8_t* src, size_t row_bytes, int64_t ne0, int rows, float* dst) {
    uint8_t* dsrc = nullptr;
    float* ddst = nullptr;
    const size_t nb = row_bytes * rows, nf = (size_t)ne0 * rows;
    if (cudaMalloc(&dsrc, nb) != cudaSuccess) return false;
    if (cudaMalloc(&ddst, nf * 4) != cudaSuccess) { cudaFree(dsrc); return false; }
    cudaMemcpy(dsrc, src, nb, cudaMemcpyHostToDevice);
    cudaMemset(ddst, 0xff, nf * 4);
    decode_rows_kernel<D><<<dim3(1, rows), 64>>>(dsrc, row_bytes, ne0, ddst);
    const bool ok = cudaDeviceSynchronize() == cudaSuccess &&
                    cudaMemcpy(dst, ddst, nf * 4, cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(dsrc);
    cudaFree(ddst);
    return ok;
}

struct Cmp {
    double max_abs = 0;
    long bad = 0, nan = 0, bit_diff = 0;
};

// strict: tolerance 1e-6*max(1,|ref|), any NaN fails. Otherwise bitwise (NaN == NaN accepted).
Cmp compare(const float* ref, const float* got, size_t n, bool strict) {
    Cmp c;
    for (size_t i = 0; i < n; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &ref[i], 4);
        std::memcpy(&b, &got[i], 4);
        const bool rn = std::isnan(ref[i]), gn = std::isnan(got[i]);
        if (rn || gn) {
            if (strict || rn != gn) ++c.nan;
            continue;
        }
        if (a != b) ++c.bit_diff;
        if (!std::isfinite(ref[i]) || !std::isfinite(got[i])) {
            if (a != b) ++c.bad;
            continue;
        }
        const double d = std::fabs((double)ref[i] - (double)got[i]);
        if (d > c.max_abs) c.max_abs = d;
        if (strict ? d > 1e-6 * std::fmax(1.0, std::fabs((double)ref[i])) : a != b) ++c.bad;
    }
    return c;
}

bool g_have_gpu = false;

template <class D>
bool test_type(uint32_t id, std::mt19937& rng) {
    const quant::TypeTraits* tt = quant::find_type(id);
    if (!tt || !tt->dequant) {
        std::printf("%-12s id %3u: no CPU dequant in the registry -> FAIL\n", tt ? tt->name : "?", id);
        return false;
    }
    bool ok = true;
    // Geometry must agree with the registry (float types: any multiple of 8 per "block").
    const int64_t per_elem_num = tt->block_bytes, per_elem_den = tt->block_elems;
    if (tt->interleave != 1 || D::kRowMetaBytes != tt->row_meta_bytes ||
        (int64_t)D::kBlockBytes * per_elem_den != per_elem_num * D::kBlockElems || D::kBlockElems % 8 != 0 ||
        kNe0 % D::kBlockElems != 0) {
        std::printf("%-12s: geometry mismatch (decoder %d/%d/%d, registry %d/%d/%d)\n", tt->name, D::kBlockElems,
                    D::kBlockBytes, D::kRowMetaBytes, tt->block_elems, tt->block_bytes, tt->row_meta_bytes);
        return false;
    }
    const size_t rb = quant::row_bytes(*tt, kNe0);
    const size_t n = (size_t)kRows * kNe0;
    std::vector<uint8_t> q(rb * kRows);
    std::vector<float> x(n), ref(n), got(n);

    // Pass 1: quantized random rows (gaussian with a few outliers, varying row scale).
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int r = 0; r < kRows; ++r) {
        const float scale = std::ldexp(1.0f, 4 * r - 6);
        for (int64_t i = 0; i < kNe0; ++i) {
            float v = nd(rng) * scale;
            if (rng() % 97 == 0) v *= 8;
            x[r * kNe0 + i] = v;
        }
    }
    const bool quantized = tt->quantize != nullptr;
    if (quantized) {
        for (int r = 0; r < kRows; ++r) tt->quantize(x.data() + r * kNe0, q.data() + r * rb, kNe0, nullptr);
    } else {
        for (auto& b : q) b = (uint8_t)rng();
    }
    for (int r = 0; r < kRows; ++r) tt->dequant(q.data() + r * rb, ref.data() + r * kNe0, kNe0);
    decode_host<D>(q.data(), rb, kNe0, kRows, got.data());
    Cmp c1 = compare(ref.data(), got.data(), n, quantized);
    if (c1.bad || c1.nan) ok = false;
    Cmp g1;
    if (g_have_gpu) {
        std::fill(got.begin(), got.end(), 0.0f);
        if (!decode_device<D>(q.data(), rb, kNe0, kRows, got.data())) {
            std::printf("%-12s: device decode failed\n", tt->name);
            ok = false;
        }
        g1 = compare(ref.data(), got.data(), n, quantized);
        if (g1.bad || g1.nan) ok = false;
    }

    // Pass 2: random bytes, bitwise (NaN == NaN).
    Cmp c2, g2;
    for (int rep = 0; rep < 4; ++rep) {
        for (auto& b : q) b = (uint8_t)rng();
        for (int r = 0; r < kRows; ++r) tt->dequant(q.data() + r * rb, ref.data() + r * kNe0, kNe0);
        decode_host<D>(q.data(), rb, kNe0, kRows, got.data());
        const Cmp c = compare(ref.data(), got.data(), n, false);
        c2.bad += c.bad;
        c2.nan += c.nan;
        c2.bit_diff += c.bit_diff;
        if (g_have_gpu && decode_device<D>(q.data(), rb, kNe0, kRows, got.data())) {
            const Cmp g = compare(ref.data(), got.data(), n, false);
            g2.bad += g.bad;
            g2.nan += g.nan;
            g2.bit_diff += g.bit_diff;
        }
    }
    if (c2.bad || c2.nan) ok = false;
    if (g_have_gpu && (g2.bad || g2.nan)) ok = false;

    std::printf("%-12s id %3u: %s max_abs %.3g bitdiff %ld bad %ld nan %ld | random bytes: bitdiff %ld nan-mismatch %ld",
                tt->name, id, quantized ? "quantized" : "random(no quantizer)", c1.max_abs, c1.bit_diff, c1.bad,
                c1.nan, c2.bit_diff, c2.nan);
    if (g_have_gpu)
        std::printf(" | GPU: max_abs %.3g bitdiff %ld bad %ld nan %ld, random bitdiff %ld nan-mismatch %ld", g1.max_abs,
                    g1.bit_diff, g1.bad, g1.nan, g2.bit_diff, g2.nan);
    std::printf(" -> %s\n", ok ? "ok" : "FAIL");
    return ok;
}

}  // namespace

int main() {
    int ndev = 0;
    g_have_gpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    std::printf("cuda_decode_host_test: rows %d x %lld, GPU %s\n", kRows, (long long)kNe0,
                g_have_gpu ? "present (device decode checked too)" : "absent (host decode only)");
    std::mt19937 rng(12345);
    bool ok = true;
    int tested = 0;
    size_t count = 0;
    const quant::TypeTraits* all = quant::all_types(&count);
    for (size_t i = 0; i < count; ++i) {
        const uint32_t id = all[i].id;
        bool ran = false;
        const bool supported = dispatch_weight_type(id, [&](auto dec) {
            ran = true;
            ok &= test_type<decltype(dec)>(id, rng);
        });
        if (supported != ran || supported != weight_type_supported(id)) {
            std::printf("%-12s id %3u: dispatch/weight_type_supported disagree -> FAIL\n", all[i].name, id);
            ok = false;
        }
        if (supported) ++tested;
        if (supported && all[i].interleave != 1) {
            std::printf("%-12s: interleaved type must not be supported -> FAIL\n", all[i].name);
            ok = false;
        }
    }
    std::printf("%d types tested: %s\n", tested, ok ? "ALL OK" : "FAILURES");
    return ok ? 0 : 1;
}
