// Attention of prompt batches on the tensor cores (fp16 WMMA), for an f16 cache and standard heads
// (d_k = d_v = D, a multiple of 16, at most 128). Semantics are those of ops_attention.cu (the
// float kernel, which keeps generation steps, other cache types, MLA and batch-invariant sessions).
//
// A block of 4 warps takes one KV head and up to 64 query rows: 64 / group consecutive tokens
// times the group's query heads, so each K/V tile is read from memory once for all of them (GQA).
// Cells are walked in tiles of 32 in physical order; a tile no token of the block sees is skipped
// and the rows of cells it does not see are zeroed in shared memory (free cells may hold garbage).
// Per tile each warp computes its 16 x 32 scores with WMMA, the online softmax in float (two
// lanes per row), and O = O * rescale + P V with the accumulators in registers.
//
// Precision: the products use f16 operands, but Q and P are split into two f16 terms (hi =
// f16(x), lo = f16(x - hi)) and both are multiplied: with the cache's f16 K and V exact, each
// product carries ~22 significant bits (float accumulation), so the result agrees with the float
// kernel and the CPU to float rounding rather than to f16's 11 bits. A Q row is scaled by a power
// of two first when its largest value would leave f16's range (the factor joins the score scale).
// A query row's result depends only on its own query and the cache: an all-masked tile leaves its
// state exactly as it was.
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>

#include "attention_args.cuh"
#include "attention_mma_common.cuh"
#include "launch.cuh"
#include "warp_reduce.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

using namespace nvcuda;
using attn::sees;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kRows = 16 * kWarps, kTile = 32;
constexpr int kMinTokens = 16;  // fewer: the float kernel (generation steps, short batches)

// Shared memory of one block for head size D (bytes; every region a multiple of 128).
template <int D>
struct Smem {
    static constexpr int kLd = D + 8;          // halves per K / V / staged-Q row
    static constexpr int kLdS = kTile + 4;     // floats per score row
    static constexpr int kLdP = kTile + 8;     // halves per P row
    static constexpr int kLdO = D + 4;         // floats per output row
    static constexpr int align(int b) { return (b + 127) / 128 * 128; }
    static constexpr int kK = align(kTile * kLd * 2), kV = kK;
    static constexpr int kS = align(kWarps * 16 * kLdS * 4), kP = align(kWarps * 16 * kLdP * 2);
    static constexpr int kTiles = kK + kV + kS + 2 * kP;
    static constexpr int kStageQ = align(2 * kRows * kLd * 2), kStageO = align(kWarps * 16 * kLdO * 4);
    static constexpr int kUnion = kTiles > kStageQ ? (kTiles > kStageO ? kTiles : kStageO)
                                                   : (kStageQ > kStageO ? kStageQ : kStageO);
};

