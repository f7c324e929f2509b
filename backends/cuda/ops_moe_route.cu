// MoE routing on the CUDA backend, semantics of cpu::op_moe_route (backends/cpu/op_moe.cpp):
// per token, gating (softmax / sigmoid), top-k by selection score (prob + optional bias;
// ties to the lower expert index), optional renormalisation and scaling, smart expert
// reduction. dst = weights [k, T] f32; aux = ids [k, T] int32.
//
// One block per token. The element-wise exp runs across the block's threads; the max and the
// top-k are warp reductions that give the CPU's choices exactly (ties and NaN included); every
// reduction whose order affects the result (the double softmax sum, the float sums of the
// weights) runs in thread 0 in the CPU's order, so the selected experts and weights match the
// CPU's (exp is evaluated in double and rounded once to float, see op_math.cuh). The top-k was
// thread 0's too: k scans of every expert, each checking the choices so far (~10^4 dependent
// steps per token for 256 experts, 8 chosen), on the critical path of every MoE layer.
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda_ops.cuh"
#include "launch.cuh"
#include "op_math.cuh"
#include "quant/type_traits.h"

namespace ikllm::cuda {

namespace {

constexpr int kMaxK = 64;           // experts per token supported
constexpr int kMaxExperts = 8192;  // experts per layer supported
constexpr int kThreads = 128;

struct RouteArgs {
    const uint8_t* logits;
    int64_t logits_nb1;
    const float* bias;  // [n_exp] or null
    uint8_t* w;
    int64_t w_nb1;
    uint8_t* ids;
    int64_t ids_nb1;
    int32_t n_exp, k;
    int32_t softmax;
    int32_t norm;
    int32_t apply_scale;
    float scale;
    int32_t ser_max;
    float ser_frac;
};

__global__ void moe_route_kernel(RouteArgs a) {
    IKLLM_KERNEL_ENTRY();
    IKLLM_DYN_SHARED(float, sh);
    float* prob = sh;              // [n_exp]
    float* sel = sh + a.n_exp;     // [n_exp]
    IKLLM_SHARED(float, s_mx, );
    IKLLM_SHARED(float, s_inv, );
    const int64_t t = blockIdx.x;
    const float* z = reinterpret_cast<const float*>(a.logits + t * a.logits_nb1);
    const int n = a.n_exp;

    IKLLM_SHARED(uint32_t, taken, [kMaxExperts / 32]);
    IKLLM_SHARED(int32_t, chosen_sh, [kMaxK]);
    for (int w = threadIdx.x; w < (n + 31) / 32; w += blockDim.x) taken[w] = 0;
    if (a.softmax) {
        // The CPU's max (mx < z ? z : mx from z[0]): NaN only when z[0] is; else the largest
        // other value. Warp 0 reduces it; which zero wins does not matter (z - mx is the same).
        if (threadIdx.x < 32) {
            float mx = -INFINITY;
            for (int e = threadIdx.x; e < n; e += 32) mx = fmaxf(mx, z[e]);  // fmaxf skips NaN
            for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            if (threadIdx.x == 0) s_mx = z[0] != z[0] ? z[0] : mx;
        }
        __syncthreads();
        const float mx = s_mx;
        for (int e = threadIdx.x; e < n; e += blockDim.x) prob[e] = math::exp_f(math::sub_rn(z[e], mx));
        __syncthreads();
        if (threadIdx.x == 0) {
            double sum = 0;
            for (int e = 0; e < n; ++e) sum += prob[e];
            s_inv = (float)(1.0 / sum);
        }
        __syncthreads();
        const float inv = s_inv;
        for (int e = threadIdx.x; e < n; e += blockDim.x) prob[e] = math::mul_rn(prob[e], inv);
    } else {
        for (int e = threadIdx.x; e < n; e += blockDim.x) prob[e] = math::sigmoid(z[e]);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < n; e += blockDim.x) sel[e] = a.bias ? math::add_rn(prob[e], a.bias[e]) : prob[e];
    __syncthreads();
    const int k = a.k;
    // Top-k by warp 0, each choice a warp reduction giving what the CPU's scan over ascending e
    // gives (best = e when sel[e] > sel[best], from the first expert not yet taken): the largest
    // score, ties to the lower index, NaN scores never chosen -- unless the first expert not
    // taken has one (nothing beats it then).
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        for (int j = 0; j < k; ++j) {
            int best = INT_MAX, first = INT_MAX;
            float bv = 0.f;
            for (int e = lane; e < n; e += 32) {  // ascending per lane: an equal score keeps the lower index
                if ((taken[e / 32] >> (e % 32)) & 1u) continue;
                first = min(first, e);
                const float v = sel[e];
                if (v != v) continue;
                if (best == INT_MAX || v > bv) {
                    bv = v;
                    best = e;
                }
            }
            for (int off = 16; off > 0; off /= 2) {
                const float ov = __shfl_xor_sync(0xffffffffu, bv, off);
                const int oi = __shfl_xor_sync(0xffffffffu, best, off);
                first = min(first, __shfl_xor_sync(0xffffffffu, first, off));
                if (oi != INT_MAX && (best == INT_MAX || ov > bv || (ov == bv && oi < best))) {
                    bv = ov;
                    best = oi;
                }
            }
            const int pick = (first != INT_MAX && sel[first] != sel[first]) ? first : best;
            if (lane == 0) {
                chosen_sh[j] = pick;
                taken[pick / 32] |= 1u << (pick % 32);
            }
            __syncwarp();
        }
    }
    __syncthreads();
    if (threadIdx.x != 0) return;

