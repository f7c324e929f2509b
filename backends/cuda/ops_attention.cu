// Attention of the CUDA backend: dst [d_v * n_head, T] = softmax(q k^T * scale + mask) v over
// the cache cells [0, kv.n_cells), semantics of backends/cpu/op_attention.cpp:
//  - token t sees cell c iff cell_pos[c] >= 0, cell c holds seq_ids[t] and cell_pos[c] <= positions[t];
//  - GQA: query head h uses KV head h / (n_head / n_head_kv);
//  - K/V rows in the cache types f32, f16, bf16, q8_0 (V may be a view of the K rows: MLA);
//  - a token that sees no cell gets zeros (the CPU's 1/sum guard).
// op.f[1] (a CPU scratch bound in MiB) only limits CPU memory and is ignored here.
//
// One warp per (token, query head); the warps of a block are query heads of one token that
// share a KV head, so each K/V row is fetched from global memory about once per block (the
// other warps hit L1/L2). Cells are walked in physical order in tiles of 32 (lane j checks the
// mask of cell c0 + j); masked cells are skipped entirely (their K/V rows are never read).
// Per tile: scores of the visible cells (lanes split the head dimension, warp-reduced), the
// tile max, one rescale of the running sum/accumulator, then P x V. Online softmax in float.
// A token's result depends only on its own query and the cache (cells, layout), not on the
// other tokens of the batch.
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda_ops.cuh"
#include "op_math.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

struct AttnArgs {
    const uint8_t* q;
    int64_t q_nb1, q_nb2;
    const uint8_t* k;
    int64_t k_nb1, k_nb2;
    uint32_t k_type;
    const uint8_t* v;
    int64_t v_nb1, v_nb2;
    uint32_t v_type;
    uint8_t* out;
    int64_t out_nb1;
    int32_t d_k, d_v, group;
    float scale;
    const int32_t* positions;
    const int32_t* seq_ids;
    const int32_t* cell_pos;
    const uint64_t* cell_seqs;
    int32_t seq_words;
    int32_t n_cells;
};

constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxWarps = 8;

__device__ __forceinline__ float load_kv(uint32_t type, const uint8_t* row, int e) {
    switch (type) {
        case quant::T_F32: return reinterpret_cast<const float*>(row)[e];
        case quant::T_F16: return math::f16_to_f32(reinterpret_cast<const uint16_t*>(row)[e]);
        case quant::T_BF16: return math::bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[e]);
        default: return math::q8_0_decode(row, e);  // T_Q8_0 (checked on the host)
    }
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, off));
    return v;
}

// KPL / VPL: K / V elements per lane (d_k <= 32 * KPL, d_v <= 32 * VPL).
template <int KPL, int VPL>
__global__ void attention_kernel(AttnArgs a) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int64_t t = blockIdx.x;
    const int64_t g = blockIdx.y;  // KV head
    const int hh = (int)blockIdx.z * (int)(blockDim.x / 32) + warp;
    if (hh >= a.group) return;  // whole warp leaves; the kernel has no block-level barriers
    const int64_t h = g * a.group + hh;  // query head

    const float* qrow = reinterpret_cast<const float*>(a.q + h * a.q_nb1 + t * a.q_nb2);
    float qv[KPL];
#pragma unroll
    for (int i = 0; i < KPL; ++i) {
        const int e = lane + 32 * i;
        qv[i] = e < a.d_k ? qrow[e] : 0.0f;
    }
    const uint8_t* kbase = a.k + g * a.k_nb1;
    const uint8_t* vbase = a.v + g * a.v_nb1;

    const int32_t pos = a.positions[t];
    const int32_t seq = a.seq_ids[t];
    const bool seq_ok = seq >= 0 && seq < 64 * a.seq_words;
    const int32_t word = seq_ok ? seq / 64 : 0;
    const int32_t bit = seq_ok ? seq % 64 : 0;

    float m = -INFINITY, l = 0.0f;
    float acc[VPL];
#pragma unroll
    for (int i = 0; i < VPL; ++i) acc[i] = 0.0f;

    for (int32_t c0 = 0; c0 < a.n_cells; c0 += 32) {
        const int32_t c = c0 + lane;
        bool vis = false;
        if (seq_ok && c < a.n_cells) {
            const int32_t cp = a.cell_pos[c];
            vis = cp >= 0 && cp <= pos && ((a.cell_seqs[(int64_t)c * a.seq_words + word] >> bit) & 1ull);
        }
        const unsigned mask = __ballot_sync(kFull, vis);
        if (mask == 0) continue;

        // Scores of the visible cells: lane j keeps the score of cell c0 + j.
        float my_s = -INFINITY;
        for (unsigned mm = mask; mm != 0; mm &= mm - 1) {
            const int j = __ffs((int)mm) - 1;
            const uint8_t* krow = kbase + (int64_t)(c0 + j) * a.k_nb2;
            float part = 0.0f;
#pragma unroll
            for (int i = 0; i < KPL; ++i) {
                const int e = lane + 32 * i;
                if (e < a.d_k) part += qv[i] * load_kv(a.k_type, krow, e);
            }
            const float s = warp_sum(part) * a.scale;
            if (lane == j) my_s = s;
        }
        const float tmax = warp_max(vis ? my_s : -INFINITY);
        if (tmax == -INFINITY) continue;  // nothing finite in this tile: state unchanged (as the CPU)
        const float m_new = fmaxf(m, tmax);
        const float resc = expf(m - m_new);  // 0 on the first visible tile (m = -inf)
        const float p = vis ? expf(my_s - m_new) : 0.0f;
        l = l * resc + warp_sum(p);
        m = m_new;
#pragma unroll
        for (int i = 0; i < VPL; ++i) acc[i] *= resc;
        for (unsigned mm = mask; mm != 0; mm &= mm - 1) {
            const int j = __ffs((int)mm) - 1;
            const float pj = __shfl_sync(kFull, p, j);
            const uint8_t* vrow = vbase + (int64_t)(c0 + j) * a.v_nb2;
#pragma unroll
            for (int i = 0; i < VPL; ++i) {
                const int e = lane + 32 * i;
                if (e < a.d_v) acc[i] += pj * load_kv(a.v_type, vrow, e);
            }
        }
    }

    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    float* orow = reinterpret_cast<float*>(a.out + t * a.out_nb1) + h * a.d_v;
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
        const int e = lane + 32 * i;
        if (e < a.d_v) orow[e] = acc[i] * inv;
    }
}

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("cuda attention: " + what); }