template <int D>
__global__ void __launch_bounds__(kThreads) attention_mma_kernel(AttnArgs a, int64_t T, int tokens_per_block) {
    IKLLM_KERNEL_ENTRY();
    using S = Smem<D>;
    constexpr int kSteps = D / 16;
    IKLLM_SHARED_ALIGNED(128, unsigned char, mem, [S::kUnion]);
    IKLLM_SHARED_ALIGNED(128, float, rowmap, [16 * 16]);  // element (r, c) = r: the accumulators' rows
    IKLLM_SHARED(float, alpha, [kRows]);
    IKLLM_SHARED(float, row_sf, [kRows]);
    IKLLM_SHARED(float, row_l, [kRows]);
    IKLLM_SHARED(int32_t, row_pos, [kRows]);
    IKLLM_SHARED(int32_t, row_seq, [kRows]);
    IKLLM_SHARED(int32_t, row_token, [kRows]);
    IKLLM_SHARED(int32_t, cell_pos_s, [kTile]);
    IKLLM_SHARED(int32_t, cell_any, [kTile]);

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int64_t g = blockIdx.y, t0 = (int64_t)blockIdx.x * tokens_per_block;
    const int G = a.group, rows = tokens_per_block * G;
    for (int i = tid; i < 256; i += kThreads) rowmap[i] = (float)(i / 16);
    for (int r = tid; r < kRows; r += kThreads) {
        const int64_t t = t0 + r / G;
        const bool ok = r < rows && t < T;
        row_token[r] = ok ? (int32_t)t : -1;
        row_pos[r] = ok ? a.positions[t] : -1;
        row_seq[r] = ok ? a.seq_ids[t] : -1;
    }

    // Q rows of this warp as hi / lo f16 terms (staged in shared memory, then kept in registers).
    __half* qh = reinterpret_cast<__half*>(mem);
    __half* ql = qh + kRows * S::kLd;
    __syncthreads();
    for (int rr = 0; rr < 16; ++rr) {
        const int r = warp * 16 + rr;
        const int64_t t = row_token[r];
        const float* q = t >= 0 ? reinterpret_cast<const float*>(a.q + (g * G + r % G) * a.q_nb1 + t * a.q_nb2) : nullptr;
        const float sf = attn::split_q_row(q, D, qh + r * S::kLd, ql + r * S::kLd, a.scale);
        if (lane == 0) row_sf[r] = sf;
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> q_hi[kSteps], q_lo[kSteps];
#pragma unroll
    for (int k = 0; k < kSteps; ++k) {
        wmma::load_matrix_sync(q_hi[k], qh + warp * 16 * S::kLd + 16 * k, S::kLd);
        wmma::load_matrix_sync(q_lo[k], ql + warp * 16 * S::kLd + 16 * k, S::kLd);
    }
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> rid, o[kSteps];
    wmma::load_matrix_sync(rid, rowmap, 16, wmma::mem_row_major);
#pragma unroll
    for (int n = 0; n < kSteps; ++n) wmma::fill_fragment(o[n], 0.0f);
    __syncthreads();  // the staging area becomes the tiles

    __half* ks = reinterpret_cast<__half*>(mem);
    __half* vs = reinterpret_cast<__half*>(mem + S::kK);
    float* sb = reinterpret_cast<float*>(mem + S::kK + S::kV) + warp * 16 * S::kLdS;
    __half* ph = reinterpret_cast<__half*>(mem + S::kK + S::kV + S::kS) + warp * 16 * S::kLdP;
    __half* pl = reinterpret_cast<__half*>(mem + S::kK + S::kV + S::kS + S::kP) + warp * 16 * S::kLdP;

    // Softmax state of row r = warp * 16 + lane / 2, kept by both lanes of the pair.
    const int rr = lane / 2, half_ = lane % 2, r = warp * 16 + rr;
    const int32_t my_pos = row_pos[r], my_seq = row_seq[r];
    const float my_sf = row_sf[r];
    float m = -INFINITY, l = 0.0f;
    const uint8_t* kbase = a.k + g * a.k_nb1;
    const uint8_t* vbase = a.v + g * a.v_nb1;
    const int32_t t_last = (int32_t)(T < t0 + tokens_per_block ? T : t0 + tokens_per_block);

    for (int32_t c0 = 0; c0 < a.n_cells; c0 += kTile) {
        if (tid < kTile) {
            const int32_t c = c0 + tid;
            const int32_t cp = c < a.n_cells ? a.cell_pos[c] : -1;
            int any = 0;
            for (int32_t t = (int32_t)t0; t < t_last && !any; ++t) any = sees(a, c, cp, a.positions[t], a.seq_ids[t]);
            cell_any[tid] = any;
            cell_pos_s[tid] = cp;
        }
        __syncthreads();
        int any = 0;
        for (int j = 0; j < kTile; ++j) any |= cell_any[j];
        if (!any) {  // uniform: nothing of this tile is seen by the block
            __syncthreads();
            continue;
        }
        // K and V rows of the tile in 16-byte pieces; rows no token sees are zeros.
        constexpr int kPieces = D / 8;
        for (int i = tid; i < kTile * kPieces; i += kThreads) {
            const int j = i / kPieces, p = i % kPieces;
            uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
            if (cell_any[j]) {
                kv = reinterpret_cast<const uint4*>(kbase + (int64_t)(c0 + j) * a.k_nb2)[p];
                vv = reinterpret_cast<const uint4*>(vbase + (int64_t)(c0 + j) * a.v_nb2)[p];
            }
            *reinterpret_cast<uint4*>(ks + j * S::kLd + 8 * p) = kv;
            *reinterpret_cast<uint4*>(vs + j * S::kLd + 8 * p) = vv;
        }
        __syncthreads();

        // Scores of the warp's 16 rows x 32 cells: (Q_hi + Q_lo) K^T.
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
            wmma::fill_fragment(s, 0.0f);
#pragma unroll
            for (int k = 0; k < kSteps; ++k) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kb;
                wmma::load_matrix_sync(kb, ks + 16 * n * S::kLd + 16 * k, S::kLd);
                wmma::mma_sync(s, q_hi[k], kb, s);
                wmma::mma_sync(s, q_lo[k], kb, s);
            }
            wmma::store_matrix_sync(sb + 16 * n, s, S::kLdS, wmma::mem_row_major);
        }
        __syncwarp();

        // Online softmax: lane pair (rr, half_) owns cells [16 half_, 16 half_ + 16) of row r.
        float sv[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int cj = 16 * half_ + j;
            const bool vis = cell_any[cj] && sees(a, c0 + cj, cell_pos_s[cj], my_pos, my_seq);
            sv[j] = vis ? sb[rr * S::kLdS + cj] * my_sf : -INFINITY;
        }
        const float resc =
            attn::online_softmax<16, 2>(sv, m, l, ph + rr * S::kLdP + 16 * half_, pl + rr * S::kLdP + 16 * half_);
        if (half_ == 0) alpha[r] = resc;
        __syncwarp();

        // O = O * rescale + (P_hi + P_lo) V.
#pragma unroll
        for (int n = 0; n < kSteps; ++n)
            for (int i = 0; i < o[n].num_elements; ++i) o[n].x[i] *= alpha[warp * 16 + ((int)rid.x[i] & 15)];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa_hi, pa_lo;
            wmma::load_matrix_sync(pa_hi, ph + 16 * k, S::kLdP);
            wmma::load_matrix_sync(pa_lo, pl + 16 * k, S::kLdP);
#pragma unroll
            for (int n = 0; n < kSteps; ++n) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
                wmma::load_matrix_sync(vb, vs + 16 * k * S::kLd + 16 * n, S::kLd);
                wmma::mma_sync(o[n], pa_hi, vb, o[n]);
                wmma::mma_sync(o[n], pa_lo, vb, o[n]);
            }
        }
        __syncthreads();  // the tiles are rewritten next
    }

    // Out: O / l (zeros for a row that saw nothing), staged through shared memory.
    if (half_ == 0) row_l[r] = l;
    float* ob = reinterpret_cast<float*>(mem) + warp * 16 * S::kLdO;
