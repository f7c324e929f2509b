// The int8 tensor-core kernel of mat_mma_int8.cu (see there), in a header of its own so that
// tests/cuda/cuda_int8_kernels_emu_test.cpp can run it on the host through a thread-per-lane
// emulation (IKLLM_MMA_EMULATION) before a GPU does.
#pragma once
#include "int8_codes.cuh"
#include "matmul_kernels.cuh"
#include "warp_reduce.cuh"

namespace ikllm::cuda::mma8 {

constexpr int kBM = 128, kBN = 64, kBK = 32;
constexpr int kThreads = 256;
constexpr int kStride = 48;  // bytes per shared-memory row of 32 codes (+16: conflict-free fragments)

// D (16x8, s32) += A (16x16, s8, row-major) * B (16x8, s8, column-major).
__device__ inline void mma_s8_16816(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
#elif defined(IKLLM_MMA_EMULATION)
    IKLLM_MMA_EMULATION(c, a0, a1, b0);
#else
    __trap();  // launch_mat_mma_int8 refuses devices below compute capability 8.0
#endif
}

// One weight chunk in registers between its global read and its shared-memory store.
struct Chunk {
    uint32_t lo = 0, hi = 0;
    float scale = 0.f, bias = 0.f;
};

template <class C>
__device__ inline void load_chunks(const MatArgs& a, const uint8_t* wz, int64_t n0, int64_t k0, Chunk (&ch)[2]) {
    using D = typename C::D;
    constexpr int cpb = D::kBlockElems / 8;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int j = threadIdx.x + i * kThreads;  // 0..511: row j / 4, chunk j % 4 of the step
        const int64_t n = min(n0 + j / 4, a.N - 1);
        const int64_t c = k0 / 8 + j % 4;
        C::codes8(wz + n * a.w_row, c / cpb, (int)(c % cpb), ch[i].lo, ch[i].hi, ch[i].scale, ch[i].bias);
        ch[i].scale = C::matmul_scale(ch[i].scale);
    }
}

