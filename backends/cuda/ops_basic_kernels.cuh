// Kernels of ops_basic.cu (element-wise and row-wise ops), in a header of their own so that
// tests/cuda/cuda_fused_kernels_emu_test.cpp runs them on the host (tests/cuda/emu_cuda.h)
// before a GPU does. Included by one translation unit each: internal linkage.
#pragma once
#include <cstdint>

#include "act_round_kernel.cuh"
#include "launch.cuh"
#include "op_math.cuh"
#include "warp_reduce.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

using namespace ikllm::cuda::math;

// A tensor's data pointer and strides, passed by value to kernels.
struct View {
    uint8_t* data;
    int64_t ne0, ne1, ne2, ne3;
    int64_t nb1, nb2, nb3;
};

// ---- rms_norm -------------------------------------------------------------------------------
// One block per row (i1, i2, i3); the sum of squares in double like the CPU. With ro.x the
// block then rounds its output row for the product after it (rows [K, T]: row r is token r).
__global__ void rms_norm_kernel(View x, View y, const float* gain, float eps, ActRoundOut ro) {
    IKLLM_KERNEL_ENTRY();
    const int64_t r = blockIdx.x;
    const int64_t i1 = r % x.ne1, i2 = (r / x.ne1) % x.ne2, i3 = r / (x.ne1 * x.ne2);
    const float* in = reinterpret_cast<const float*>(x.data + i1 * x.nb1 + i2 * x.nb2 + i3 * x.nb3);
    float* out = reinterpret_cast<float*>(y.data + i1 * y.nb1 + i2 * y.nb2 + i3 * y.nb3);
    const int64_t n = x.ne0;
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = (double)in[i];
        sum += v * v;
    }
    IKLLM_SHARED(double, part, [32]);
    IKLLM_SHARED(float, s_scale, );
    sum = warp_sum(sum);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        double tot = 0;
        const int nw = (blockDim.x + 31) / 32;
        for (int w = 0; w < nw; ++w) tot += part[w];
        const float mean = (float)(tot / (double)n);
        s_scale = div_rn(1.0f, sqrtf(add_rn(mean, eps)));
    }
    __syncthreads();
    const float s = s_scale;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = mul_rn(in[i], s);
        out[i] = gain ? mul_rn(v, gain[i]) : v;
    }
    if (!ro.x) return;
    __syncthreads();  // the row's outputs, written by the whole block, are visible to it now
    const int nw = blockDim.x / 32;
    for (int64_t seg = warp; seg < (n + 255) / 256; seg += nw)
        act_round_segment(out, n, seg, ro.mode, ro.f16, ro.x + r * n, ro.q ? ro.q + r * n : nullptr,
                          ro.d ? ro.d + r * (n / 32) : nullptr);
}

// ---- add / swiglu: rows r at r * nb[1] (as the CPU indexes them) ----------------------------
__global__ void add_kernel(View a, View b, View y, int64_t n_rows) {
    IKLLM_KERNEL_ENTRY();
    const int64_t ne0 = a.ne0, total = n_rows * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / ne0, i = idx % ne0;
        const float va = reinterpret_cast<const float*>(a.data + r * a.nb1)[i];
        const float vb = reinterpret_cast<const float*>(b.data + r * b.nb1)[i];
        reinterpret_cast<float*>(y.data + r * y.nb1)[i] = add_rn(va, vb);
    }
}

__global__ void swiglu_kernel(View g, View u, View y, int64_t n_rows) {
    IKLLM_KERNEL_ENTRY();
    const int64_t ne0 = g.ne0, total = n_rows * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / ne0, i = idx % ne0;
        const float vg = reinterpret_cast<const float*>(g.data + r * g.nb1)[i];
        const float vu = reinterpret_cast<const float*>(u.data + r * u.nb1)[i];
        reinterpret_cast<float*>(y.data + r * y.nb1)[i] = silu_mul(vg, vu);
    }
}

// ---- copy: 4-D strided rows ------------------------------------------------------------------
__global__ void copy_kernel(View s, View d) {
    IKLLM_KERNEL_ENTRY();
    const int64_t ne0 = s.ne0, n_rows = s.ne1 * s.ne2 * s.ne3, total = n_rows * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = idx / ne0, i = idx % ne0;
        const int64_t i1 = r % s.ne1, i2 = (r / s.ne1) % s.ne2, i3 = r / (s.ne1 * s.ne2);
        const float v = reinterpret_cast<const float*>(s.data + i1 * s.nb1 + i2 * s.nb2 + i3 * s.nb3)[i];
        reinterpret_cast<float*>(d.data + i1 * d.nb1 + i2 * d.nb2 + i3 * d.nb3)[i] = v;
    }
}

