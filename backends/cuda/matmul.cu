// Matrix products on the GPU for every weight type with a BlockDecoder (block_decode.cuh).
#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "act_round.cuh"
#include "act_round_kernel.cuh"
#include "act_round_cache.h"
#include "block_decode.cuh"
#include "cuda_ops.cuh"
#include "expert_groups.cuh"
#include "launch.cuh"
#include "mat_vec_common.cuh"
#include "matmul_kernels.cuh"

namespace ikllm::cuda {

namespace {

using mv::kVecMaxTokens;
using mv::kVecWarps;
using mv::weights_of;


__device__ inline const float* x_row(const MatArgs& a, int64_t z, int64_t t) {
    const int64_t r = a.x_rows ? a.x_rows[t] : t;
    // (a 64-bit division per activation load made the tensor-core kernel 30 % slower)
    const int64_t zb = a.x_div == 1 ? z : z / a.x_div;
    return reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.x) + zb * a.x_z + r * a.x_t);
}

// The same without x_div, for the tensor-core kernel (x_div is 1 there: launch_mat checks),
// whose per-value activation loads are instruction-bound.
__device__ inline const float* x_row_flat(const MatArgs& a, int64_t z, int64_t t) {
    const int64_t r = a.x_rows ? a.x_rows[t] : t;
    return reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.x) + z * a.x_z + r * a.x_t);
}

// Generation: a block owns R weight rows and up to NT tokens; its kVecWarps warps split the
// row into 8-value chunks (consecutive chunks to consecutive threads, so a warp's loads are
// contiguous), and the partial sums meet in shared memory. Enough blocks to keep every SM's
// memory pipeline full at T = 1 (N / R blocks of kVecWarps warps), each activation chunk is
// read once (16-byte loads) for the R rows, and the R rows' weights (two chunks deep) are
// independent loads in flight together. Activation rows must be 16-byte aligned
// (launch_mat(env) copies them when they are not).
template <class D, int NT, int R>
__global__ void __launch_bounds__(32 * kVecWarps) mat_vec_kernel(MatArgs a) {
    mv::prefetch_rows<R>(a);  // (weights only: before the wait)
    IKLLM_KERNEL_ENTRY();
    const int64_t n0 = (int64_t)blockIdx.x * R;
    const int64_t t0 = (int64_t)blockIdx.y * NT;
    int64_t z = blockIdx.z;
    if constexpr (NT > 1)  // (grouped launches never take the single-token kernels: launch_typed)
        if (!enter_group(a, z, t0)) return;  // the whole block
    const uint8_t* wz = weights_of(a, z);
    if (!wz) return;  // the whole block: no barrier is skipped by part of it
    const uint8_t* rows[R];
    mv::block_rows<R>(a, wz, n0, rows);
    const int nt = (int)min((int64_t)NT, a.T - t0);
    const float* xr[NT];
#pragma unroll
    for (int i = 0; i < NT; ++i) xr[i] = x_row(a, z, t0 + (i < nt ? i : 0));
    float acc[R][NT];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < NT; ++i) acc[r][i] = 0.f;
    constexpr int cpb = D::kBlockElems / 8;
    const int64_t n_chunks = a.K / 8;
#pragma unroll 2
    for (int64_t c = threadIdx.x; c < n_chunks; c += 32 * kVecWarps) {
        float w8[R][8];
#pragma unroll
        for (int r = 0; r < R; ++r) D::decode8(rows[r], c / cpb, (int)(c % cpb), w8[r]);
#pragma unroll
        for (int i = 0; i < NT; ++i) {
            if (i < nt) {
                const float4* xp = reinterpret_cast<const float4*>(xr[i] + c * 8);
                const float4 x0 = xp[0], x1 = xp[1];
#pragma unroll
                for (int r = 0; r < R; ++r)
                    acc[r][i] += w8[r][0] * x0.x + w8[r][1] * x0.y + w8[r][2] * x0.z + w8[r][3] * x0.w +
                                 w8[r][4] * x1.x + w8[r][5] * x1.y + w8[r][6] * x1.z + w8[r][7] * x1.w;
            }
        }
    }
    mv::reduce_store<R, NT>(a, acc, n0, t0, z, nt);
}

