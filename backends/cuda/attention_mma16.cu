// Attention on the tensor cores for few query rows per KV head or wide heads: MLA (DeepSeek's
// absorbed form: keys are the 576-wide latent rows [c | k_rope] of one KV head, values their first
// 512 columns) for any batch, and standard heads of 64, 128 or 256 for generation steps (and
// prompt batches of 256-wide heads), all with an f16 cache -- and with a q8_0 or bf16 cache every
// batch of those head shapes (the scaled forms, see the kernel). The float kernel (ops_attention.cu)
// reads a K/V row once per query head -- 128 times per token for DeepSeek-V3, 4-8 times for GQA
// models; here a block takes 16 query rows (the flattened (token, head-of-the-group) pairs: the
// heads of a token lie next to each other) and reads each tile of 32 cells once for all of them.
//
// A block of 4 warps: the 16 x 32 scores are split over the warps by key columns (DK / 64 WMMA
// steps each, partial tiles summed in a fixed order), the online softmax runs on all 128 threads
// (8 per row), and each warp keeps output columns [DV / 4 w, DV / 4 (w + 1)) of the 16 rows in
// registers. Q and P enter as hi + lo f16 terms (attention_mma.cu): float-level results. Long
// caches with few query rows (generation) are split over blocks by cells; the float kernel's
// combine step merges the parts (attention_args.cuh).
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>

#include "attention_args.cuh"
#include "attention_mma_common.cuh"
#include "op_math.cuh"
#include "warp_reduce.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

using namespace nvcuda;
using attn::sees;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kRows = 16, kTile = 32;
constexpr int kLdS = kTile + 4;  // floats per partial-score row
constexpr int kLdP = kTile + 8;  // halves per P row
constexpr int kMinSplitCells = 64;
constexpr int align128(int b) { return (b + 127) / 128 * 128; }

// Shapes and dynamic shared memory (every region a multiple of 128 bytes) of one kernel form.
// Latent: values are the first DV columns of the key rows (MLA), read with the keys.
// Q8 (scaled forms: a q8_0 or bf16 cache): the tiles hold f16 codes (exact) and each (cell, 32
// columns) scale as a float beside them (load_scaled_tile); see the kernel.
template <int DK, int DV, bool Latent, bool Q8>
struct Form {
    static constexpr int kLdK = DK + 8, kLdV = Latent ? kLdK : DV + 8;  // halves per row
    static constexpr int kNbK = DK / 32, kNbV = DV / 32;               // q8_0 blocks per K / V row
    static constexpr int kLdO = DV + 4;                                 // floats per staged output row
    static constexpr int kColsPerWarp = DV / kWarps, kOutFrags = kColsPerWarp / 16;
    static constexpr int kStepsPerWarp = DK / 16 / kWarps;
    static constexpr int kQ = align128(kRows * kLdK * 2);  // one of Q hi / Q lo
    static constexpr int kK = align128(kTile * kLdK * 2), kV = Latent ? 0 : align128(kTile * kLdV * 2);
    static constexpr int kS = align128(kWarps * kRows * kLdS * 4), kP = align128(kRows * kLdP * 2);
    static constexpr int kMisc = align128(256 * 4 + kRows * 4 * 5 + kTile * 4 * 2);
    static constexpr int kKd = Q8 ? align128(kTile * kNbK * 4) : 0, kVd = Q8 && !Latent ? align128(kTile * kNbV * 4) : 0;
    static constexpr int kPb = Q8 ? align128(kWarps * 2 * kRows * kLdP * 2) : 0;  // each warp's P x V scales, hi / lo
    static constexpr int kBytes = 2 * kQ + kK + kV + kS + 2 * kP + kMisc + kKd + kVd + kPb;
    static_assert(DK % (16 * kWarps) == 0 && DV % (16 * kWarps) == 0, "whole WMMA steps per warp");
    static_assert(!Q8 || (DK % 32 == 0 && DV % 32 == 0), "whole 32-column blocks");
    static_assert(kRows * kLdO * 4 <= kK + kV, "the output staging reuses the K / V tiles");
};