template <class C>
__global__ void __launch_bounds__(kThreads) mat_mma_int8_kernel(MatArgs a) {
    __shared__ __align__(16) uint8_t As[kBM * kStride];
    __shared__ __align__(16) uint8_t Bs[kBN * kStride];
    __shared__ float Ws[kBM][2];  // weight scale per 16 values of the step
    __shared__ float Wb[kBM];     // weight bias of the step (types with a bias)
    __shared__ float Xd[kBN];     // activation scale of the step per token
    __shared__ float Xs[kBN];     // activation scale x code sum (types with a bias)
    __shared__ int Xi[kBN];       // activation code sum (kSymAccum)
    constexpr bool kSums = C::kHasBias || C::kSymAccum;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, tig = lane % 4;
    const int64_t n0 = (int64_t)blockIdx.x * kBM, t0 = (int64_t)blockIdx.y * kBN, z = blockIdx.z;
    const int wm = (warp % 4) * 32, wn = (warp / 4) * 32;
    const uint8_t* wz = a.w + z * a.w_z;
    const int8_t* xz = a.xq + z * a.T * a.K;
    const float* xdz = a.xq_d + z * a.T * (a.K / 32);

    float acc[2][4][4], bacc[2][4][4];  // bacc: the b sums of kSymAccum (int8_codes.cuh)
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = bacc[i][j][e] = 0.f;

    Chunk ch[2];
    load_chunks<C>(a, wz, n0, 0, ch);
    for (int64_t k0 = 0; k0 < a.K; k0 += kBK) {
        __syncthreads();  // the previous step's fragments and scales are read
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int j = threadIdx.x + i * kThreads, r = j / 4, c = j % 4;
            *reinterpret_cast<uint2*>(As + r * kStride + c * 8) = make_uint2(ch[i].lo, ch[i].hi);
            if (c % 2 == 0) Ws[r][c / 2] = ch[i].scale;
            if (C::kHasBias && c == 0) Wb[r] = ch[i].bias;
        }
        if (threadIdx.x < kBN * 2) {  // activation codes: 64 tokens x 32 bytes, 16 bytes a thread
            const int t = threadIdx.x / 2, half = threadIdx.x % 2;
            const bool in = t0 + t < a.T;
            const int4 v = in ? *reinterpret_cast<const int4*>(xz + (t0 + t) * a.K + k0 + 16 * half) : make_int4(0, 0, 0, 0);
            *reinterpret_cast<int4*>(Bs + t * kStride + 16 * half) = v;
            if (half == 0) Xd[t] = in ? xdz[(t0 + t) * (a.K / 32) + k0 / 32] : 0.f;
        }
        __syncthreads();
        if (kSums && threadIdx.x < kBN) {  // code sum (x scale) of each token's 32 codes
            const int t = threadIdx.x;
            const uint32_t* p = reinterpret_cast<const uint32_t*>(Bs + t * kStride);
            int s = 0;
#pragma unroll
            for (int w = 0; w < 8; ++w) s = bd::dp4a(0x01010101u, p[w], s);
            if (C::kHasBias) Xs[t] = Xd[t] * bd::i2f(s);
            if (C::kSymAccum) Xi[t] = s;
        }
        if (k0 + kBK < a.K) load_chunks<C>(a, wz, n0, k0 + kBK, ch);  // in flight during the products
        if (kSums) __syncthreads();  // Xs / Xi complete

        int ci[2][4][4];
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 16) {
            if (kk == 0 || C::kScale16) {
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
#pragma unroll
                        for (int e = 0; e < 4; ++e) ci[i][j][e] = 0;
            }
            uint32_t af[2][2], bf[4];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const uint8_t* p = As + (wm + i * 16 + g) * kStride + kk + tig * 4;
                af[i][0] = *reinterpret_cast<const uint32_t*>(p);
                af[i][1] = *reinterpret_cast<const uint32_t*>(p + 8 * kStride);
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) bf[j] = *reinterpret_cast<const uint32_t*>(Bs + (wn + j * 8 + g) * kStride + kk + tig * 4);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) mma_s8_16816(ci[i][j], af[i][0], af[i][1], bf[j]);
            if (!C::kScale16 && kk == 0) continue;  // one scale for all 32 values: sum on in int32
            if constexpr (C::kSymAccum) {
                // The reference's order (SymBatchAccum): sum((v + 127) q) is exact (|.| < 2^21).
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int e2 = 0; e2 < 2; ++e2) {
                        const float ws = Ws[wm + i * 16 + g + 8 * e2][0];
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int e1 = 0; e1 < 2; ++e1) {
                                const int t = wn + j * 8 + tig * 2 + e1, e = 2 * e2 + e1;
                                acc[i][j][e] = fmaf(bd::fmul(ws, Xd[t]), bd::i2f(ci[i][j][e] + 127 * Xi[t]), acc[i][j][e]);
                                bacc[i][j][e] = fmaf(ws, bd::fmul(Xd[t], bd::i2f(Xi[t])), bacc[i][j][e]);
                            }
                    }
            } else {
                // To float: row scale x token scale. bd::i2f is exact here (|sum| <= 32 * 127 * 127)
                // and full rate, where I2F is quarter rate: this step is the kernel's float work.
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int e2 = 0; e2 < 2; ++e2) {
                        const int r = wm + i * 16 + g + 8 * e2;
                        const float ws = Ws[r][C::kScale16 ? kk / 16 : 0];
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int e1 = 0; e1 < 2; ++e1) {
                                const int t = wn + j * 8 + tig * 2 + e1;
                                acc[i][j][2 * e2 + e1] += ws * Xd[t] * bd::i2f(ci[i][j][2 * e2 + e1]);
                            }
                    }
            }
        }
        if (C::kHasBias) {  // bias x (activation scale x code sum), once per 32 values
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int e2 = 0; e2 < 2; ++e2) {
                    const float wb = Wb[wm + i * 16 + g + 8 * e2];
#pragma unroll
                    for (int j = 0; j < 4; ++j)
#pragma unroll
                        for (int e1 = 0; e1 < 2; ++e1) acc[i][j][2 * e2 + e1] += wb * Xs[wn + j * 8 + tig * 2 + e1];
                }
        }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int e2 = 0; e2 < 2; ++e2) {
            const int64_t n = n0 + wm + i * 16 + g + 8 * e2;
            if (n >= a.N) continue;
            const float b = a.bias ? a.bias[n] : 0.f;
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int e1 = 0; e1 < 2; ++e1) {
                    const int64_t t = t0 + wn + j * 8 + tig * 2 + e1;
                    if (t < a.T) {
                        float* y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + z * a.y_z + t * a.y_t);
                        const int e = 2 * e2 + e1;
                        y[n] = (C::kSymAccum ? fmaf(-127.0f, bacc[i][j][e], acc[i][j][e]) : acc[i][j][e]) + b;
                    }
                }
        }
}