bool is_kv_type(uint32_t t) {
    return t == quant::T_F32 || t == quant::T_F16 || t == quant::T_BF16 || t == quant::T_Q8_0;
}

template <int KPL, int VPL>
void launch(const AttnArgs& a, dim3 grid, int threads, cudaStream_t stream) {
    attention_kernel<KPL, VPL><<<grid, threads, 0, stream>>>(a);
    IKLLM_CUDA_LAUNCHED("attention_kernel");
}

}  // namespace

void run_attention(const Op& op, const OpEnv& env) {
    for (int i = 0; i < 3; ++i)
        if (!op.src[i] || !op.src[i]->data) bad("missing q/k/v");
    if (!op.dst || !op.dst->data) bad("missing dst");
    const Tensor& q = *op.src[0];   // [d_k, n_head, T] f32
    const Tensor& kc = *op.src[1];  // [d_k, n_head_kv, cells]
    const Tensor& vc = *op.src[2];  // [d_v, n_head_kv, cells]
    const Tensor& out = *op.dst;    // [d_v * n_head, T] f32
    const int64_t d_k = q.ne[0], n_head = q.ne[1], T = q.ne[2];
    const int64_t d_v = vc.ne[0], n_head_kv = kc.ne[1];
    if (T <= 0 || n_head <= 0) return;
    if (q.type != quant::T_F32 || q.nb[0] != 4) bad("q must be contiguous f32 rows");
    if (out.type != quant::T_F32) bad("dst must be f32");
    if (!is_kv_type(kc.type) || !is_kv_type(vc.type))
        bad("unsupported cache type " + std::to_string(kc.type) + "/" + std::to_string(vc.type));
    if (kc.ne[0] < d_k) bad("K rows shorter than q rows");
    if (n_head_kv <= 0 || n_head % n_head_kv != 0) bad("n_head must be a multiple of n_head_kv");
    if (vc.ne[1] != n_head_kv) bad("K and V head counts differ");
    if ((kc.type == quant::T_Q8_0 && d_k % 32 != 0) || (vc.type == quant::T_Q8_0 && d_v % 32 != 0))
        bad("q8_0 rows need a multiple of 32 values");
    if (out.ne[0] < d_v * n_head) bad("dst rows too short");
    if (!op.i32 || !op.seq_ids) bad("no positions / sequence ids");
    if (op.kv.n_cells > 0 && (!op.kv.cell_pos || !op.kv.cell_seqs)) bad("no KV cell metadata");
    if (op.kv.seq_words <= 0) bad("seq_words must be positive");
    if (T > 0x7fffffffLL) bad("too many tokens");

    AttnArgs a;
    a.q = static_cast<const uint8_t*>(q.data);
    a.q_nb1 = (int64_t)q.nb[1];
    a.q_nb2 = (int64_t)q.nb[2];
    a.k = static_cast<const uint8_t*>(kc.data);
    a.k_nb1 = (int64_t)kc.nb[1];
    a.k_nb2 = (int64_t)kc.nb[2];
    a.k_type = kc.type;
    a.v = static_cast<const uint8_t*>(vc.data);
    a.v_nb1 = (int64_t)vc.nb[1];
    a.v_nb2 = (int64_t)vc.nb[2];
    a.v_type = vc.type;
    a.out = static_cast<uint8_t*>(out.data);
    a.out_nb1 = (int64_t)out.nb[1];
    a.d_k = (int32_t)d_k;
    a.d_v = (int32_t)d_v;
    a.group = (int32_t)(n_head / n_head_kv);
    a.scale = op.f[0];
    a.positions = op.i32;
    a.seq_ids = op.seq_ids;
    a.cell_pos = op.kv.cell_pos;
    a.cell_seqs = op.kv.cell_seqs;
    a.seq_words = op.kv.seq_words;
    a.n_cells = op.kv.n_cells;

    const int warps = a.group < kMaxWarps ? a.group : kMaxWarps;
    const int64_t zb = (a.group + warps - 1) / warps;
    if (n_head_kv > 65535 || zb > 65535) bad("too many heads");
    const dim3 grid((unsigned)T, (unsigned)n_head_kv, (unsigned)zb);
    const int threads = 32 * warps;
    if (d_k <= 128 && d_v <= 128) launch<4, 4>(a, grid, threads, env.stream);
    else if (d_k <= 256 && d_v <= 256) launch<8, 8>(a, grid, threads, env.stream);
    else if (d_k <= 576 && d_v <= 512) launch<18, 16>(a, grid, threads, env.stream);
    else bad("head size too large (d_k " + std::to_string(d_k) + ", d_v " + std::to_string(d_v) + ")");
}

}  // namespace ikllm::cuda