// One 32-column block of a q8_0 row: its codes as f16 (exact) into out; returns its scale.
struct Q8Block {
    __device__ float operator()(const uint8_t* row, int b, __half* out) const {
        const uint16_t* w = reinterpret_cast<const uint16_t*>(row + 34 * b);  // f16 scale, 32 codes
        for (int e = 0; e < 16; ++e) {
            const uint16_t two = w[1 + e];
            *reinterpret_cast<__half2*>(out + 2 * e) =
                __floats2half2_rn((float)(int8_t)(uint8_t)(two & 0xffu), (float)(int8_t)(uint8_t)(two >> 8));
        }
        return math::f16_to_f32(w[0]);
    }
};

// One 32-column block of a bf16 row: a power of two 2^-e brings the block's largest magnitude
// to [2^14, 2^15), where f16 holds every bf16 value exactly (8 significant bits of f16's 11);
// values below 2^-28 of that largest one lose bits in f16's subnormals or vanish (beyond float
// level: 2^-24). Codes v x 2^e (exact), scale 2^-e; a block with an infinity or NaN keeps
// scale 1 and its values (they decide the result).
struct Bf16Block {
    __device__ float operator()(const uint8_t* row, int b, __half* out) const {
        const uint16_t* w = reinterpret_cast<const uint16_t*>(row) + 32 * b;
        float mx = 0.0f;
        bool finite = true;
        for (int e = 0; e < 32; ++e) {
            const float v = fabsf(math::bf16_to_f32(w[e]));
            finite &= v <= 3.4028235e38f;  // (false for NaN)
            mx = fmaxf(mx, v);
        }
        const int ex = finite && mx > 0.0f ? 14 - ilogbf(mx) : 0;
        for (int e = 0; e < 32; e += 2)
            *reinterpret_cast<__half2*>(out + e) =
                __floats2half2_rn(ldexpf(math::bf16_to_f32(w[e]), ex), ldexpf(math::bf16_to_f32(w[e + 1]), ex));
        return ldexpf(1.0f, -ex);
    }
};

// A tile of rows of D values (q8_0 or bf16: Block) into shared memory: f16 codes, and the scale
// of each (cell, 32 columns) as a float [cell][block]; rows no query of the block sees are zeros
// (a free cell may hold anything).
template <int D, class Block>
__device__ inline void load_scaled_tile(const uint8_t* base, int64_t nb2, int32_t c0, const int32_t* cell_any, __half* dst,
                                        int ld, float* scales) {
    constexpr int nb = D / 32;
    for (int i = threadIdx.x; i < kTile * nb; i += kThreads) {
        const int j = i / nb, b = i % nb;
        __half* out = dst + j * ld + 32 * b;
        if (!cell_any[j]) {
            for (int e = 0; e < 32; e += 2) *reinterpret_cast<__half2*>(out + e) = __floats2half2_rn(0.0f, 0.0f);
            scales[j * nb + b] = 0.0f;
            continue;
        }
        scales[j * nb + b] = Block{}(base + (int64_t)(c0 + j) * nb2, b, out);
    }
}

