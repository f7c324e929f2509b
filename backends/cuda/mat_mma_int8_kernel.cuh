// The int8 tensor-core kernel of mat_mma_int8.cu (see there), in a header of its own so that
// tests/cuda/cuda_int8_kernels_emu_test.cpp can run it on the host through a thread-per-lane
// emulation (IKLLM_MMA_EMULATION) before a GPU does.
#pragma once
#include "expert_groups.cuh"
#include "int8_codes.cuh"
#include "launch.cuh"
#include "matmul_kernels.cuh"
#include "warp_reduce.cuh"

namespace ikllm::cuda::mma8 {

// A block owns kBM weight rows x kBN tokens; K goes in steps of 32 x S values (Step<S>), each
// step's S sub-steps of 32 scaled to float in order, so the step size never changes the result.
constexpr int kBM = 128, kBN = 64;
constexpr int kThreads = 256;
template <int S>
struct Step {
    static constexpr int kSub = S, kBK = 32 * S;
    static constexpr int kStride = kBK + 16;              // bytes per shared-memory row of kBK codes (+16: conflict-free fragments)
    static constexpr int kChunks = kBM * kBK / 8 / kThreads;  // weight chunks (8 codes) per thread
    static constexpr int kPieces = kBN * kBK / 16;             // 16-byte pieces of the activation codes
    static_assert(kPieces <= kThreads && kBN * kSub <= kThreads, "a step's activations: one piece and one scale per thread at most");
};

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

// A step's operands in registers: read from global memory one step ahead, while the tensor
// cores work on the step before (so neither the weights' nor the activations' latency is paid
// inside a step).
template <int S>
struct StepLoad {
    Chunk ch[Step<S>::kChunks];
    int4 x = make_int4(0, 0, 0, 0);  // 16 activation codes (threads below kPieces): token tid / (kBK / 16), piece tid % (kBK / 16)
    float xd = 0.f;                  // an activation scale (threads below kBN * kSub)
};

template <class C, int S>
__device__ inline void load_step(const MatArgs& a, const uint8_t* wz, const int8_t* xz, const float* xdz, int64_t n0,
                                 int64_t t0, int64_t k0, StepLoad<S>& s) {
    using D = typename C::D;
    constexpr int kBK = Step<S>::kBK, kChunks = Step<S>::kChunks, kPieces = Step<S>::kPieces, kSub = S;
    constexpr int cpb = D::kBlockElems / 8;
    constexpr int row_chunks = kBK / 8;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
        const int j = threadIdx.x + i * kThreads;  // row j / row_chunks, chunk j % row_chunks of the step
        const int64_t n = min(n0 + j / row_chunks, a.N - 1);
        const int64_t c = k0 / 8 + j % row_chunks;
        if (c * 8 < a.K) {
            C::codes8(wz + n * a.w_row, c / cpb, (int)(c % cpb), s.ch[i].lo, s.ch[i].hi, s.ch[i].scale, s.ch[i].bias);
            s.ch[i].scale = C::matmul_scale(s.ch[i].scale);
        } else {
            s.ch[i] = Chunk{};  // past K (the last step of an odd number of 32s): never multiplied
        }
    }
    if (threadIdx.x < kPieces) {
        const int t = threadIdx.x / (kBK / 16), piece = threadIdx.x % (kBK / 16);
        const bool in = t0 + t < a.T && k0 + 16 * piece < a.K;
        s.x = in ? *reinterpret_cast<const int4*>(xz + (t0 + t) * a.K + k0 + 16 * piece) : make_int4(0, 0, 0, 0);
    }
    if (threadIdx.x < kBN * kSub) {
        const int tt = threadIdx.x / kSub, sub = threadIdx.x % kSub;
        const bool ok = t0 + tt < a.T && k0 + 32 * sub < a.K;
        s.xd = ok ? xdz[(t0 + tt) * (a.K / 32) + k0 / 32 + sub] : 0.f;
    }
}