#pragma unroll
    for (int n = 0; n < kSteps; ++n) wmma::store_matrix_sync(ob + 16 * n, o[n], S::kLdO, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 16 * D; i += 32) {
        const int ri = i / D, d = i % D, R = warp * 16 + ri;
        const int32_t t = row_token[R];
        if (t < 0) continue;
        const float lr = row_l[R];
        const float inv = lr > 0.0f ? 1.0f / lr : 0.0f;
        float* orow = reinterpret_cast<float*>(a.out + (int64_t)t * a.out_nb1) + (g * G + R % G) * (int64_t)D;
        orow[d] = ob[ri * S::kLdO + d] * inv;
    }
}

template <int D>
void launch_d(const AttnArgs& a, int64_t T, int64_t n_head_kv, const OpEnv& env) {
    const int tokens = kRows / a.group;
    const dim3 grid((unsigned)((T + tokens - 1) / tokens), (unsigned)n_head_kv);
    IKLLM_LAUNCH(grid, kThreads, 0, env.on(), attention_mma_kernel<D>)(a, T, tokens);
    IKLLM_CUDA_LAUNCHED("attention_mma_kernel");
}

}  // namespace

bool launch_attention_mma(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env) {
    if (T < kMinTokens || env.batch_invariant || !env.attn_mma) return false;
    if (a.k_type != quant::T_F16 || a.v_type != quant::T_F16 || a.d_k != a.d_v || a.group <= 0 || a.group > kRows)
        return false;
    // 16-byte rows and strides (K / V loads), a device that has the f16 tensor cores.
    const auto aligned = [](const void* p, int64_t s1, int64_t s2) {
        return ((reinterpret_cast<uintptr_t>(p) | (uint64_t)s1 | (uint64_t)s2) & 15) == 0;
    };
    int dev = 0, major = 0;
    if (!aligned(a.k, a.k_nb1, a.k_nb2) || !aligned(a.v, a.v_nb1, a.v_nb2) || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 7)
        return false;
    const int64_t n_head_kv = n_head / a.group;
    if (n_head_kv > 65535) return false;
    switch (a.d_k) {
        case 64: launch_d<64>(a, T, n_head_kv, env); return true;
        case 80: launch_d<80>(a, T, n_head_kv, env); return true;
        case 96: launch_d<96>(a, T, n_head_kv, env); return true;
        case 112: launch_d<112>(a, T, n_head_kv, env); return true;
        case 128: launch_d<128>(a, T, n_head_kv, env); return true;
        default: return false;
    }
}

}  // namespace ikllm::cuda
