// MLA attention (DeepSeek's absorbed form: keys are the 576-wide latent rows [c | k_rope] of one
// KV head, values their first 512 columns) on the tensor cores, for an f16 cache, prompt batches
// and generation steps alike. The float kernel (ops_attention.cu) reads a latent row once per
// query head -- 128 times per token for DeepSeek-V3; here a block takes 16 query rows (the
// flattened (token, head) pairs: the heads of a token lie next to each other) and reads each
// tile of 32 cells once for all of them, into shared memory where it serves as keys and values.
//
// A block of 4 warps: the 16 x 32 scores are split over the warps by the 576 key columns (9 WMMA
// steps each, partial tiles summed in a fixed order), the online softmax runs on all 128 threads
// (8 per row), and each warp keeps the output columns [128 w, 128 w + 128) of the 16 rows in
// registers. Q and P enter as hi + lo f16 terms (attention_mma.cu): float-level results. Long
// caches with few query rows (generation) are split over blocks by cells; the float kernel's
// combine step merges the parts (attention_args.cuh).
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>

#include "attention_args.cuh"
#include "warp_reduce.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

using namespace nvcuda;

constexpr int kDk = 576, kDv = 512;
constexpr int kWarps = 4, kThreads = 32 * kWarps, kRows = 16, kTile = 32;
constexpr int kLdK = kDk + 8;          // halves per Q / K row in shared memory
constexpr int kLdS = kTile + 4;        // floats per partial-score row
constexpr int kLdP = kTile + 8;        // halves per P row
constexpr int kLdO = kDv + 4;          // floats per staged output row
constexpr int kColsPerWarp = kDv / kWarps, kOutFrags = kColsPerWarp / 16;
constexpr int kKSteps = kDk / 16, kStepsPerWarp = kKSteps / kWarps;
constexpr int kMinSplitCells = 64;

// Dynamic shared memory, every region a multiple of 128 bytes.
constexpr int align128(int b) { return (b + 127) / 128 * 128; }
constexpr int kQBytes = align128(kRows * kLdK * 2);           // one of Q hi / Q lo
constexpr int kKBytes = align128(kTile * kLdK * 2);           // K tile (values: its first 512 columns)
constexpr int kSBytes = align128(kWarps * kRows * kLdS * 4);  // partial scores per warp
constexpr int kPBytes = align128(kRows * kLdP * 2);           // one of P hi / P lo
constexpr int kMiscBytes = align128(256 * 4 + kRows * 4 * 5 + kTile * 4 * 2);
constexpr int kSmemBytes = 2 * kQBytes + kKBytes + kSBytes + 2 * kPBytes + kMiscBytes;
static_assert(kRows * kLdO * 4 <= kKBytes, "the output staging reuses the K tile");

__device__ __forceinline__ bool sees(const AttnArgs& a, int32_t c, int32_t cp, int32_t pos, int32_t seq) {
    if (seq < 0 || seq >= 64 * a.seq_words || c >= a.n_cells || cp < 0 || cp > pos) return false;
    return (a.cell_seqs[(int64_t)c * a.seq_words + seq / 64] >> (seq % 64)) & 1ull;
}