template <class C, int S = 1>
__global__ void __launch_bounds__(kThreads) mat_mma_int8_kernel(MatArgs a) {
    IKLLM_KERNEL_ENTRY();
    constexpr int kSub = S, kBK = Step<S>::kBK, kStride = Step<S>::kStride, kChunks = Step<S>::kChunks,
                  kPieces = Step<S>::kPieces;
    IKLLM_SHARED_ALIGNED(16, uint8_t, As, [kBM * kStride]);
    IKLLM_SHARED_ALIGNED(16, uint8_t, Bs, [kBN * kStride]);
    IKLLM_SHARED(float, Ws, [kBM][2 * kSub]);  // weight scale per 16 values of the step
    IKLLM_SHARED(float, Wb, [kBM][kSub]);      // weight bias per 32 values (types with a bias)
    IKLLM_SHARED(float, Xd, [kBN][kSub]);      // activation scale per 32 values, per token
    IKLLM_SHARED(float, Xs, [kBN][kSub]);      // activation scale x code sum (types with a bias)
    IKLLM_SHARED(int, Xi, [kBN][kSub]);        // activation code sum (kSymAccum)
    constexpr bool kSums = C::kHasBias || C::kSymAccum;
    constexpr int row_chunks = kBK / 8;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, tig = lane % 4;
    const int64_t n0 = (int64_t)blockIdx.x * kBM, t0 = (int64_t)blockIdx.y * kBN;
    int64_t z = blockIdx.z;
    if (!enter_group(a, z, t0)) return;  // the whole block
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

    StepLoad<S> ld;
    load_step<C, S>(a, wz, xz, xdz, n0, t0, 0, ld);
    for (int64_t k0 = 0; k0 < a.K; k0 += kBK) {
        __syncthreads();  // the previous step's fragments and scales are read
#pragma unroll
        for (int i = 0; i < kChunks; ++i) {
            const int j = threadIdx.x + i * kThreads, r = j / row_chunks, c = j % row_chunks;
            *reinterpret_cast<uint2*>(As + r * kStride + c * 8) = make_uint2(ld.ch[i].lo, ld.ch[i].hi);
            if (c % 2 == 0) Ws[r][c / 2] = ld.ch[i].scale;
            if (C::kHasBias && c % 4 == 0) Wb[r][c / 4] = ld.ch[i].bias;
        }
        if (threadIdx.x < kPieces) {
            const int t = threadIdx.x / (kBK / 16), piece = threadIdx.x % (kBK / 16);
            *reinterpret_cast<int4*>(Bs + t * kStride + 16 * piece) = ld.x;
        }
        {
            if (threadIdx.x < kBN * kSub) Xd[threadIdx.x / kSub][threadIdx.x % kSub] = ld.xd;
        }
        __syncthreads();
        if (kSums && threadIdx.x < kBN * kSub) {  // code sum (x scale) of each token's 32 codes
            const int t = threadIdx.x / kSub, sub = threadIdx.x % kSub;
            const uint32_t* p = reinterpret_cast<const uint32_t*>(Bs + t * kStride + 32 * sub);
            int s = 0;
#pragma unroll
            for (int w = 0; w < 8; ++w) s = bd::dp4a(0x01010101u, p[w], s);
            if (C::kHasBias) Xs[t][sub] = Xd[t][sub] * bd::i2f(s);
            if (C::kSymAccum) Xi[t][sub] = s;
        }
        if (k0 + kBK < a.K) load_step<C, S>(a, wz, xz, xdz, n0, t0, k0 + kBK, ld);  // in flight during the products
        if (kSums) __syncthreads();  // Xs / Xi complete

#pragma unroll
        for (int sub = 0; sub < kSub; ++sub) {
            if (k0 + 32 * sub >= a.K) break;  // (uniform) the last step of an odd number of 32s
            int ci[2][4][4];
#pragma unroll
            for (int kk = 0; kk < 32; kk += 16) {
                if (kk == 0 || C::kScale16) {
#pragma unroll
                    for (int i = 0; i < 2; ++i)
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int e = 0; e < 4; ++e) ci[i][j][e] = 0;
                }
                const int kc = 32 * sub + kk;  // column of the step
                uint32_t af[2][2], bf[4];
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    const uint8_t* p = As + (wm + i * 16 + g) * kStride + kc + tig * 4;
                    af[i][0] = *reinterpret_cast<const uint32_t*>(p);
                    af[i][1] = *reinterpret_cast<const uint32_t*>(p + 8 * kStride);
                }
#pragma unroll
                for (int j = 0; j < 4; ++j) bf[j] = *reinterpret_cast<const uint32_t*>(Bs + (wn + j * 8 + g) * kStride + kc + tig * 4);
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
                            const float ws = Ws[wm + i * 16 + g + 8 * e2][2 * sub];
#pragma unroll
                            for (int j = 0; j < 4; ++j)
#pragma unroll
                                for (int e1 = 0; e1 < 2; ++e1) {
                                    const int t = wn + j * 8 + tig * 2 + e1, e = 2 * e2 + e1;
                                    const float xd = Xd[t][sub];
                                    const int xi = Xi[t][sub];
                                    acc[i][j][e] = fmaf(bd::fmul(ws, xd), bd::i2f(ci[i][j][e] + 127 * xi), acc[i][j][e]);
                                    bacc[i][j][e] = fmaf(ws, bd::fmul(xd, bd::i2f(xi)), bacc[i][j][e]);
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
                            const float ws = Ws[r][2 * sub + (C::kScale16 ? kk / 16 : 0)];
#pragma unroll
                            for (int j = 0; j < 4; ++j)
#pragma unroll
                                for (int e1 = 0; e1 < 2; ++e1) {
                                    const int t = wn + j * 8 + tig * 2 + e1;
                                    acc[i][j][2 * e2 + e1] += ws * Xd[t][sub] * bd::i2f(ci[i][j][2 * e2 + e1]);
                                }
                        }
                }
            }
            if (C::kHasBias) {  // bias x (activation scale x code sum), once per 32 values
#pragma unroll
                for (int i = 0; i < 2; ++i)
#pragma unroll
                    for (int e2 = 0; e2 < 2; ++e2) {
                        const float wb = Wb[wm + i * 16 + g + 8 * e2][sub];
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int e1 = 0; e1 < 2; ++e1) acc[i][j][2 * e2 + e1] += wb * Xs[wn + j * 8 + tig * 2 + e1][sub];
                    }
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
    IKLLM_KERNEL_ENTRY();
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
        C::D::decode8(group_weights(a, z) + n * a.w_row, ib, lane, w);
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
    C::conv8(group_weights(a, z) + n * a.w_row, ib, lane, lo, hi, isc, dw);
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
    IKLLM_KERNEL_ENTRY();
    using D = typename C::D;
    constexpr int cpb = D::kBlockElems / 8;
    const int64_t chunks = a.K / 8;
    const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
    const int64_t n = i / chunks, c = i % chunks, z = blockIdx.z;
    // Threads past the last row take part in the shuffles with row N - 1 and write nothing.
    uint32_t lo, hi;
    int isc;
    float dw;
    C::conv8(group_weights(a, z) + min(n, a.N - 1) * a.w_row, c / cpb, (int)(c % cpb), lo, hi, isc, dw);
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
