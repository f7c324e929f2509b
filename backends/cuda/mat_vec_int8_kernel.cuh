// The int8 matrix-vector kernel of mat_vec_int8.cu (see there), in a header of its own so that
// tests/cuda/cuda_int8_kernels_emu_test.cpp can run it on the host through a thread-per-lane
// emulation before a GPU does.
#pragma once
#include "expert_groups.cuh"
#include "int8_codes.cuh"
#include "mat_vec_common.cuh"
#include "matmul_kernels.cuh"

namespace ikllm::cuda::mv {

// Sat: the reference's saturating pair sums of a kSat type (false: exact products, MatArgs::exact).
// U: chunks per thread and row whose loads are issued together, ahead of their arithmetic (2; 4
// with MatArgs::mv_unroll, single-token kernels only: more bytes in flight per thread, more
// registers). The sums are added in the same order for every U: the same bits.
template <class C, int NT, int R, bool Sat = C::kSat, int U = 2>
__global__ void __launch_bounds__(32 * kVecWarps) mat_vec_int8_kernel(MatArgs a) {
    prefetch_rows<R>(a);  // (weights only: before the wait)
    IKLLM_KERNEL_ENTRY();
    using D = typename C::D;
    const int64_t n0 = (int64_t)blockIdx.x * R;
    const int64_t t0 = (int64_t)blockIdx.y * NT;
    int64_t z = blockIdx.z;
    if constexpr (NT > 1)  // (grouped launches never take the single-token kernels: launch_int8_form)
        if (!enter_group(a, z, t0)) return;  // the whole block
    const uint8_t* wz = weights_of(a, z);
    if (!wz) return;  // the whole block: no barrier is skipped by part of it
    const uint8_t* rows[R];
    block_rows<R>(a, wz, n0, rows);
    const int nt = (int)min((int64_t)NT, a.T - t0);
    const int64_t xr0 = (a.x_div == 1 ? z : z / a.x_div) * a.T + t0;  // row of token t0 in xq
    const int8_t* xq[NT];
    const float* xd[NT];
#pragma unroll
    for (int i = 0; i < NT; ++i) {
        const int64_t r = xr0 + (i < nt ? i : 0);
        xq[i] = a.xq + r * a.K;
        xd[i] = a.xq_d + r * (a.K / 32);
    }
    float acc[R][NT];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < NT; ++i) acc[r][i] = 0.f;
    constexpr int cpb = D::kBlockElems / 8;
    constexpr int64_t kStride = 32 * kVecWarps;
    const int64_t n_chunks = a.K / 8;
    for (int64_t c0 = threadIdx.x; c0 < n_chunks; c0 += kStride * U) {
        // Loads of U chunks (weights of every row, then the activations), then their products.
        uint32_t lo[U][R], hi[U][R];
        float sc[U][R], bi[U][R];
        int icorr[U][R];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t c = c0 + u * kStride;
            if (c >= n_chunks) break;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if constexpr (Sat) C::sat8(rows[r], c / cpb, (int)(c % cpb), lo[u][r], hi[u][r], sc[u][r], icorr[u][r]);
                else {
                    C::codes8(rows[r], c / cpb, (int)(c % cpb), lo[u][r], hi[u][r], sc[u][r], bi[u][r]);
                    sc[u][r] = C::matmul_scale(sc[u][r]);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t c = c0 + u * kStride;
            if (c >= n_chunks) break;
#pragma unroll
            for (int i = 0; i < NT; ++i) {
                if (i < nt) {
                    const uint2 xv = *reinterpret_cast<const uint2*>(xq[i] + c * 8);
                    const float d = xd[i][c >> 2];
                    if constexpr (Sat) {
                        // The reference's saturating pair sums (int8_codes.cuh); the integer is exact
                        // (|value| < 2^19) and so is its conversion.
                        const int qs = bd::dp4a(0x01010101u, xv.x, bd::dp4a(0x01010101u, xv.y, 0));
#pragma unroll
                        for (int r = 0; r < R; ++r)
                            acc[r][i] += d * (sc[u][r] * bd::i2f(bd::sat_dot8(lo[u][r], hi[u][r], xv.x, xv.y) + icorr[u][r] * qs));
                        continue;
                    }
                    float xs = 0.f;
                    if constexpr (C::kHasBias) xs = bd::i2f(bd::dp4a(0x01010101u, xv.x, bd::dp4a(0x01010101u, xv.y, 0)));
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        // bd::i2f: exact (|sum| <= 8 * 127 * 127) at full rate, where I2F is quarter rate
                        float v = sc[u][r] * bd::i2f(bd::dp4a(lo[u][r], xv.x, bd::dp4a(hi[u][r], xv.y, 0)));
                        if constexpr (C::kHasBias) v += bi[u][r] * xs;
                        acc[r][i] += d * v;
                    }
                }
            }
        }
    }
    reduce_store<R, NT>(a, acc, n0, t0, z, nt);
}

}  // namespace ikllm::cuda::mv