// The reference's batch form of a kConv type (int8_codes.cuh), per 256-weight block of a row:
// the exact integers P = isc * level, their largest magnitude mx, dnew = mx * kConvD0; P kept
// as it is when dnew < 1 (then dnew = 1), else q = RNE(P * (1 / dnew)); block scale
// fp16(d * dnew). kConvFloat types (Q2_K) from the float values instead (see there). Writes ConvQ8Codes rows (out_row bytes apart, batch entry z after N rows).
// One warp per block, a chunk of 8 weights per lane.
template <class C>
__global__ void conv_encode_kernel(MatArgs a, uint8_t* out, int64_t out_row) {
    const int64_t nb = a.K / 256;
    const int64_t wi = ((int64_t)blockIdx.x * kThreads + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    const int64_t n = wi / nb, ib = wi % nb, z = blockIdx.z;
    if (n >= a.N) return;  // the whole warp
    uint8_t* b = out + (z * a.N + n) * out_row + ib * ConvQ8Codes::D::kBlockBytes;
    if constexpr (C::kConvFloat) {
        // From the float values (Q2_K; CPU: kquant_unpack.h conv_block): every product in them
        // is exact, so decode8's values are the CPU's w bit for bit.
        float w[8];
        C::D::decode8(a.w + z * a.w_z + n * a.w_row, ib, lane, w);
        float mx = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) mx = fmaxf(mx, fabsf(w[e]));
        mx = warp_max(mx);
        const float dnew = mx * C::kConvD0;
        const float inv = dnew > 0.0f ? 1.0f / dnew : 0.0f;
        uint32_t q[2] = {0, 0};
#pragma unroll
        for (int e = 0; e < 8; ++e) q[e / 4] |= (uint32_t)(uint8_t)(int8_t)(int)rintf(w[e] * inv) << 8 * (e & 3);
        reinterpret_cast<uint32_t*>(b + 4 + 8 * lane)[0] = q[0];
        reinterpret_cast<uint32_t*>(b + 4 + 8 * lane)[1] = q[1];
        if (lane == 0) {
            const float scale = bd::round_f16(dnew);
            memcpy(b, &scale, 4);
        }
        return;
    } else {
    uint32_t lo, hi;
    int isc;
    float dw;
    C::conv8(a.w + z * a.w_z + n * a.w_row, ib, lane, lo, hi, isc, dw);
    int P[8];
    float mx = 0.f;  // |P| <= 128 * 127: exact as a float
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        P[e] = isc * (int)(int8_t)(uint8_t)((e < 4 ? lo : hi) >> 8 * (e & 3));
        mx = fmaxf(mx, bd::i2f(P[e] < 0 ? -P[e] : P[e]));
    }
    mx = warp_max(mx);
    float dnew = mx * C::kConvD0;
    uint32_t q[2] = {0, 0};
    if (dnew < 1.0f) {
        dnew = 1.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) q[e / 4] |= (uint32_t)(uint8_t)(int8_t)P[e] << 8 * (e & 3);
    } else {
        const float inv = 1.0f / dnew;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const int v = (int)rintf(bd::i2f(P[e]) * inv);
            q[e / 4] |= (uint32_t)(uint8_t)(int8_t)v << 8 * (e & 3);
        }
    }
    reinterpret_cast<uint32_t*>(b + 4 + 8 * lane)[0] = q[0];
    reinterpret_cast<uint32_t*>(b + 4 + 8 * lane)[1] = q[1];
    if (lane == 0) {
        const float scale = bd::round_f16(dw * dnew);
        memcpy(b, &scale, 4);
    }
    }
}