// Generation, one token, weights staged through shared memory: the block's R rows are
// copied a stage (kStageValues values per row) at a time with 16-byte asynchronous copies
// (cp.async), kStages deep, so each SM keeps tens of KiB of weight reads in flight without
// holding them in registers; the threads then decode from shared memory (the decoders read it
// like global memory: same offsets modulo 16) and multiply with the activations. Needs rows
// without row-level metadata, 16-byte aligned rows of a multiple of 16 bytes, and 16-byte
// aligned activations (mat_vec_staged_fits).
constexpr int kStages = 4;
constexpr int kStageValues = 1024;  // a multiple of every block size (<= 256)
constexpr int kStagedRows = 4;

#ifdef IKLLM_CUDA_EMULATION  // (host emulation: the copies land at the wait, tests/cuda/emu_cuda.h)
inline void cp_async16(void* smem, const void* gmem) { ::emu::cp_async16(smem, gmem); }
inline void cp_async_commit() { ::emu::cp_async_commit(); }
template <int N>
inline void cp_async_wait() {
    ::emu::cp_async_wait(N);
}
#else
__device__ inline void cp_async16(void* smem, const void* gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ inline void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#endif

template <class D>
constexpr int64_t staged_row_bytes() {  // shared memory per row and stage, with 16-byte slack at both ends
    return ((int64_t)kStageValues / D::kBlockElems * D::kBlockBytes + 15) / 16 * 16 + 32;
}

template <class D, int R>
__global__ void __launch_bounds__(32 * kVecWarps) mat_vec_staged_kernel(MatArgs a) {
    mv::prefetch_rows<R>(a);  // (weights only: before the wait)
    IKLLM_KERNEL_ENTRY();
    IKLLM_DYN_SHARED(uint8_t, stage_mem);  // [kStages][R][staged_row_bytes]
    constexpr int64_t kRowBytes = staged_row_bytes<D>();
    constexpr int E = D::kBlockElems, B = D::kBlockBytes, cpb = E / 8;
    const int64_t n0 = (int64_t)blockIdx.x * R;
    const int64_t z = blockIdx.z;
    const uint8_t* wz = weights_of(a, z);
    if (!wz) return;  // the whole block
    const uint8_t* rows[R];
    mv::block_rows<R>(a, wz, n0, rows);
    const float* x = x_row(a, z, 0);
    const int64_t n_steps = (a.K + kStageValues - 1) / kStageValues;
    auto byte_lo = [&](int64_t s) { return (s * kStageValues / E * B) & ~(int64_t)15; };
    auto issue = [&](int64_t s) {
        if (s < n_steps) {
            const int64_t v1 = min(a.K, (s + 1) * kStageValues);
            const int64_t lo = byte_lo(s), hi = (v1 / E * B + 15) & ~(int64_t)15;
            uint8_t* buf = stage_mem + (s % kStages) * R * kRowBytes;
            const int n16 = (int)((hi - lo) / 16);
#pragma unroll
            for (int r = 0; r < R; ++r)
                for (int i = threadIdx.x; i < n16; i += 32 * kVecWarps) cp_async16(buf + r * kRowBytes + i * 16, rows[r] + lo + i * 16);
        }
        cp_async_commit();  // an empty group past the end keeps the group count uniform
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue(s);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.f;
    for (int64_t s = 0; s < n_steps; ++s) {
        cp_async_wait<kStages - 2>();  // this thread's copies of stage s are done
        __syncthreads();               // everyone's; and stage s - 1's buffer is free again
        issue(s + kStages - 1);
        const uint8_t* buf = stage_mem + (s % kStages) * R * kRowBytes;
        const int64_t lo = byte_lo(s);
        const int64_t c0 = s * kStageValues / 8, c1 = min(a.K, (s + 1) * kStageValues) / 8;
        for (int64_t c = c0 + threadIdx.x; c < c1; c += 32 * kVecWarps) {
            const float4* xp = reinterpret_cast<const float4*>(x + c * 8);
            const float4 x0 = xp[0], x1 = xp[1];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                float w8[8];
                // A row pointer whose blocks land in this stage's copy (offsets kept modulo 16).
                D::decode8(buf + r * kRowBytes - lo, c / cpb, (int)(c % cpb), w8);
                acc[r] += w8[0] * x0.x + w8[1] * x0.y + w8[2] * x0.z + w8[3] * x0.w + w8[4] * x1.x + w8[5] * x1.y +
                          w8[6] * x1.z + w8[7] * x1.w;
            }
        }
    }
    cp_async_wait<0>();
    float acc2[R][1];
#pragma unroll
    for (int r = 0; r < R; ++r) acc2[r][0] = acc[r];
    mv::reduce_store<R, 1>(a, acc2, n0, 0, z, 1);
}

template <class D>
size_t staged_smem_bytes() {
    return (size_t)kStages * kStagedRows * (size_t)staged_row_bytes<D>();
}

template <class D>
bool mat_vec_staged_fits(const MatArgs& a) {
    if (!a.staged || D::kRowMetaBytes != 0 || a.T != 1 || staged_smem_bytes<D>() > 48 * 1024) return false;
    const int64_t row_len = a.K / D::kBlockElems * D::kBlockBytes;
    const bool batched = a.Z > 1 || a.w_ids;
    return row_len % 16 == 0 && a.w_row % 16 == 0 && reinterpret_cast<uintptr_t>(a.w) % 16 == 0 &&
           (!batched || a.w_z % 16 == 0) && (reinterpret_cast<uintptr_t>(a.x) | (batched ? a.x_z : 0)) % 16 == 0;
}

// Prompt batches: 128 weight rows x 64 tokens per block of 8 warps (each 32 x 32), K in steps
// of 64. Weights are decoded to fp16 in shared memory, activations rounded to fp16, products
// accumulated in fp32 on the tensor cores. The next step's weights and activations are read
// into registers while the tensor cores work on the current one. 126-128 registers (ptxas,
// sm_90; __launch_bounds__ asks for 2 blocks per SM): with one activation column of 16 tokens
// per thread (16 row addresses kept across the K loop) it took 242, one block per SM.
constexpr int kTileM = 128, kTileN = 64, kTileK = 64, kLdAB = kTileK + 8, kLdC = kTileM + 4;
constexpr int kTcThreads = 256;
constexpr int kAChunks = kTileM * (kTileK / 8) / kTcThreads;  // 8-value weight chunks per thread
constexpr int kBValues = kTileN * kTileK / kTcThreads;        // activations per thread
constexpr size_t kTcSmemAB = sizeof(__half) * (size_t)(kTileM + kTileN) * kLdAB;
constexpr size_t kTcSmemC = sizeof(float) * (size_t)kTileN * kLdC;
constexpr size_t kTcSmem = kTcSmemAB > kTcSmemC ? kTcSmemAB : kTcSmemC;

// A step's operands in registers, already rounded to fp16 (the values the shared-memory store
// rounded before). Activations: thread tid takes 16 consecutive columns of one token (four
// 16-byte loads from one row where rows are 16-byte aligned), where it took one column of 16
// tokens (16 row addresses, 16 loads).
struct TcStep {
    __half2 w[kAChunks][4];  // weight chunk i: 8 values
    __half2 x[8];            // token tid / 4, columns 16 (tid % 4) ...
};
static_assert(kBValues == 16 && kTileN * kTileK == 16 * kTcThreads, "16 activations per thread: 4 threads per token");

template <class D>
__device__ inline void tc_load(const MatArgs& a, const uint8_t* wbase, int64_t n0, int64_t t0, int64_t z, int64_t k0,
                               bool x16, TcStep& st) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
        const int j = tid + i * kTcThreads;
        const int r = j / (kTileK / 8), ch = j % (kTileK / 8);
        const int64_t n = n0 + r, kk = k0 + ch * 8;
        float wv[8];
        if (n < a.N && kk < a.K) {  // K is a multiple of 32, not always of the 64-wide step
            D::decode8(wbase + n * a.w_row, kk / D::kBlockElems, (int)((kk % D::kBlockElems) / 8), wv);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) wv[e] = 0.f;
        }