__global__ void __launch_bounds__(kThreads) attention_mla_mma_kernel(AttnArgs a, int64_t T, int split_cells,
                                                                     float* partial) {
    IKLLM_DYN_SHARED(unsigned char, mem);
    __half* qh = reinterpret_cast<__half*>(mem);
    __half* ql = reinterpret_cast<__half*>(mem + kQBytes);
    __half* ks = reinterpret_cast<__half*>(mem + 2 * kQBytes);
    float* sp = reinterpret_cast<float*>(mem + 2 * kQBytes + kKBytes);
    __half* ph = reinterpret_cast<__half*>(mem + 2 * kQBytes + kKBytes + kSBytes);
    __half* pl = reinterpret_cast<__half*>(mem + 2 * kQBytes + kKBytes + kSBytes + kPBytes);
    float* rowmap = reinterpret_cast<float*>(mem + 2 * kQBytes + kKBytes + kSBytes + 2 * kPBytes);
    float* alpha = rowmap + 256;
    float* row_sf = alpha + kRows;
    float* row_l = row_sf + kRows;
    int32_t* row_pos = reinterpret_cast<int32_t*>(row_l + kRows);
    int32_t* row_seq = row_pos + kRows;
    int32_t* cell_pos_s = row_seq + kRows;
    int32_t* cell_any = cell_pos_s + kTile;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int G = a.group;
    const int64_t g = blockIdx.y, R0 = (int64_t)blockIdx.x * kRows, n_head = (int64_t)gridDim.y * G;
    const int n_splits = (int)gridDim.z, split = (int)blockIdx.z;
    const int32_t c_begin = split * split_cells;
    const int32_t c_end = min(a.n_cells, c_begin + split_cells);
    // Row r: flattened pair R0 + r = t * G + (head within the group).
    for (int i = tid; i < 256; i += kThreads) rowmap[i] = (float)(i / 16);
    if (tid < kRows) {
        const int64_t t = (R0 + tid) / G;
        row_pos[tid] = t < T ? a.positions[t] : -1;
        row_seq[tid] = t < T ? a.seq_ids[t] : -1;
    }
    // Q rows as hi / lo f16 terms, a row scaled by a power of two when it would leave f16's range.
    for (int r = warp; r < kRows; r += kWarps) {
        const int64_t R = R0 + r, t = R / G;
        const float* q = t < T ? reinterpret_cast<const float*>(a.q + (g * G + R % G) * a.q_nb1 + t * a.q_nb2) : nullptr;
        float mx = 0.0f;
        for (int d = lane; d < kDk; d += 32) mx = fmaxf(mx, q ? fabsf(q[d]) : 0.0f);
        mx = warp_max(mx);
        int e = 0;
        if (mx >= 16384.0f && mx <= 3.0e38f) e = ilogbf(mx) - 13;
        const float down = ldexpf(1.0f, -e);
        for (int d = lane; d < kDk; d += 32) {
            const float x = q ? q[d] * down : 0.0f;
            const __half h = __float2half_rn(x);
            qh[r * kLdK + d] = h;
            ql[r * kLdK + d] = __float2half_rn(x - __half2float(h));
        }
        if (lane == 0) row_sf[r] = ldexpf(a.scale, e);
    }
    __syncthreads();
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> rid, o[kOutFrags];
    wmma::load_matrix_sync(rid, rowmap, 16, wmma::mem_row_major);
#pragma unroll
    for (int n = 0; n < kOutFrags; ++n) wmma::fill_fragment(o[n], 0.0f);

    // Softmax state of row sr, kept by its 8 threads (cells 4 sub .. 4 sub + 3 of a tile).
    const int sr = tid / 8, sub = tid % 8;
    const int32_t my_pos = row_pos[sr], my_seq = row_seq[sr];
    const float my_sf = row_sf[sr];
    float m = -INFINITY, l = 0.0f;
    const uint8_t* kbase = a.k + g * a.k_nb1;
    const int64_t t_first = R0 / G, t_last = (R0 + kRows - 1) / G + 1, t_end = t_last < T ? t_last : T;

    for (int32_t c0 = c_begin; c0 < c_end; c0 += kTile) {
        if (tid < kTile) {
            const int32_t c = c0 + tid;
            const int32_t cp = c < c_end ? a.cell_pos[c] : -1;
            int any = 0;
            for (int64_t t = t_first; t < t_end && !any; ++t) any = sees(a, c, cp, a.positions[t], a.seq_ids[t]);
            cell_any[tid] = any;
            cell_pos_s[tid] = cp;
        }
        __syncthreads();
        int any = 0;
        for (int j = 0; j < kTile; ++j) any |= cell_any[j];
        if (!any) {  // uniform: no row of the block sees this tile
            __syncthreads();
            continue;
        }
        constexpr int kPieces = kDk / 8;
        for (int i = tid; i < kTile * kPieces; i += kThreads) {
            const int j = i / kPieces, p = i % kPieces;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (cell_any[j]) v = reinterpret_cast<const uint4*>(kbase + (int64_t)(c0 + j) * a.k_nb2)[p];
            *reinterpret_cast<uint4*>(ks + j * kLdK + 8 * p) = v;
        }
        __syncthreads();

        // Partial scores of this warp's key columns.
        float* spw = sp + warp * kRows * kLdS;
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
            wmma::fill_fragment(s, 0.0f);
#pragma unroll
            for (int kk = 0; kk < kStepsPerWarp; ++kk) {
                const int k = warp * kStepsPerWarp + kk;
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_hi, a_lo;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kb;
                wmma::load_matrix_sync(a_hi, qh + 16 * k, kLdK);
                wmma::load_matrix_sync(a_lo, ql + 16 * k, kLdK);
                wmma::load_matrix_sync(kb, ks + 16 * n * kLdK + 16 * k, kLdK);
                wmma::mma_sync(s, a_hi, kb, s);
                wmma::mma_sync(s, a_lo, kb, s);
            }
            wmma::store_matrix_sync(spw + 16 * n, s, kLdS, wmma::mem_row_major);
        }
        __syncthreads();

        // Online softmax over the tile: 8 threads per row, 4 cells each.
        float sv[4];
        float tmax = -INFINITY;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int cj = 4 * sub + j;
            float s = sp[sr * kLdS + cj];
#pragma unroll
            for (int w = 1; w < kWarps; ++w) s += sp[w * kRows * kLdS + sr * kLdS + cj];
            const bool vis = cell_any[cj] && sees(a, c0 + cj, cell_pos_s[cj], my_pos, my_seq);
            sv[j] = vis ? s * my_sf : -INFINITY;
            tmax = fmaxf(tmax, sv[j]);
        }