template <int DK, int DV, bool Latent, bool Q8>
__global__ void __launch_bounds__(kThreads) attention_mma16_kernel(AttnArgs a, int64_t T, int split_cells, float* partial) {
    IKLLM_KERNEL_ENTRY();
    using F = Form<DK, DV, Latent, Q8>;
    constexpr int kNbK = F::kNbK, kNbV = F::kNbV;
    constexpr int kLdK = F::kLdK, kLdV = F::kLdV, kLdO = F::kLdO, kColsPerWarp = F::kColsPerWarp;
    constexpr int kOutFrags = F::kOutFrags, kStepsPerWarp = F::kStepsPerWarp;
    IKLLM_DYN_SHARED(unsigned char, mem);
    __half* qh = reinterpret_cast<__half*>(mem);
    __half* ql = reinterpret_cast<__half*>(mem + F::kQ);
    __half* ks = reinterpret_cast<__half*>(mem + 2 * F::kQ);
    __half* vs = Latent ? ks : reinterpret_cast<__half*>(mem + 2 * F::kQ + F::kK);
    float* sp = reinterpret_cast<float*>(mem + 2 * F::kQ + F::kK + F::kV);
    __half* ph = reinterpret_cast<__half*>(mem + 2 * F::kQ + F::kK + F::kV + F::kS);
    __half* pl = reinterpret_cast<__half*>(mem + 2 * F::kQ + F::kK + F::kV + F::kS + F::kP);
    float* rowmap = reinterpret_cast<float*>(mem + 2 * F::kQ + F::kK + F::kV + F::kS + 2 * F::kP);
    float* alpha = rowmap + 256;
    float* row_sf = alpha + kRows;
    float* row_l = row_sf + kRows;
    int32_t* row_pos = reinterpret_cast<int32_t*>(row_l + kRows);
    int32_t* row_seq = row_pos + kRows;
    int32_t* cell_pos_s = row_seq + kRows;
    int32_t* cell_any = cell_pos_s + kTile;
    unsigned char* q8mem = mem + 2 * F::kQ + F::kK + F::kV + F::kS + 2 * F::kP + F::kMisc;
    float* kd = reinterpret_cast<float*>(q8mem);                                       // [cell][block] K scales
    float* vd = Latent ? kd : reinterpret_cast<float*>(q8mem + F::kKd);                 // [cell][block] V scales
    const int vd_ld = Latent ? kNbK : kNbV;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    __half* pbh = reinterpret_cast<__half*>(q8mem + F::kKd + F::kVd) + warp * 2 * kRows * kLdP;  // (Q8)
    __half* pbl = pbh + kRows * kLdP;
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
        const float sf = attn::split_q_row(q, DK, qh + r * kLdK, ql + r * kLdK, a.scale);
        if (lane == 0) row_sf[r] = sf;
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
    const uint8_t* vbase = a.v + g * a.v_nb1;
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
        // Rows no query of the block sees are zeros (a free cell may hold anything).
        if constexpr (Q8) {
            if (a.k_type == quant::T_BF16) {  // (uniform; K and V alike: launch_attention_mma16)
                load_scaled_tile<DK, Bf16Block>(kbase, a.k_nb2, c0, cell_any, ks, kLdK, kd);
                if constexpr (!Latent) load_scaled_tile<DV, Bf16Block>(vbase, a.v_nb2, c0, cell_any, vs, kLdV, vd);
            } else {
                load_scaled_tile<DK, Q8Block>(kbase, a.k_nb2, c0, cell_any, ks, kLdK, kd);
                if constexpr (!Latent) load_scaled_tile<DV, Q8Block>(vbase, a.v_nb2, c0, cell_any, vs, kLdV, vd);
            }
        } else {
        constexpr int kPieces = DK / 8;
        for (int i = tid; i < kTile * kPieces; i += kThreads) {
            const int j = i / kPieces, p = i % kPieces;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (cell_any[j]) v = reinterpret_cast<const uint4*>(kbase + (int64_t)(c0 + j) * a.k_nb2)[p];
            *reinterpret_cast<uint4*>(ks + j * kLdK + 8 * p) = v;
        }
        if constexpr (!Latent) {
            constexpr int kVPieces = DV / 8;
            for (int i = tid; i < kTile * kVPieces; i += kThreads) {
                const int j = i / kVPieces, p = i % kVPieces;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (cell_any[j]) v = reinterpret_cast<const uint4*>(vbase + (int64_t)(c0 + j) * a.v_nb2)[p];
                *reinterpret_cast<uint4*>(vs + j * kLdV + 8 * p) = v;
            }
        }
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
                if constexpr (Q8) {
                    // codes x Q, then each cell's scale of these 16 columns' block (cid: element
                    // (r, c) = c, the row map loaded column-major; loaded here, not kept: registers)
                    wmma::fragment<wmma::accumulator, 16, 16, 16, float> st, cid;
                    wmma::load_matrix_sync(cid, rowmap, 16, wmma::mem_col_major);
                    wmma::fill_fragment(st, 0.0f);
                    wmma::mma_sync(st, a_hi, kb, st);
                    wmma::mma_sync(st, a_lo, kb, st);
                    for (int i = 0; i < s.num_elements; ++i)
                        s.x[i] = fmaf(kd[(16 * n + ((int)cid.x[i] & 15)) * kNbK + k / 2], st.x[i], s.x[i]);
                } else {
                    wmma::mma_sync(s, a_hi, kb, s);
                    wmma::mma_sync(s, a_lo, kb, s);
                }
            }
            wmma::store_matrix_sync(spw + 16 * n, s, kLdS, wmma::mem_row_major);
        }
        __syncthreads();

        // Online softmax over the tile: 8 threads per row, 4 cells each.
        float sv[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int cj = 4 * sub + j;
            float s = sp[sr * kLdS + cj];
#pragma unroll
            for (int w = 1; w < kWarps; ++w) s += sp[w * kRows * kLdS + sr * kLdS + cj];
            const bool vis = cell_any[cj] && sees(a, c0 + cj, cell_pos_s[cj], my_pos, my_seq);
            sv[j] = vis ? s * my_sf : -INFINITY;
        }
        const float resc = attn::online_softmax<4, 8>(sv, m, l, ph + sr * kLdP + 4 * sub, pl + sr * kLdP + 4 * sub);
        if (sub == 0) alpha[sr] = resc;
        __syncthreads();

        // This warp's output columns: O = O * rescale + (P_hi + P_lo) V.
