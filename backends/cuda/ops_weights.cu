// Ops that read weights: get_rows, mul_mat (+ fused gate/up, per-head products) and the routed
// experts of a MoE layer. The products themselves are in matmul.cu.
#include <cuda_fp16.h>

#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "act_round.cuh"
#include "block_decode.cuh"
#include "cuda_ops.cuh"
#include "matmul_kernels.cuh"
#include "swiglu_kernels.cuh"

namespace ikllm::cuda {

namespace {

template <class D>
__global__ void get_rows_kernel(const uint8_t* table, size_t row_bytes, const int32_t* ids, int64_t ne0, float* dst,
                                size_t dst_row) {
    IKLLM_KERNEL_ENTRY();
    const int64_t t = blockIdx.x;
    const uint8_t* row = table + (int64_t)ids[t] * row_bytes;
    float* out = reinterpret_cast<float*>(reinterpret_cast<char*>(dst) + t * dst_row);
    constexpr int cpb = D::kBlockElems / 8;
    for (int64_t c = threadIdx.x; c < ne0 / 8; c += blockDim.x) {
        float v[8];
        D::decode8(row, c / cpb, (int)(c % cpb), v);
#pragma unroll
        for (int e = 0; e < 8; ++e) out[c * 8 + e] = v[e];
    }
}

// out[t][i] = sum_j wt[t][j] * eout[slot[t*k + j]][i], in selection order.
__global__ void moe_combine_kernel(const float* eout, const int32_t* slot, const float* wts, size_t wts_t, int64_t k,
                                   int64_t E, float* y, size_t y_t) {
    IKLLM_KERNEL_ENTRY();
    const int64_t t = blockIdx.y;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= E) return;
    const float* wt = reinterpret_cast<const float*>(reinterpret_cast<const char*>(wts) + t * wts_t);
    float s = 0.f;
    for (int64_t j = 0; j < k; ++j) {
        const int32_t sl = slot[t * k + j];
        if (sl >= 0) s += wt[j] * eout[(int64_t)sl * E + i];
    }
    reinterpret_cast<float*>(reinterpret_cast<char*>(y) + t * y_t)[i] = s;
}

// The same for the device-side expert path: pair z = t*k + j holds token t's j-th choice,
// skipped when its id is outside [0, n_exp).
__global__ void moe_combine_ids_kernel(const float* eout, const int32_t* ids, size_t ids_t, const float* wts, size_t wts_t,
                                       int64_t k, int64_t n_exp, int64_t E, float* y, size_t y_t) {
    IKLLM_KERNEL_ENTRY();
    const int64_t t = blockIdx.y;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= E) return;
    const float* wt = reinterpret_cast<const float*>(reinterpret_cast<const char*>(wts) + t * wts_t);
    const int32_t* id = reinterpret_cast<const int32_t*>(reinterpret_cast<const char*>(ids) + t * ids_t);
    float s = 0.f;
    for (int64_t j = 0; j < k; ++j)
        if (id[j] >= 0 && id[j] < n_exp) s += wt[j] * eout[(t * k + j) * E + i];
    reinterpret_cast<float*>(reinterpret_cast<char*>(y) + t * y_t)[i] = s;
}

// b with the activations (and their rounding state) of src: products that share one input.
MatArgs with_activations_of(MatArgs b, const MatArgs& src) {
    b.x = src.x;
    b.x_t = src.x_t;
    b.x_z = src.x_z;
    b.x_rows = src.x_rows;
    b.x_div = src.x_div;
    b.round_x_f16 = src.round_x_f16;
    b.staged = src.staged;
    b.mma_k_sub = src.mma_k_sub;
    b.xq = src.xq;
    b.xq_d = src.xq_d;
    return b;
}

// Whether products with weights of types t1 and t2 take the same rounded activations.
bool same_rounding(const OpEnv& env, const Tensor& w1, const Tensor& w2) {
    return !env.act_round || act_round_for(w1.type, exact_interleaved_form(w1.stored_type)) ==
                                 act_round_for(w2.type, exact_interleaved_form(w2.stored_type));
}

MatArgs weight_args(const Tensor& w) {
    MatArgs a;
    a.type = w.type;
    a.exact = exact_interleaved_form(w.stored_type);
    a.w = static_cast<const uint8_t*>(w.data);
    a.w_row = w.nb[1];
    a.w_z = w.nb[2];
    a.K = w.ne[0];
    a.N = w.ne[1];
    return a;
}

unsigned blocks_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

}  // namespace

