// Matrix products on the GPU for every weight type with a BlockDecoder (block_decode.cuh).
#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>

#include "block_decode.cuh"
#include "cuda_ops.cuh"
#include "matmul_kernels.cuh"

namespace ikllm::cuda {

namespace {

constexpr int kVecRowsPerBlock = 4;  // one warp per weight row
constexpr int kVecMaxTokens = 8;     // up to this many tokens: the matrix-vector kernel

__device__ inline float maybe_round(float v, bool r) { return r ? __half2float(__float2half_rn(v)) : v; }

__device__ inline const float* x_row(const MatArgs& a, int64_t z, int64_t t) {
    const int64_t r = a.x_rows ? a.x_rows[t] : t;
    return reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.x) + z * a.x_z + r * a.x_t);
}

__device__ inline float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Generation: each warp owns one weight row and up to NT tokens; lanes split the row into
// 8-value chunks, so the row's bytes are read once for all NT tokens.
template <class D, int NT>
__global__ void __launch_bounds__(32 * kVecRowsPerBlock) mat_vec_kernel(MatArgs a) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t n = (int64_t)blockIdx.x * kVecRowsPerBlock + warp;
    const int64_t t0 = (int64_t)blockIdx.y * NT;
    const int64_t z = blockIdx.z;
    if (n >= a.N) return;
    const uint8_t* row = a.w + z * a.w_z + n * a.w_row;
    const int nt = (int)min((int64_t)NT, a.T - t0);
    const float* xr[NT];
#pragma unroll
    for (int i = 0; i < NT; ++i) xr[i] = x_row(a, z, t0 + (i < nt ? i : 0));
    float acc[NT];
#pragma unroll
    for (int i = 0; i < NT; ++i) acc[i] = 0.f;
    constexpr int cpb = D::kBlockElems / 8;
    const int64_t n_chunks = a.K / 8;
    for (int64_t c = lane; c < n_chunks; c += 32) {
        float w8[8];
        D::decode8(row, c / cpb, (int)(c % cpb), w8);
#pragma unroll
        for (int i = 0; i < NT; ++i) {
            if (i < nt) {
                const float* xp = xr[i] + c * 8;
                float s = 0.f;
#pragma unroll
                for (int j = 0; j < 8; ++j) s += w8[j] * maybe_round(xp[j], a.round_x_f16);
                acc[i] += s;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < NT; ++i) {
        const float v = warp_sum(acc[i]);
        if (lane == 0 && i < nt) {
            float* y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + z * a.y_z + (t0 + i) * a.y_t);
            y[n] = v + (a.bias ? a.bias[n] : 0.f);
        }
    }
}

// Prompt batches: 64 weight rows x 64 tokens per block of 4 warps; weights decoded to fp16
// in shared memory, activations rounded to fp16, tensor-core products accumulated in fp32.
constexpr int kTileM = 64, kTileN = 64, kTileK = 32, kLdAB = kTileK + 8, kLdC = kTileM + 4;

template <class D>
__global__ void __launch_bounds__(128) mat_tc_kernel(MatArgs a) {
    using namespace nvcuda;
    __shared__ __align__(32) __half As[kTileM][kLdAB];
    __shared__ __align__(32) __half Bs[kTileN][kLdAB];
    __shared__ __align__(32) float Cs[kTileN][kLdC];
    const int tid = threadIdx.x, warp = tid / 32;
    const int64_t n0 = (int64_t)blockIdx.x * kTileM, t0 = (int64_t)blockIdx.y * kTileN, z = blockIdx.z;
    const int wm = (warp % 2) * 32, wn = (warp / 2) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
    const uint8_t* wbase = a.w + z * a.w_z;
    for (int64_t k0 = 0; k0 < a.K; k0 += kTileK) {
        for (int j = tid; j < kTileM * (kTileK / 8); j += 128) {
            const int r = j / (kTileK / 8), ch = j % (kTileK / 8);
            const int64_t n = n0 + r;
            float v[8];
            if (n < a.N) {
                const int64_t kk = k0 + ch * 8;
                D::decode8(wbase + n * a.w_row, kk / D::kBlockElems, (int)((kk % D::kBlockElems) / 8), v);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) v[e] = 0.f;
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) As[r][ch * 8 + e] = __float2half_rn(v[e]);
        }
        for (int j = tid; j < kTileN * kTileK; j += 128) {
            const int t = j / kTileK, kk = j % kTileK;
            float v = 0.f;
            if (t0 + t < a.T) v = x_row(a, z, t0 + t)[k0 + kk];
            Bs[t][kk] = __float2half_rn(v);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &As[wm + i * 16][kk], kLdAB);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &Bs[wn + j * 16][kk], kLdAB);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&Cs[wn + j * 16][wm + i * 16], acc[i][j], kLdC, wmma::mem_col_major);
    __syncthreads();
    for (int j = tid; j < kTileM * kTileN; j += 128) {
        const int t = j / kTileM, m = j % kTileM;
        const int64_t n = n0 + m, tt = t0 + t;
        if (n < a.N && tt < a.T) {
            float* y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + z * a.y_z + tt * a.y_t);
            y[n] = Cs[t][m] + (a.bias ? a.bias[n] : 0.f);
        }
    }
}

template <class D>
void launch_typed(const MatArgs& a, cudaStream_t s) {
    if (a.T <= kVecMaxTokens) {
        const dim3 block(32 * kVecRowsPerBlock);
        if (a.T == 1) {
            const dim3 grid((unsigned)((a.N + kVecRowsPerBlock - 1) / kVecRowsPerBlock), 1, (unsigned)a.Z);
            mat_vec_kernel<D, 1><<<grid, block, 0, s>>>(a);
        } else {
            const dim3 grid((unsigned)((a.N + kVecRowsPerBlock - 1) / kVecRowsPerBlock),
                            (unsigned)((a.T + kVecMaxTokens - 1) / kVecMaxTokens), (unsigned)a.Z);
            mat_vec_kernel<D, kVecMaxTokens><<<grid, block, 0, s>>>(a);
        }
        IKLLM_CUDA_LAUNCHED("mat_vec_kernel");
        return;
    }
    const dim3 grid((unsigned)((a.N + kTileM - 1) / kTileM), (unsigned)((a.T + kTileN - 1) / kTileN), (unsigned)a.Z);
    mat_tc_kernel<D><<<grid, 128, 0, s>>>(a);
    IKLLM_CUDA_LAUNCHED("mat_tc_kernel");
}

}  // namespace

void launch_mat(const MatArgs& a, cudaStream_t stream) {
    if (a.N <= 0 || a.T <= 0 || a.Z <= 0) return;
    if (a.K % 32 != 0) throw std::runtime_error("CUDA matmul: row length " + std::to_string(a.K) + " is not a multiple of 32");
    const bool ok = dispatch_weight_type(a.type, [&](auto d) { launch_typed<decltype(d)>(a, stream); });
    if (!ok) throw std::runtime_error("CUDA matmul: weight type " + std::to_string(a.type) + " has no CUDA kernel");
}

}  // namespace ikllm::cuda