#pragma unroll
        for (int e = 0; e < 8; e += 2) st.w[i][e / 2] = __floats2half2_rn(wv[e], wv[e + 1]);
    }
    const int t = tid / 4, c = (tid % 4) * 16;
    float xv[16];
    if (t0 + t < a.T && k0 + c < a.K) {  // (K is a multiple of 32: all 16 columns or none)
        const float* xr = x_row_flat(a, z, t0 + t) + k0 + c;
        if (x16) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float4 v = reinterpret_cast<const float4*>(xr)[q];
                xv[4 * q] = v.x;
                xv[4 * q + 1] = v.y;
                xv[4 * q + 2] = v.z;
                xv[4 * q + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int e = 0; e < 16; ++e) xv[e] = xr[e];
        }
    } else {
#pragma unroll
        for (int e = 0; e < 16; ++e) xv[e] = 0.f;
    }
#pragma unroll
    for (int e = 0; e < 16; e += 2) st.x[e / 2] = __floats2half2_rn(xv[e], xv[e + 1]);
}

__device__ inline void tc_store(__half* As, __half* Bs, const TcStep& st) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
        const int j = tid + i * kTcThreads;
        const int r = j / (kTileK / 8), ch = j % (kTileK / 8);
        *reinterpret_cast<uint4*>(&As[r * kLdAB + ch * 8]) = *reinterpret_cast<const uint4*>(st.w[i]);
    }
    uint4* b = reinterpret_cast<uint4*>(&Bs[(tid / 4) * kLdAB + (tid % 4) * 16]);
    b[0] = *reinterpret_cast<const uint4*>(&st.x[0]);
    b[1] = *reinterpret_cast<const uint4*>(&st.x[4]);
}