void run_get_rows(const Op& op, const OpEnv& env) {
    const Tensor& table = *op.src[0];
    const Tensor& dst = *op.dst;
    if (op.n_i32 <= 0) return;
    const bool ok = dispatch_weight_type(table.type, [&](auto d) {
        using D = decltype(d);
        IKLLM_LAUNCH((unsigned)op.n_i32, 128, 0, env.on(), get_rows_kernel<D>)(static_cast<const uint8_t*>(table.data), table.nb[1],
                                                                       op.i32, table.ne[0], static_cast<float*>(dst.data),
                                                                       dst.nb[1]);
    });
    if (!ok) throw std::runtime_error(std::string("CUDA get_rows: no kernel for the type of ") + table.name);
    IKLLM_CUDA_LAUNCHED("get_rows_kernel");
}

namespace {

// The product's operands: weights src[0] (gate for mul_mat_swiglu), activations src[1].
MatArgs product_args(const Op& op) {
    const Tensor& x = *op.src[1];
    MatArgs a = weight_args(*op.src[0]);
    a.x = static_cast<const float*>(x.data);
    a.x_t = x.nb[1];
    a.T = x.ne[1];
    return a;
}

MatArgs mul_mat_args(const Op& op) {
    const Tensor& y = *op.dst;
    MatArgs a = product_args(op);
    a.y = static_cast<float*>(y.data);
    a.y_t = y.nb[1];
    a.bias = op.src[2] ? static_cast<const float*>(op.src[2]->data) : nullptr;
    return a;
}

bool same_data(const Tensor* a, const Tensor* b) {
    return a && b && a->data == b->data && a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] &&
           a->ne[3] == b->ne[3] && a->nb[1] == b->nb[1];
}

bool plain_f32_rows(const Tensor* t, int64_t cols, int64_t rows) {
    return t && t->type == quant::T_F32 && t->ne[0] == cols && t->ne[1] == rows && t->ne[2] == 1 && t->ne[3] == 1 &&
           t->nb[0] == sizeof(float) && t->nb[1] % sizeof(float) == 0;
}

// [lo, hi) of plain f32 rows [cols, rows].
std::pair<uintptr_t, uintptr_t> rows_extent(const Tensor& t) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
    return {lo, lo + (uint64_t)(t.ne[1] - 1) * t.nb[1] + 4 * (uint64_t)t.ne[0]};
}
bool disjoint(const Tensor& a, const Tensor& b) {
    const auto [alo, ahi] = rows_extent(a);
    const auto [blo, bhi] = rows_extent(b);
    return ahi <= blo || bhi <= alo;
}

}  // namespace

bool product_shared_rounding(const Op& product, const OpEnv& env, ActRoundKey* key) {
    if (product.kind != OpKind::mul_mat && product.kind != OpKind::mul_mat_swiglu) return false;
    const Tensor* x = product.src[1];
    if (!x || x->ne[2] != 1 || x->ne[3] != 1 || !weight_type_supported(product.src[0]->type)) return false;
    return shared_rounding(product_args(product), env, key);
}

void run_mul_mat(const Op& op, const OpEnv& env) { launch_mat(mul_mat_args(op), env); }

bool mul_mat_add_fusable(const Op& mm, const Op& add) {
    if (mm.kind != OpKind::mul_mat || add.kind != OpKind::add || !mm.dst) return false;
    const int64_t N = mm.src[0]->ne[1], T = mm.src[1]->ne[1];
    if (T > kMatVecMaxTokens || mm.src[1]->ne[2] != 1 || !plain_f32_rows(mm.dst, N, T)) return false;
    const int other = same_data(add.src[0], mm.dst) ? 1 : same_data(add.src[1], mm.dst) ? 0 : -1;
    if (other < 0 || !plain_f32_rows(add.src[other], N, T) || !plain_f32_rows(add.dst, N, T)) return false;
    // Apart, the add runs after the whole product; fused, a block writes the sum while others
    // still read the product's input and write its output. So the sum may not land in the input
    // (the arena may give a dead input's bytes to the add's output), and every element must be
    // read and written by one thread only: the sum, the residual and the product's output each
    // the same rows as one another, or apart.
    const Tensor &x = *mm.src[1], &y = *mm.dst, &r = *add.src[other], &s = *add.dst;
    if (!plain_f32_rows(&x, x.ne[0], T) || !disjoint(s, x)) return false;
    return (same_data(&s, &y) || disjoint(s, y)) && (same_data(&r, &s) || disjoint(r, s)) &&
           (same_data(&r, &y) || disjoint(r, y));
}