#pragma unroll
        for (int o2 = 1; o2 < 8; o2 *= 2) tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, o2));
        const float m_new = fmaxf(m, tmax);
        const bool none = m_new == -INFINITY;
        const float resc = none ? 1.0f : expf(m - m_new);
        float psum = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float p = none || sv[j] == -INFINITY ? 0.0f : expf(sv[j] - m_new);
            psum += p;
            const __half h = __float2half_rn(p);
            ph[sr * kLdP + 4 * sub + j] = h;
            pl[sr * kLdP + 4 * sub + j] = __float2half_rn(p - __half2float(h));
        }
#pragma unroll
        for (int o2 = 1; o2 < 8; o2 *= 2) psum += __shfl_xor_sync(0xffffffffu, psum, o2);
        l = l * resc + psum;
        m = m_new;
        if (sub == 0) alpha[sr] = resc;
        __syncthreads();

        // This warp's output columns: O = O * rescale + (P_hi + P_lo) V.
#pragma unroll
        for (int n = 0; n < kOutFrags; ++n)
            for (int i = 0; i < o[n].num_elements; ++i) o[n].x[i] *= alpha[(int)rid.x[i] & 15];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa_hi, pa_lo;
            wmma::load_matrix_sync(pa_hi, ph + 16 * k, kLdP);
            wmma::load_matrix_sync(pa_lo, pl + 16 * k, kLdP);
#pragma unroll
            for (int n = 0; n < kOutFrags; ++n) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
                wmma::load_matrix_sync(vb, ks + 16 * k * kLdK + warp * kColsPerWarp + 16 * n, kLdK);
                wmma::mma_sync(o[n], pa_hi, vb, o[n]);
                wmma::mma_sync(o[n], pa_lo, vb, o[n]);
            }
        }
        __syncthreads();  // ks, sp, ph, pl are rewritten next
    }

    // The rows' outputs (O / l), or with several splits their parts (O, m, l) for the combine step.
    if (sub == 0) {
        row_l[sr] = l;
        alpha[sr] = m;  // (alpha is free now)
    }
    float* ob = reinterpret_cast<float*>(ks);