#pragma unroll
        for (int n = 0; n < kOutFrags; ++n)
            for (int i = 0; i < o[n].num_elements; ++i) o[n].x[i] *= alpha[(int)rid.x[i] & 15];
        if constexpr (Q8) {
            // A q8_0 value is scale x code: the codes are exact in f16, so each 32 output columns
            // (one block of every V row) take P' = P x that block's cell scales, split into hi / lo
            // terms again. P' is first scaled by a power of two that brings the tile's largest
            // scale of the block near 2^14 (no overflow, nothing lost to f16's subnormals), and
            // the product scaled back before it joins O.
            int b_cur = -1;
            float back = 1.0f;
#pragma unroll
            for (int n = 0; n < kOutFrags; ++n) {
                const int col = warp * kColsPerWarp + 16 * n, b = col / 32;
                if (b != b_cur) {
                    b_cur = b;
                    float mx = fmaxf(fabsf(vd[lane * vd_ld + b]), 0.0f);
                    mx = warp_max(mx);
                    const int e = mx > 0.0f && mx <= 3.0e38f ? 14 - ilogbf(mx) : 0;
                    const float up = ldexpf(1.0f, e);
                    back = ldexpf(1.0f, -e);
                    __syncwarp();
                    for (int i = lane; i < kRows * kTile; i += 32) {
                        const int r = i / kTile, c = i % kTile;
                        const float p = __half2float(ph[r * kLdP + c]) + __half2float(pl[r * kLdP + c]);
                        attn::split_f16(p * (vd[c * vd_ld + b] * up), pbh + r * kLdP + c, pbl + r * kLdP + c);
                    }
                    __syncwarp();
                }
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> t;
                wmma::fill_fragment(t, 0.0f);
#pragma unroll
                for (int k = 0; k < 2; ++k) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa_hi, pa_lo;
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
                    wmma::load_matrix_sync(pa_hi, pbh + 16 * k, kLdP);
                    wmma::load_matrix_sync(pa_lo, pbl + 16 * k, kLdP);
                    wmma::load_matrix_sync(vb, vs + 16 * k * kLdV + col, kLdV);
                    wmma::mma_sync(t, pa_hi, vb, t);
                    wmma::mma_sync(t, pa_lo, vb, t);
                }
                for (int i = 0; i < t.num_elements; ++i) o[n].x[i] = fmaf(t.x[i], back, o[n].x[i]);
            }
        } else {
#pragma unroll
            for (int k = 0; k < 2; ++k) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa_hi, pa_lo;
                wmma::load_matrix_sync(pa_hi, ph + 16 * k, kLdP);
                wmma::load_matrix_sync(pa_lo, pl + 16 * k, kLdP);
    #pragma unroll
                for (int n = 0; n < kOutFrags; ++n) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
                    wmma::load_matrix_sync(vb, vs + 16 * k * kLdV + warp * kColsPerWarp + 16 * n, kLdV);
                    wmma::mma_sync(o[n], pa_hi, vb, o[n]);
                    wmma::mma_sync(o[n], pa_lo, vb, o[n]);
                }
            }
        }
        __syncthreads();  // ks, vs, sp, ph, pl are rewritten next
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
    for (int i = tid; i < kRows * DV; i += kThreads) {
        const int r = i / DV, d = i % DV;
        const int64_t R = R0 + r, t = R / G, h = g * G + R % G;
        if (t >= T) continue;
        if (n_splits == 1) {
            const float lr = row_l[r];
            float* orow = reinterpret_cast<float*>(a.out + t * a.out_nb1) + h * (int64_t)DV;
            orow[d] = ob[r * kLdO + d] * (lr > 0.0f ? 1.0f / lr : 0.0f);
        } else {
            float* part = partial + ((t * n_head + h) * n_splits + split) * (int64_t)(DV + 2);
            part[d] = ob[r * kLdO + d];
            if (d == 0) {
                part[DV] = alpha[r];
                part[DV + 1] = row_l[r];
            }
        }
    }
}