void run_mul_mat_add(const Op& mm, const Op& add, const OpEnv& env) {
    MatArgs a = mul_mat_args(mm);
    const Tensor& r = same_data(add.src[0], mm.dst) ? *add.src[1] : *add.src[0];
    a.res = static_cast<const float*>(r.data);
    a.res_t = r.nb[1];
    a.y_res = static_cast<float*>(add.dst->data);
    a.y_res_t = add.dst->nb[1];
    launch_mat(a, env);
}

void run_mul_mat_swiglu(const Op& op, const OpEnv& env, const ActRoundOut* round) {
    const Tensor& wg = *op.src[0];
    const Tensor& x = *op.src[1];
    const Tensor& wu = *op.src[2];
    const Tensor& y = *op.dst;
    const int64_t N = wg.ne[1], T = x.ne[1];
    // Generation with gate and up of one layout: both in one matrix-vector launch, z = 0 the
    // matrix at the lower address, z = 1 the other (both read activation block 0: x_div 2).
    const bool one_launch = env.fuse && T <= kMatVecMaxTokens && wu.type == wg.type && wu.stored_type == wg.stored_type &&
                            wu.nb[1] == wg.nb[1] &&
                            wu.ne[0] == wg.ne[0] && wu.ne[1] == wg.ne[1] && wu.data != wg.data;
    // The two outputs in the order of the matrices' addresses when one launch writes both (z = 1
    // writes N * T floats after z = 0), gate first otherwise.
    const bool gate_first = !one_launch || wg.data < wu.data;
    float* lo = static_cast<float*>(env.scratch->alloc(sizeof(float) * N * T * 2));
    float* g = gate_first ? lo : lo + N * T;
    float* u = gate_first ? lo + N * T : lo;
    MatArgs a = product_args(op);
    a.y = g;
    a.y_t = sizeof(float) * N;
    if (one_launch) {
        MatArgs b = a;
        b.w = static_cast<const uint8_t*>(gate_first ? wg.data : wu.data);
        b.w_z = (size_t)std::abs(static_cast<const uint8_t*>(wu.data) - static_cast<const uint8_t*>(wg.data));
        b.Z = 2;
        b.x_div = 2;
        b.y = lo;
        b.y_z = sizeof(float) * N * T;
        launch_mat(b, env);
    } else {
        const MatArgs ar = with_rounded_activations(a, env);
        launch_rounded(ar, env);
        MatArgs b = a;
        b.type = wu.type;
        b.exact = exact_interleaved_form(wu.stored_type);
        b.w = static_cast<const uint8_t*>(wu.data);
        b.w_row = wu.nb[1];
        b.y = u;
        // The same rounding (or none): reuse the rounded copy.
        if (same_rounding(env, wu, wg)) launch_rounded(with_activations_of(b, ar), env);
        else launch_mat(b, env);
    }
    if (round) {
        if (y.ne[2] != 1 || y.ne[3] != 1) throw std::runtime_error("CUDA mul_mat_swiglu: rounding needs rows [N, T]");
        const int64_t warps = T * ((N + 255) / 256);
        IKLLM_LAUNCH(blocks_for(warps * 32, 128), 128, 0, env.on(), swiglu_round_kernel)(g, u, N, T, static_cast<float*>(y.data),
                                                                                y.nb[1], *round);
        IKLLM_CUDA_LAUNCHED("swiglu_round_kernel");
        return;
    }
    IKLLM_LAUNCH(blocks_for(N * T, 256), 256, 0, env.on(), swiglu_rows_kernel)(g, u, N, T, static_cast<float*>(y.data), y.nb[1],
                                                                       false);
    IKLLM_CUDA_LAUNCHED("swiglu_rows_kernel");
}

void run_mul_mat_heads(const Op& op, const OpEnv& env) {
    const Tensor& w = *op.src[0];  // [K, N, H]
    const Tensor& x = *op.src[1];  // [K, H, T]
    const Tensor& y = *op.dst;     // [N, H, T]
    MatArgs a = weight_args(w);
    a.Z = w.ne[2];
    a.x = static_cast<const float*>(x.data);
    a.x_z = x.nb[1];
    a.x_t = x.nb[2];
    a.T = x.ne[2];
    a.y = static_cast<float*>(y.data);
    a.y_z = y.nb[1];
    a.y_t = y.nb[2];
    launch_mat(a, env);
}