template <class D>
__global__ void __launch_bounds__(kTcThreads, 2) mat_tc_kernel(MatArgs a) {
    IKLLM_KERNEL_ENTRY();
    using namespace nvcuda;
    IKLLM_SHARED_ALIGNED(128, unsigned char, smem, [kTcSmem]);
    __half* As = reinterpret_cast<__half*>(smem);
    __half* Bs = As + kTileM * kLdAB;
    float* Cs = reinterpret_cast<float*>(smem);  // reused for the epilogue
    const int warp = threadIdx.x / 32;
    const int64_t n0 = (int64_t)blockIdx.x * kTileM, t0 = (int64_t)blockIdx.y * kTileN;
    int64_t z = blockIdx.z;
    if (!enter_group(a, z, t0)) return;  // the whole block
    const int wm = (warp % 4) * 32, wn = (warp / 4) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
    const uint8_t* wbase = a.w + z * a.w_z;
    // Rows 16-byte aligned: vector loads (uniform over the launch).
    const bool x16 = ((reinterpret_cast<uintptr_t>(a.x) | a.x_t | a.x_z) & 15) == 0;
    TcStep st;
    tc_load<D>(a, wbase, n0, t0, z, 0, x16, st);
    for (int64_t k0 = 0; k0 < a.K; k0 += kTileK) {
        __syncthreads();  // the previous step's fragments are loaded
        tc_store(As, Bs, st);
        __syncthreads();
        if (k0 + kTileK < a.K) tc_load<D>(a, wbase, n0, t0, z, k0 + kTileK, x16, st);
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &As[(wm + i * 16) * kLdAB + kk], kLdAB);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &Bs[(wn + j * 16) * kLdAB + kk], kLdAB);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&Cs[(wn + j * 16) * kLdC + wm + i * 16], acc[i][j], kLdC, wmma::mem_col_major);
    __syncthreads();
    for (int j = threadIdx.x; j < kTileM * kTileN; j += kTcThreads) {
        const int t = j / kTileM, m = j % kTileM;
        const int64_t n = n0 + m, tt = t0 + t;
        if (n < a.N && tt < a.T) {
            float* y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + z * a.y_z + tt * a.y_t);
            y[n] = Cs[t * kLdC + m] * a.y_scale + (a.bias ? a.bias[n] : 0.f);
        }
    }
}

// Rounds activations like the CPU kernels' 8-bit formats (act_round.cuh): one warp per 256
// values of a row (act_round_segment). With q_out/d_out it also writes the codes and one scale
// per 32 values (MatArgs::xq).
__global__ void act_round_kernel(MatArgs a, int mode, float* out, int8_t* q_out, float* d_out) {
    IKLLM_KERNEL_ENTRY();
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t per_row = (a.K + 255) / 256;
    const int64_t z = blockIdx.y;
    const int64_t t = warp / per_row, seg = warp % per_row;
    if (t >= a.T) return;
    const int64_t r = z * a.T + t;
    act_round_segment(x_row(a, z, t), a.K, seg, mode, a.round_x_f16, out + r * a.K, q_out ? q_out + r * a.K : nullptr,
                      d_out ? d_out + r * (a.K / 32) : nullptr);
}