// The reference's batch form of a kConv32 type (Q6_K; CPU: kquant_q6k_conv.h), per 32 weights
// of a row: exact integers P = isc * code, m = max |P|; m <= 127: codes P, scale d; else codes
// RNE(P * (127 / m)), scale fp16(d * m / 127). Writes ConvQ8x32Codes rows (out_row bytes
// apart, batch entry z after N rows). A thread per 8 weights, 4 lanes per 32.
template <class C>
__global__ void conv32_encode_kernel(MatArgs a, uint8_t* out, int64_t out_row) {
    using D = typename C::D;
    constexpr int cpb = D::kBlockElems / 8;
    const int64_t chunks = a.K / 8;
    const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    const int64_t n = i / chunks, c = i % chunks, z = blockIdx.z;
    // Threads past the last row take part in the shuffles with row N - 1 and write nothing.
    uint32_t lo, hi;
    int isc;
    float dw;
    C::conv8(a.w + z * a.w_z + min(n, a.N - 1) * a.w_row, c / cpb, (int)(c % cpb), lo, hi, isc, dw);
    int P[8];
    float m = 0.f;  // |P| <= 128 * 32: exact as a float
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        P[e] = isc * (int)(int8_t)(uint8_t)((e < 4 ? lo : hi) >> 8 * (e & 3));
        m = fmaxf(m, bd::i2f(P[e] < 0 ? -P[e] : P[e]));
    }
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    uint32_t q[2] = {0, 0};
    float scale = dw;
    if (m <= 127.0f) {
#pragma unroll
        for (int e = 0; e < 8; ++e) q[e / 4] |= (uint32_t)(uint8_t)(int8_t)P[e] << 8 * (e & 3);
    } else {
        const float id = 127.0f / m;
#pragma unroll
        for (int e = 0; e < 8; ++e) q[e / 4] |= (uint32_t)(uint8_t)(int8_t)(int)rintf(bd::fmul(bd::i2f(P[e]), id)) << 8 * (e & 3);
        scale = bd::round_f16(bd::fmul(dw, m) / 127.0f);
    }
    if (n >= a.N) return;
    uint8_t* b = out + (z * a.N + n) * out_row + (c / 4) * ConvQ8x32Codes::D::kBlockBytes;
    reinterpret_cast<uint32_t*>(b + 4 + 8 * (c % 4))[0] = q[0];
    reinterpret_cast<uint32_t*>(b + 4 + 8 * (c % 4))[1] = q[1];
    if (c % 4 == 0) memcpy(b, &scale, 4);
}

// The kernels of one prompt-batch call in the reference's numerics for its size (int8_codes.cuh),
// run by X (mat_mma_int8.cu launches them; the emulation test runs them on the host):
//   x.template encode<C, Conv32>(a, b): re-encodes a's weights (conv_encode_kernel, or
//     conv32_encode_kernel), b = a pointing at the re-encoded rows; false: not possible here;
//   x.template mma<View>(a): mat_mma_int8_kernel<View>.
// False when nothing ran.
template <class C, class X>
bool run_batch_forms(const MatArgs& a, bool batch_form, X& x) {
    if constexpr (C::kConv) {
        if (batch_form) {
            MatArgs b;
            if (a.K % 256 != 0 || !x.template encode<C, false>(a, b)) return false;
            x.template mma<ConvQ8Codes>(b);
            return true;
        }
    }
    if constexpr (C::kConv32) {
        if (batch_form && a.T >= C::kConv32MinTokens) {
            MatArgs b;
            if (!x.template encode<C, true>(a, b)) return false;
            x.template mma<ConvQ8x32Codes>(b);
            return true;
        }
    }
    if constexpr (C::kConvF16Scales) {
        if (batch_form) {
            x.template mma<F16ScaleCodes<C>>(a);
            return true;
        }
    }
    if constexpr (C::kSymBatch) {
        if (batch_form) {
            x.template mma<SymBatchCodes<C>>(a);
            return true;
        }
    }
    if constexpr (!C::kDirectMma) {
        return false;  // the fp16 tensor cores instead
    } else {
        x.template mma<C>(a);
        return true;
    }
}

}  // namespace ikllm::cuda::mma8