// ---- gather_rows: dst[:, j] = src[:, ids[j]] --------------------------------------------------
__global__ void gather_rows_kernel(View s, View d, const int32_t* ids, int64_t n) {
    IKLLM_KERNEL_ENTRY();
    const int64_t ne0 = s.ne0, total = n * ne0;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = idx / ne0, i = idx % ne0;
        const int32_t id = ids[j];
        float v;
        if (id < 0 || id >= s.ne1) v = __uint_as_float(0x7fc00000u);  // out of range: NaN (CPU: undefined)
        else v = reinterpret_cast<const float*>(s.data + (int64_t)id * s.nb1)[i];
        reinterpret_cast<float*>(d.data + j * d.nb1)[i] = v;
    }
}

// ---- rope: in place on x [d, heads, tokens] ---------------------------------------------------
// Block (token, group of heads): its threads first compute the pairs' cos/sin in parallel (each
// its own theta_j, bit-identical to the CPU's sequential recurrence), then rotate the group's
// heads. Few tokens split the heads over several blocks so that more than one SM works.
// Heads of one rope tensor in groups: block row y of the grid takes group y - first.
struct RopeJob {
    View x;
    int32_t heads_per_block = 1;
    int32_t first = 0;  // first grid row of this tensor
};

// Two tensors rotated with the same positions and parameters (q and k): grid rows [0, b.first)
// rotate a, the rest b.
__global__ void rope_kernel(RopeJob ja, RopeJob jb, const int32_t* pos, RopeConsts c, const float* freq_factors) {
    IKLLM_KERNEL_ENTRY();
    IKLLM_DYN_SHARED(float, sh);
    float* co = sh;           // [half]
    float* si = sh + c.half;  // [half]
    const int64_t t = blockIdx.x;
    const float p = (float)pos[t];
    for (int32_t j = threadIdx.x; j < c.half; j += blockDim.x) {
        const float ff = freq_factors ? freq_factors[j] : 1.0f;
        rope_cos_sin(rope_theta(p, c, j), j, ff, c, &co[j], &si[j]);
    }
    __syncthreads();
    const bool second = (int32_t)blockIdx.y >= jb.first;
    const View& x = second ? jb.x : ja.x;
    const int32_t heads_per_block = second ? jb.heads_per_block : ja.heads_per_block;
    const int64_t h0 = (int64_t)(blockIdx.y - (second ? jb.first : 0)) * heads_per_block;
    const int32_t heads = (int32_t)min((int64_t)heads_per_block, x.ne1 - h0);
    const int32_t total = heads * c.half;
    for (int32_t idx = threadIdx.x; idx < total; idx += blockDim.x) {
        const int32_t j = idx % c.half;
        float* row = reinterpret_cast<float*>(x.data + (h0 + idx / c.half) * x.nb1 + t * x.nb2);
        int32_t i0, i1;
        rope_pair(c, j, &i0, &i1);
        float a = row[i0], b = row[i1];
        rope_rotate(a, b, co[j], si[j]);
        row[i0] = a;
        row[i1] = b;
    }
}

// ---- kv_store ---------------------------------------------------------------------------------
// One or two stores (K and V of a layer) with the same cells: items [0, n0) are a's, the rest b's.
struct KvJob {
    View s, d;
    int64_t width = 0;  // values per cell row
};

// f32 / f16 / bf16: one thread per element.
__global__ void kv_store_elem_kernel(KvJob ja, KvJob jb, uint32_t type, const int32_t* cells, int64_t n) {
    IKLLM_KERNEL_ENTRY();
    const int64_t n0 = n * ja.width, total = n0 + n * jb.width;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const bool second = idx >= n0;
        const KvJob& j = second ? jb : ja;
        const int64_t local = second ? idx - n0 : idx;
        const int64_t t = local / j.width, i = local % j.width;
        const int32_t cell = cells[t];
        if (cell < 0) continue;  // negative: not stored (CPU: undefined)
        const float v = reinterpret_cast<const float*>(j.s.data + t * j.s.nb1)[i];
        uint8_t* out = j.d.data + (int64_t)cell * j.d.nb1;
        if (type == quant::T_F32) reinterpret_cast<float*>(out)[i] = v;
        else if (type == quant::T_F16) reinterpret_cast<uint16_t*>(out)[i] = f32_to_f16(v);
        else reinterpret_cast<uint16_t*>(out)[i] = f32_to_bf16(v);
    }
}

// q8_0: one thread per block of 32 values.
__global__ void kv_store_q8_0_kernel(KvJob ja, KvJob jb, const int32_t* cells, int64_t n) {
    IKLLM_KERNEL_ENTRY();
    const int64_t n0 = n * (ja.width / 32), total = n0 + n * (jb.width / 32);
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const bool second = idx >= n0;
        const KvJob& j = second ? jb : ja;
        const int64_t local = second ? idx - n0 : idx, nblk = j.width / 32;
        const int64_t t = local / nblk, b = local % nblk;
        const int32_t cell = cells[t];
        if (cell < 0) continue;
        const float* in = reinterpret_cast<const float*>(j.s.data + t * j.s.nb1) + 32 * b;
        float x[32];
        for (int i = 0; i < 32; ++i) x[i] = in[i];
        q8_0_encode_block(x, j.d.data + (int64_t)cell * j.d.nb1 + 34 * b);
    }
}

}  // namespace

}  // namespace ikllm::cuda