namespace {

// The operands of a routed-experts op (ops.h: moe_ffn).
struct MoeOperands {
    const Tensor &x, &ids, &wts, &y, &wg;
    const Tensor* wu;  // null: gate and up merged in wg
    const Tensor& wd;
    int64_t E, T, k, n_ff, n_exp;
    explicit MoeOperands(const Op& op)
        : x(*op.src[0]), ids(*op.src[1]), wts(*op.src[2]), y(*op.dst), wg(*op.ex[0]), wu(op.ex[1]), wd(*op.ex[2]),
          E(x.ne[0]), T(x.ne[1]), k(ids.ne[0]), n_ff(wd.ne[0]), n_exp(wd.ne[2]) {}
};

// Few tokens (generation): every (token, choice) pair is one matrix-vector product whose
// weight matrix the kernel picks from the ids on the device; no host round trip, so the step
// stays asynchronous (and capturable).
void moe_ffn_on_device(const Op& op, const OpEnv& env) {
    const MoeOperands o(op);
    const Tensor &x = o.x, &ids = o.ids, &wts = o.wts, &y = o.y, &wg = o.wg, &wd = o.wd;
    const Tensor* wu = o.wu;
    const int64_t E = o.E, T = o.T, k = o.k, n_ff = o.n_ff, n_exp = o.n_exp, pairs = T * k;
    float* g = static_cast<float*>(env.scratch->alloc(sizeof(float) * pairs * n_ff));
    float* u = static_cast<float*>(env.scratch->alloc(sizeof(float) * pairs * n_ff));
    float* eout = static_cast<float*>(env.scratch->alloc(sizeof(float) * pairs * E));
    auto expert_args = [&](const Tensor& w) {
        MatArgs a = weight_args(w);
        a.N = w.ne[1];
        a.T = 1;
        a.Z = pairs;
        a.w_ids = static_cast<const int32_t*>(ids.data);
        a.ids_k = k;
        a.ids_t = (int64_t)(ids.nb[1] / sizeof(int32_t));
        a.w_count = n_exp;
        return a;
    };
    // Gate and up: pair z reads token z / k.
    MatArgs a = expert_args(wg);
    a.N = n_ff;
    a.x = static_cast<const float*>(x.data);
    a.x_z = x.nb[1];
    a.x_div = k;
    a.y = g;
    a.y_z = sizeof(float) * n_ff;
    a.round_x_f16 = op.moe.round_f16;
    const MatArgs ar = with_rounded_activations(a, env);
    launch_rounded(ar, env);
    MatArgs b = wu ? expert_args(*wu) : a;
    if (!wu) b.w += n_ff * wg.nb[1];  // merged gate+up: the up rows follow the gate rows
    b.N = n_ff;
    b.y = u;
    b.y_z = sizeof(float) * n_ff;
    if (!wu || same_rounding(env, *wu, wg)) launch_rounded(with_activations_of(b, ar), env);
    else launch_mat(with_activations_of(b, a), env);
    IKLLM_LAUNCH(blocks_for(pairs * n_ff, 256), 256, 0, env.on(), swiglu_rows_kernel)(g, u, n_ff, pairs, g, sizeof(float) * n_ff,
                                                                              op.moe.round_f16);
    IKLLM_CUDA_LAUNCHED("swiglu_rows_kernel");
    // Down: pair z reads its own hidden row.
    MatArgs d = expert_args(wd);
    d.x = g;
    d.x_z = sizeof(float) * n_ff;
    d.y = eout;
    d.y_z = sizeof(float) * E;
    launch_mat(d, env);
    const dim3 grid(blocks_for(E, 256), (unsigned)T);
    IKLLM_LAUNCH(grid, 256, 0, env.on(), moe_combine_ids_kernel)(eout, static_cast<const int32_t*>(ids.data), ids.nb[1],
                                                         static_cast<const float*>(wts.data), wts.nb[1], k, n_exp, E,
                                                         static_cast<float*>(y.data), y.nb[1]);
    IKLLM_CUDA_LAUNCHED("moe_combine_ids_kernel");
}

}  // namespace

namespace {

// A prompt batch's (token, choice) pairs grouped by expert on the host: the pairs of expert e
// are [start[e], start[e] + count[e]) in token order; tok[s] is pair s's token, slot[t*k + j]
// the pair of token t's j-th choice (-1: none). The used experts are also listed per band of
// their pair count (mat_form_band) as MatArgs::grp tables. All of it goes to the device in
// one copy (`host`: tok, slot, then the band tables).
struct ExpertPairs {
    std::vector<int64_t> count, start;
    int64_t total = 0;
    std::vector<int32_t> host;
    int64_t band_groups[kMatFormBands] = {}, band_rows[kMatFormBands] = {}, band_at[kMatFormBands] = {};