    float* w = reinterpret_cast<float*>(a.w + t * a.w_nb1);
    int32_t* id = reinterpret_cast<int32_t*>(a.ids + t * a.ids_nb1);
    int32_t chosen[kMaxK];
    float wl[kMaxK];
    for (int j = 0; j < k; ++j) chosen[j] = chosen_sh[j];
    float total = 0;
    for (int j = 0; j < k; ++j) {
        wl[j] = prob[chosen[j]];
        total = math::add_rn(total, wl[j]);
    }
    if (a.norm)
        for (int j = 0; j < k; ++j) wl[j] = math::div_rn(wl[j], total);
    if (a.apply_scale)
        for (int j = 0; j < k; ++j) wl[j] = math::mul_rn(wl[j], a.scale);
    if (a.ser_max > 0) {
        // Stable sort of the slots by weight, descending (insertion sort keeps equal weights in slot order).
        int by_w[kMaxK];
        for (int j = 0; j < k; ++j) {
            int r = j;
            while (r > 0 && wl[by_w[r - 1]] < wl[j]) {
                by_w[r] = by_w[r - 1];
                --r;
            }
            by_w[r] = j;
        }
        const float top = wl[by_w[0]];
        float all = 0, kept = 0;
        for (int j = 0; j < k; ++j) all = math::add_rn(all, wl[j]);
        for (int r = 0; r < k; ++r) {
            const int j = by_w[r];
            if (r > 0 && (r >= a.ser_max || wl[j] < math::mul_rn(a.ser_frac, top))) chosen[j] = -1;
            else kept = math::add_rn(kept, wl[j]);
        }
        const float f = kept > 0 ? math::div_rn(all, kept) : 1.0f;
        for (int j = 0; j < k; ++j) wl[j] = chosen[j] < 0 ? 0.0f : math::mul_rn(wl[j], f);
    }
    for (int j = 0; j < k; ++j) {
        w[j] = wl[j];
        id[j] = chosen[j];
    }
}

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("cuda moe_route: " + what); }

}  // namespace

void run_moe_route(const Op& op, const OpEnv& env) {
    if (!op.src[0] || !op.src[0]->data) bad("missing logits");
    if (!op.dst || !op.dst->data) bad("missing weights output");
    if (!op.aux || !op.aux->data) bad("missing ids output");
    const Tensor& logits = *op.src[0];
    const Tensor* bias = op.src[1];
    const MoeParams& p = op.moe;
    const int64_t n_exp = logits.ne[0], T = logits.ne[1], k = p.n_used;
    if (T <= 0) return;
    if (logits.type != quant::T_F32 || logits.nb[0] != 4) bad("logits must be contiguous f32 rows");
    if (bias && (!bias->data || bias->type != quant::T_F32 || bias->ne[0] < n_exp)) bad("bad selection bias");
    if (k <= 0 || k > n_exp) bad("n_used must be in [1, n_expert]");
    if (k > kMaxK) bad("n_used above " + std::to_string(kMaxK));
    if (n_exp > kMaxExperts) bad("too many experts");
    if (p.gating != MoeGating::softmax && p.gating != MoeGating::sigmoid) bad("unknown gating");
    if (T > 0x7fffffffLL) bad("too many tokens");

    RouteArgs a;
    a.logits = static_cast<const uint8_t*>(logits.data);
    a.logits_nb1 = (int64_t)logits.nb[1];
    a.bias = bias ? static_cast<const float*>(bias->data) : nullptr;
    a.w = static_cast<uint8_t*>(op.dst->data);
    a.w_nb1 = (int64_t)op.dst->nb[1];
    a.ids = static_cast<uint8_t*>(op.aux->data);
    a.ids_nb1 = (int64_t)op.aux->nb[1];
    a.n_exp = (int32_t)n_exp;
    a.k = (int32_t)k;
    a.softmax = p.gating == MoeGating::softmax ? 1 : 0;
    a.norm = p.norm ? 1 : 0;
    a.apply_scale = std::fabs(p.scale - 1.0f) > 1e-5f ? 1 : 0;
    a.scale = p.scale;
    a.ser_max = p.ser_max;
    a.ser_frac = p.ser_frac;
    const size_t shmem = sizeof(float) * 2 * (size_t)n_exp;
    IKLLM_LAUNCH((unsigned)T, kThreads, shmem, env.on(), moe_route_kernel)(a);
    IKLLM_CUDA_LAUNCHED("moe_route_kernel");
}

}  // namespace ikllm::cuda