template <int DK, int DV, bool Latent, bool Q8>
void launch_form(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env) {
    using F = Form<DK, DV, Latent, Q8>;
    const int64_t n_head_kv = n_head / a.group;
    const int64_t row_blocks = (T * a.group + kRows - 1) / kRows;
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
        partial = static_cast<float*>(env.scratch->alloc(sizeof(float) * (size_t)(T * n_head * n_splits * (DV + 2))));
    if (F::kBytes > 48 * 1024)
        IKLLM_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&attention_mma16_kernel<DK, DV, Latent, Q8>),
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, F::kBytes));
    const dim3 grid((unsigned)row_blocks, (unsigned)n_head_kv, (unsigned)n_splits);
    IKLLM_LAUNCH(grid, kThreads, F::kBytes, env.on(), attention_mma16_kernel<DK, DV, Latent, Q8>)(a, T, (int)split_cells, partial);
    IKLLM_CUDA_LAUNCHED("attention_mma16_kernel");
    if (n_splits > 1) launch_attention_combine(a, T, n_head, (int)n_splits, partial, env.on());
}

template <bool Q8>
bool launch_forms(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env, bool latent) {
    if (latent && a.d_k == 576 && a.d_v == 512) return launch_form<576, 512, true, Q8>(a, T, n_head, env), true;
    if (latent || a.d_k != a.d_v) return false;
    // Standard heads: generation steps (prompt batches of f16 heads up to 128 take attention_mma.cu).
    switch (a.d_k) {
        case 64: return launch_form<64, 64, false, Q8>(a, T, n_head, env), true;
        case 128: return launch_form<128, 128, false, Q8>(a, T, n_head, env), true;
        case 256: return launch_form<256, 256, false, Q8>(a, T, n_head, env), true;
        default: return false;
    }
}

}  // namespace

bool launch_attention_mma16(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env) {
    if (T <= 0 || env.batch_invariant || !env.attn_mma || a.group <= 0) return false;
    // q8_0 and bf16 caches take the scaled forms (Q8), f16 the plain ones.
    const bool q8 = (a.k_type == quant::T_Q8_0 || a.k_type == quant::T_BF16) && a.v_type == a.k_type;
    if (!q8 && (a.k_type != quant::T_F16 || a.v_type != quant::T_F16)) return false;
    const bool latent = a.v == a.k && a.v_nb1 == a.k_nb1 && a.v_nb2 == a.k_nb2;
    // f16 rows: 16-byte loads; q8_0 rows (34-byte blocks) and bf16 rows: 2-byte loads.
    const uint64_t align = q8 ? 1 : 15;
    const auto aligned = [&](const void* p, int64_t s1, int64_t s2) {
        return ((reinterpret_cast<uintptr_t>(p) | (uint64_t)s1 | (uint64_t)s2) & align) == 0;
    };
    if (!aligned(a.k, a.k_nb1, a.k_nb2) || !aligned(a.v, a.v_nb1, a.v_nb2)) return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 8)
        return false;
    if ((T * a.group + kRows - 1) / kRows > 0x7fffffffLL || n_head / a.group > 65535) return false;
    return q8 ? launch_forms<true>(a, T, n_head, env, latent) : launch_forms<false>(a, T, n_head, env, latent);
}

}  // namespace ikllm::cuda