    ExpertPairs(const std::vector<int32_t>& ids, int64_t T, int64_t k, int64_t n_exp)
        : count((size_t)n_exp, 0), start((size_t)n_exp, 0) {
        for (int32_t e : ids) {
            if (e >= n_exp) throw std::runtime_error("moe_ffn: expert id out of range");
            if (e >= 0) ++count[(size_t)e];
        }
        std::vector<int32_t> band_tab[kMatFormBands];
        for (int64_t e = 0; e < n_exp; ++e) {
            const int64_t n = count[(size_t)e];
            start[(size_t)e] = total;
            if (n > 0) {
                const int b = mat_form_band(n);
                band_tab[b].insert(band_tab[b].end(), {(int32_t)e, (int32_t)total, (int32_t)n});
                ++band_groups[b];
                band_rows[b] = std::max(band_rows[b], n);
            }
            total += n;
        }
        host.assign((size_t)(total + k * T), -1);
        int32_t* tok = host.data();
        int32_t* slot = host.data() + total;
        std::vector<int64_t> fill = start;
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < k; ++j) {
                const int32_t e = ids[(size_t)(t * k + j)];
                if (e < 0) continue;
                const int64_t s = fill[(size_t)e]++;
                tok[s] = (int32_t)t;
                slot[t * k + j] = (int32_t)s;
            }
        for (int b = 0; b < kMatFormBands; ++b) {
            band_at[b] = (int64_t)host.size();
            host.insert(host.end(), band_tab[b].begin(), band_tab[b].end());
        }
    }
};

}  // namespace