// The reference's matmul of the trellis types IQ2_KT / IQ3_KT scales the product beyond the
// dequantized values (kt_factor_percent): the float kernels apply that factor to the sum.
template <class D>
constexpr float float_matmul_factor() {
    if constexpr (std::is_same_v<D, BlockDecoder<quant::T_IQ2_KT>>) return kt_factor_percent(quant::T_IQ2_KT) / 100.0f;
    else if constexpr (std::is_same_v<D, BlockDecoder<quant::T_IQ3_KT>>) return kt_factor_percent(quant::T_IQ3_KT) / 100.0f;
    else return 1.f;
}

template <class D>
void launch_typed(const MatArgs& a_in, StreamRef s) {
    if (a_in.xq && a_in.T <= kVecMaxTokens && launch_mat_vec_int8(a_in, s)) return;
    MatArgs a = a_in;  // the float kernels from here on
    a.y_scale = float_matmul_factor<D>();
    if (mat_is_vector(a)) {
        const dim3 block(32 * kVecWarps);
        // (grouped experts, MatArgs::grp: the token-tile kernel even for one token per group,
        // the same numerics per row and token)
        if (a.T == 1 && !a.grp && mat_vec_staged_fits<D>(a)) {
            const dim3 grid((unsigned)((a.N + kStagedRows - 1) / kStagedRows), 1, (unsigned)a.Z);
            IKLLM_LAUNCH(grid, block, staged_smem_bytes<D>(), s, mat_vec_staged_kernel<D, kStagedRows>)(a);
        } else if (a.T == 1 && !a.grp) {
            constexpr int R = 4;
            const dim3 grid((unsigned)((a.N + R - 1) / R), 1, (unsigned)a.Z);
            IKLLM_LAUNCH(grid, block, 0, s, mat_vec_kernel<D, 1, R>)(a);
        } else {
            constexpr int R = 2;
            const dim3 grid((unsigned)((a.N + R - 1) / R), (unsigned)((a.T + kVecMaxTokens - 1) / kVecMaxTokens),
                            (unsigned)a.Z);
            IKLLM_LAUNCH(grid, block, 0, s, mat_vec_kernel<D, kVecMaxTokens, R>)(a);
        }
        IKLLM_CUDA_LAUNCHED("mat_vec_kernel");
        return;
    }
    if (a_in.xq && launch_mat_mma_int8(a_in, false, nullptr, s)) return;
    const dim3 grid((unsigned)((a.N + kTileM - 1) / kTileM), (unsigned)((a.T + kTileN - 1) / kTileN), (unsigned)a.Z);
    IKLLM_LAUNCH(grid, kTcThreads, 0, s, mat_tc_kernel<D>)(a);
    IKLLM_CUDA_LAUNCHED("mat_tc_kernel");
}

}  // namespace

// F32 weights (MoE routers, small projections) stay in float at every batch size, as on the
// CPU: the fp16 tensor cores moved router logits enough to change expert choices.
bool mat_is_vector(const MatArgs& a) { return a.T <= kVecMaxTokens || a.type == quant::T_F32; }

namespace {

// What with_rounded_activations does for a: false when a's activations are used as they are;
// else *key describes the rounded copy (x = a's rows) and *blocks its activation blocks.
bool rounding_plan(const MatArgs& a, const OpEnv& env, ActRoundKey* key, int64_t* blocks) {
    const int mode = env.act_round ? act_round_for(a.type, a.exact) : act_round_none;
    if (a.N <= 0 || a.T <= 0 || a.Z <= 0) return false;
    // The matrix-vector kernel reads activations 16 bytes at a time and never rounds to f16
    // itself: misaligned rows and f16 rounding go through the copy.
    const bool aligned = (reinterpret_cast<uintptr_t>(a.x) | a.x_t | a.x_z) % 16 == 0;
    if (mode == act_round_none && !a.round_x_f16 && (aligned || !mat_is_vector(a))) return false;
    // The int8 kernels' codes too, where one will run (a type with an integer view; up to 8
    // tokens with OpEnv::int8, more with OpEnv::int8_mma).
    const bool int8_kernel = a.T <= kVecMaxTokens ? env.int8 : env.int8_mma && !a.w_ids && a.x_div == 1;
    const bool codes = int8_kernel && mode != act_round_none && a.K % 32 == 0 && int8_view_supported(a.type);
    *key = ActRoundKey{a.x, a.x_t, a.T, a.K, mode, a.round_x_f16, codes};
    *blocks = (a.Z + a.x_div - 1) / a.x_div;  // one rounded copy per activation block (z / x_div), not per z
    return true;
}

}  // namespace