#pragma unroll
    for (int n = 0; n < kOutFrags; ++n)
        wmma::store_matrix_sync(ob + warp * kColsPerWarp + 16 * n, o[n], kLdO, wmma::mem_row_major);
    __syncthreads();
    for (int i = tid; i < kRows * kDv; i += kThreads) {
        const int r = i / kDv, d = i % kDv;
        const int64_t R = R0 + r, t = R / G, h = g * G + R % G;
        if (t >= T) continue;
        if (n_splits == 1) {
            const float lr = row_l[r];
            float* orow = reinterpret_cast<float*>(a.out + t * a.out_nb1) + h * (int64_t)kDv;
            orow[d] = ob[r * kLdO + d] * (lr > 0.0f ? 1.0f / lr : 0.0f);
        } else {
            float* part = partial + ((t * n_head + h) * n_splits + split) * (int64_t)(kDv + 2);
            part[d] = ob[r * kLdO + d];
            if (d == 0) {
                part[kDv] = alpha[r];
                part[kDv + 1] = row_l[r];
            }
        }
    }
}

}  // namespace

bool launch_attention_mla_mma(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env) {
    if (T <= 0 || env.batch_invariant || !env.attn_mma) return false;
    // The latent layout: f16 rows of 576, values the first 512 columns of the same rows.
    if (a.k_type != quant::T_F16 || a.v_type != quant::T_F16 || a.d_k != kDk || a.d_v != kDv || a.v != a.k ||
        a.v_nb1 != a.k_nb1 || a.v_nb2 != a.k_nb2 || a.group <= 0)
        return false;
    if (((reinterpret_cast<uintptr_t>(a.k) | (uint64_t)a.k_nb1 | (uint64_t)a.k_nb2) & 15) != 0) return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 8)
        return false;
    const int64_t n_head_kv = n_head / a.group;
    const int64_t row_blocks = (T * a.group + kRows - 1) / kRows;
    if (n_head_kv > 65535 || row_blocks > 0x7fffffffLL) return false;
    // Few row blocks (generation): split the cells so the GPU fills.
    const int64_t blocks = row_blocks * n_head_kv;
    const int64_t target = 2LL * (env.sm_count > 0 ? env.sm_count : 100);
    int64_t n_splits = 1;
    if (blocks < target && a.n_cells > kMinSplitCells)
        n_splits = std::min<int64_t>((a.n_cells + kMinSplitCells - 1) / kMinSplitCells, (target + blocks - 1) / blocks);
    n_splits = std::min<int64_t>(n_splits, 64);
    const int64_t split_cells = std::max<int64_t>(kTile, ((a.n_cells + n_splits - 1) / n_splits + kTile - 1) / kTile * kTile);
    n_splits = std::max<int64_t>(1, (a.n_cells + split_cells - 1) / split_cells);
    float* partial = nullptr;
    if (n_splits > 1)
        partial = static_cast<float*>(env.scratch->alloc(sizeof(float) * (size_t)(T * n_head * n_splits * (kDv + 2))));
    IKLLM_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&attention_mla_mma_kernel),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    const dim3 grid((unsigned)row_blocks, (unsigned)n_head_kv, (unsigned)n_splits);
    IKLLM_LAUNCH(grid, kThreads, kSmemBytes, env.stream, attention_mla_mma_kernel)(a, T, (int)split_cells, partial);
    IKLLM_CUDA_LAUNCHED("attention_mla_mma_kernel");
    if (n_splits > 1) launch_attention_combine(a, T, n_head, (int)n_splits, partial, env.stream);
    return true;
}

}  // namespace ikllm::cuda