// Routed experts. Up to 8 tokens: moe_ffn_on_device. Larger batches: the expert ids come back
// to the host once per layer (a small copy) so the (token, slot) pairs can be grouped by
// expert (ExpertPairs). Gate/up, SwiGLU and down then run over all pairs with one launch per
// product and band of experts (MatArgs::grp: experts with similar pair counts share a kernel
// and its numerics, as each expert's own call would), and one kernel sums the k outputs per
// token. (Before 2026-11-30 every used expert had launches of its own: ~3 per expert and
// layer, each too small to fill the GPU.)
void run_moe_ffn(const Op& op, const OpEnv& env_in) {
    if (op.src[0]->ne[1] <= 8) {
        moe_ffn_on_device(op, env_in);
        return;
    }
    // (the rounded copies below live in this op's scratch: none may outlive it in the cache)
    OpEnv env = env_in;
    env.act_cache = nullptr;
    const MoeOperands o(op);
    const Tensor &x = o.x, &ids = o.ids, &wts = o.wts, &y = o.y, &wg = o.wg, &wd = o.wd;
    const Tensor* wu = o.wu;
    const bool merged = wu == nullptr;
    const int64_t E = o.E, T = o.T, k = o.k, n_ff = o.n_ff, n_exp = o.n_exp;

    std::vector<int32_t> h_ids((size_t)(k * T));
    IKLLM_CUDA_CHECK(cudaMemcpy2DAsync(h_ids.data(), sizeof(int32_t) * k, ids.data, ids.nb[1], sizeof(int32_t) * k, T,
                                       cudaMemcpyDeviceToHost, env.stream));
    IKLLM_CUDA_CHECK(cudaStreamSynchronize(env.stream));
    const ExpertPairs p(h_ids, T, k, n_exp);
    const int64_t total = p.total;
    int32_t* d_idx = static_cast<int32_t*>(env.scratch->alloc(sizeof(int32_t) * p.host.size()));
    IKLLM_CUDA_CHECK(cudaMemcpyAsync(d_idx, p.host.data(), sizeof(int32_t) * p.host.size(), cudaMemcpyHostToDevice, env.stream));
    const int64_t pairs = total > 0 ? total : 1;
    float* g = static_cast<float*>(env.scratch->alloc(sizeof(float) * pairs * n_ff));
    float* u = static_cast<float*>(env.scratch->alloc(sizeof(float) * pairs * n_ff));
    float* eout = static_cast<float*>(env.scratch->alloc(sizeof(float) * pairs * E));
    // Expert e's weights and pairs [first, first + n) of all (x rows: the pairs' tokens).
    auto expert = [&](const Tensor& w, int64_t e, int64_t N, const float* xs, size_t x_t, const int32_t* rows, int64_t first,
                      int64_t n, float* y, int64_t y_n) {
        MatArgs a = weight_args(w);
        a.w += e * w.nb[2];
        a.N = N;
        a.x = xs;
        a.x_t = x_t;
        a.x_rows = rows ? rows + first : nullptr;
        if (!rows) a.x = reinterpret_cast<const float*>(reinterpret_cast<const char*>(xs) + first * (int64_t)x_t);
        a.T = n;
        a.y = y + first * y_n;
        a.y_t = sizeof(float) * (size_t)y_n;
        return a;
    };
    // Every pair's activation row is rounded once for all experts (one launch, rows in pair order
    // so an expert's are a contiguous slice) and gate and up share it, where the rounded copy
    // holds what each expert's own call would have made: its int8 codes whenever int8 kernels
    // may run (both int8 options alike), and the rows are fit for every kernel (a copy, or
    // 16-byte aligned rows used as they are). Else each expert rounds its own rows.
    const float* xd = static_cast<const float*>(x.data);
    auto all_pairs = [&](const Tensor& w) {
        MatArgs r = expert(w, 0, n_ff, xd, x.nb[1], d_idx, 0, total, g, n_ff);
        r.round_x_f16 = op.moe.round_f16;
        return with_rounded_activations(r, env);
    };
    auto fit = [&](const MatArgs& r) {
        return !r.x_rows || (reinterpret_cast<uintptr_t>(r.x) | r.x_t) % 16 == 0;
    };
    const MatArgs all_g = all_pairs(wg);
    const MatArgs all_u = merged || same_rounding(env, *wu, wg) ? all_g : all_pairs(*wu);
    const bool grouped = env.int8 == env.int8_mma && total > 0 && fit(all_g) && fit(all_u);
    // The products of one weight tensor over all pairs: grouped by band, or one expert at a time.
    auto products = [&](const Tensor& w, size_t w_off, int64_t N, const MatArgs& all, float* out, const float* xs, size_t x_t,
                        const int32_t* rows) {
        if (grouped) {
            for (int b = 0; b < kMatFormBands; ++b) {
                if (!p.band_groups[b]) continue;
                MatArgs a = with_activations_of(weight_args(w), all);
                a.w += w_off;
                a.N = N;
                a.T = p.band_rows[b];
                a.Z = p.band_groups[b];
                a.grp = d_idx + p.band_at[b];
                a.y = out;
                a.y_t = sizeof(float) * (size_t)N;
                launch_rounded(a, env);
            }
            return;
        }
        for (int64_t e = 0; e < n_exp; ++e) {
            const int64_t n = p.count[(size_t)e];
            if (!n) continue;
            MatArgs a = expert(w, e, N, xs, x_t, rows, p.start[(size_t)e], n, out, N);
            a.w += w_off;
            a.round_x_f16 = op.moe.round_f16 && rows;  // (the down product's rows are rounded already)
            launch_mat(a, env);
        }
    };
    products(wg, 0, n_ff, all_g, g, xd, x.nb[1], d_idx);
    if (merged) products(wg, n_ff * wg.nb[1], n_ff, all_g, u, xd, x.nb[1], d_idx);
    else products(*wu, 0, n_ff, all_u, u, xd, x.nb[1], d_idx);
    if (total > 0) {
        IKLLM_LAUNCH(blocks_for(total * n_ff, 256), 256, 0, env.on(), swiglu_rows_kernel)(g, u, n_ff, total, g,
                                                                                  sizeof(float) * n_ff, op.moe.round_f16);
        IKLLM_CUDA_LAUNCHED("swiglu_rows_kernel");
    }
    // Down: pair s reads hidden row s; the rows of all pairs rounded once the same way.
    const MatArgs all_d = with_rounded_activations(expert(wd, 0, E, g, sizeof(float) * n_ff, nullptr, 0, total, eout, E), env);
    products(wd, 0, E, all_d, eout, g, sizeof(float) * n_ff, nullptr);
    const dim3 grid(blocks_for(E, 256), (unsigned)T);
    IKLLM_LAUNCH(grid, 256, 0, env.on(), moe_combine_kernel)(eout, d_idx + total, static_cast<const float*>(wts.data), wts.nb[1], k,
                                                     E, static_cast<float*>(y.data), y.nb[1]);
    IKLLM_CUDA_LAUNCHED("moe_combine_kernel");
}

}  // namespace ikllm::cuda