bool shared_rounding(const MatArgs& a, const OpEnv& env, ActRoundKey* key) {
    int64_t blocks = 0;
    return rounding_plan(a, env, key, &blocks) && blocks == 1 && !a.x_rows;
}

ActRoundCopy alloc_rounded_copy(const ActRoundKey& key, int64_t blocks, Scratch& scratch) {
    ActRoundCopy c;
    const size_t values = (size_t)(blocks * key.T * key.K);
    c.x = static_cast<float*>(scratch.alloc(sizeof(float) * values));
    if (key.codes) {
        c.q = static_cast<int8_t*>(scratch.alloc(values));
        c.d = static_cast<float*>(scratch.alloc(sizeof(float) * (values / 32)));
    }
    return c;
}

MatArgs with_rounded_activations(const MatArgs& a_in, const OpEnv& env) {
    MatArgs a = a_in;
    a.staged = env.staged;
    a.mma_k_sub = env.mma_k_sub;
    ActRoundKey key;
    int64_t blocks = 0;
    if (!rounding_plan(a, env, &key, &blocks)) return a;
    auto rounded = [&](const ActRoundCopy& c) {
        MatArgs b = a;
        b.x = c.x;
        b.x_t = sizeof(float) * (size_t)a.K;
        b.x_z = sizeof(float) * (size_t)(a.T * a.K);
        b.x_rows = nullptr;
        b.round_x_f16 = false;
        b.xq = c.q;
        b.xq_d = c.d;
        return b;
    };
    // Plain rows of one activation block may share a copy with the products around it (q, k,
    // v; or rms_norm's rounded output: the executor's fusion).
    const bool shareable = env.act_cache && blocks == 1 && !a.x_rows;
    if (shareable)
        if (const ActRoundCopy* c = env.act_cache->find(key)) return rounded(*c);
    const ActRoundCopy copy = alloc_rounded_copy(key, blocks, *env.scratch);
    MatArgs src = a;
    src.Z = blocks;
    src.x_div = 1;
    const int64_t warps = a.T * ((a.K + 255) / 256);
    const dim3 grid((unsigned)((warps * 32 + 127) / 128), (unsigned)blocks);
    IKLLM_LAUNCH(grid, 128, 0, env.on(), act_round_kernel)(src, key.mode, copy.x, copy.q, copy.d);
    IKLLM_CUDA_LAUNCHED("act_round_kernel");
    if (shareable) {
        env.act_cache->store(key, copy);
        env.scratch->keep();
    }
    return rounded(copy);
}

void launch_rounded(const MatArgs& a_in, const OpEnv& env) {
    MatArgs a = a_in;
    a.l2_prefetch = env.l2_prefetch;
    a.mv_unroll = env.mv_unroll;
    if (a.xq && a.T > kVecMaxTokens) {
        // The reference's CPU kernels multiply calls of fewer than kRefBatchTokens tokens (and
        // every call of a batch-invariant session) in their small-batch form, larger ones in
        // their batch form (int8_codes.cuh).
        const bool batch_form = a.T >= kRefBatchTokens && !env.batch_invariant && !a.exact;
        if (!batch_form && (a.exact ? !int8_view_direct_mma(a.type) : int8_view_vec_batches(a.type)) &&
            launch_mat_vec_int8(a, env.on()))
            return;
        if (launch_mat_mma_int8(a, batch_form, env.scratch, env.on())) return;
    }
    launch_mat(a, env.on());
}

void launch_mat(const MatArgs& a, const OpEnv& env) { launch_rounded(with_rounded_activations(a, env), env); }

void launch_mat(const MatArgs& a, StreamRef stream) {
    if (a.N <= 0 || a.T <= 0 || a.Z <= 0) return;
    if (a.K % 32 != 0) throw std::runtime_error("CUDA matmul: row length " + std::to_string(a.K) + " is not a multiple of 32");
    if ((a.w_ids || a.x_div != 1) && !mat_is_vector(a))
        throw std::runtime_error("CUDA matmul: routed-expert ids and x_div need the matrix-vector kernel");
    const bool ok = dispatch_weight_type(a.type, [&](auto d) { launch_typed<decltype(d)>(a, stream); });
    if (!ok) throw std::runtime_error("CUDA matmul: weight type " + std::to_string(a.type) + " has no CUDA kernel");
}

}  // namespace ikllm::cuda
