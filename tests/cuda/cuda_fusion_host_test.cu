// The CUDA executor's fusion rules on the host (no GPU: the tensors' addresses are never read):
// which consecutive op pairs may run as one launch (cuda_ops.cuh), and when rms_norm may write
// the next product's rounded copy. Each refusal here is a case where one launch would not equal
// the two ops: an add whose output lands on the product's input (a block would overwrite rows
// other blocks still read), overlapping rope tensors, mixed cache types, too many tokens.
// The fused kernels themselves are compared bit for bit with the separate ops on a GPU by
// cuda_ops_test ("fused" rows).
#include <cstdint>
#include <cstdio>
#include <string>

#include "cuda/act_round.cuh"
#include "cuda/act_round_cache.h"
#include "cuda/cuda_ops.cuh"
#include "quant/type_traits.h"

using namespace ikllm;

namespace {

int g_fail = 0;
void expect(bool cond, const char* what) {
    std::printf("%-72s %s\n", what, cond ? "ok" : "FAIL");
    if (!cond) ++g_fail;
}

// A tensor at a made-up address (never dereferenced).
Tensor at(uintptr_t addr, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2 = 1, size_t nb1 = 0) {
    Tensor t;
    t.type = type;
    t.ne[0] = ne0; t.ne[1] = ne1; t.ne[2] = ne2; t.ne[3] = 1;
    t.nb[0] = type == quant::T_F32 ? 4 : (size_t)quant::find_type(type)->block_bytes;
    t.nb[1] = nb1 ? nb1 : (type == quant::T_F32 ? 4 * (size_t)ne0 : quant::row_bytes(*quant::find_type(type), ne0));
    t.nb[2] = t.nb[1] * (size_t)ne1;
    t.nb[3] = t.nb[2] * (size_t)ne2;
    t.data = reinterpret_cast<void*>(addr);
    return t;
}

constexpr uintptr_t kMiB = 1u << 20;

void mul_mat_add_rules() {
    const int64_t K = 256, N = 64, T = 2;
    Tensor W = at(100 * kMiB, quant::T_Q4_0, K, N);
    Tensor X = at(1 * kMiB, quant::T_F32, K, T), D = at(2 * kMiB, quant::T_F32, N, T);
    Tensor R = at(3 * kMiB, quant::T_F32, N, T), S = at(4 * kMiB, quant::T_F32, N, T);
    Op mm;
    mm.kind = OpKind::mul_mat;
    mm.src[0] = &W; mm.src[1] = &X; mm.dst = &D;
    Op add;
    add.kind = OpKind::add;
    add.src[0] = &R; add.src[1] = &D; add.dst = &S;
    expect(cuda::mul_mat_add_fusable(mm, add), "projection + residual add: one launch");
    add.src[0] = &D; add.src[1] = &R;
    expect(cuda::mul_mat_add_fusable(mm, add), "... the product's output as the add's first operand");
    add.dst = &R;
    expect(cuda::mul_mat_add_fusable(mm, add), "... summed in place into the residual");
    Tensor onto_x = at(1 * kMiB, quant::T_F32, N, T);
    add.dst = &onto_x;
    expect(!cuda::mul_mat_add_fusable(mm, add), "refused: the sum lands on the product's input");
    Tensor into_x = at(1 * kMiB + 4 * K * T - 8, quant::T_F32, N, T);
    add.dst = &into_x;
    expect(!cuda::mul_mat_add_fusable(mm, add), "refused: the sum overlaps the end of the product's input");
    Tensor shifted = at(2 * kMiB + 4 * 3, quant::T_F32, N, T);
    add.dst = &shifted;
    expect(!cuda::mul_mat_add_fusable(mm, add), "refused: the sum overlaps the product's output, shifted");
    add.dst = &S;
    Tensor r_shifted = at(2 * kMiB + 4 * 5, quant::T_F32, N, T);
    add.src[1] = &r_shifted;
    expect(!cuda::mul_mat_add_fusable(mm, add), "refused: the residual overlaps the product's output, shifted");
    Tensor other = at(5 * kMiB, quant::T_F32, N, T);
    add.src[0] = &other; add.src[1] = &R;
    expect(!cuda::mul_mat_add_fusable(mm, add), "refused: the add does not read the product's output");
    Tensor X9 = at(1 * kMiB, quant::T_F32, K, 9), D9 = at(2 * kMiB, quant::T_F32, N, 9);
    Tensor R9 = at(3 * kMiB, quant::T_F32, N, 9), S9 = at(4 * kMiB, quant::T_F32, N, 9);
    Op mm9 = mm;
    mm9.src[1] = &X9; mm9.dst = &D9;
    Op add9 = add;
    add9.src[0] = &R9; add9.src[1] = &D9; add9.dst = &S9;
    expect(!cuda::mul_mat_add_fusable(mm9, add9), "refused: 9 tokens (the tensor-core kernels have no residual)");
    Op rope;
    rope.kind = OpKind::rope;
    rope.dst = &D;
    add.src[0] = &R; add.src[1] = &D; add.dst = &S;
    expect(!cuda::mul_mat_add_fusable(mm, rope), "refused: not an add");
}

void rope_rules() {
    const int32_t* pos = reinterpret_cast<const int32_t*>(uintptr_t(9 * kMiB));
    Tensor Q = at(1 * kMiB, quant::T_F32, 128, 32, 1), Kt = at(2 * kMiB, quant::T_F32, 128, 8, 1);
    Op a;
    a.kind = OpKind::rope;
    a.dst = &Q; a.i32 = pos; a.n_i32 = 1;
    a.rope.n_dims = 128; a.rope.mode = RopeMode::neox;
    Op b = a;
    b.dst = &Kt;
    expect(cuda::rope_pair_fusable(a, b), "rope q + rope k: one launch");
    Op c = b;
    c.rope.freq_base = 500000.f;
    expect(!cuda::rope_pair_fusable(a, c), "refused: other rope parameters");
    c = b;
    c.i32 = pos + 16;
    expect(!cuda::rope_pair_fusable(a, c), "refused: other positions");
    Tensor overlap = at(1 * kMiB + 4 * 128 * 31, quant::T_F32, 128, 8, 1);
    c = b;
    c.dst = &overlap;
    expect(!cuda::rope_pair_fusable(a, c), "refused: the tensors overlap");
    Tensor two_tokens = at(2 * kMiB, quant::T_F32, 128, 8, 2);
    c = b;
    c.dst = &two_tokens;
    expect(!cuda::rope_pair_fusable(a, c), "refused: other token counts");
}

void kv_store_rules() {
    const int32_t* cells = reinterpret_cast<const int32_t*>(uintptr_t(9 * kMiB));
    Tensor Sk = at(1 * kMiB, quant::T_F32, 1024, 1), Sv = at(2 * kMiB, quant::T_F32, 1024, 1);
    Tensor Ck = at(10 * kMiB, quant::T_F16, 1024, 4096), Cv = at(30 * kMiB, quant::T_F16, 1024, 4096);
    Tensor Cq = at(50 * kMiB, quant::T_Q8_0, 1024, 4096);
    Op a;
    a.kind = OpKind::kv_store;
    a.src[0] = &Sk; a.dst = &Ck; a.i32 = cells; a.n_i32 = 1;
    Op b = a;
    b.src[0] = &Sv; b.dst = &Cv;
    expect(cuda::kv_store_pair_fusable(a, b), "K store + V store: one launch");
    Op c = b;
    c.dst = &Cq;
    expect(!cuda::kv_store_pair_fusable(a, c), "refused: cache types differ");
    c = b;
    c.i32 = cells + 4;
    expect(!cuda::kv_store_pair_fusable(a, c), "refused: other cells");
}

void norm_rounding_rules() {
    cuda::OpEnv env;  // defaults: rounding on, int8 kernels on
    const int64_t K = 512;
    Tensor X = at(1 * kMiB, quant::T_F32, K, 3);
    Tensor Wq = at(100 * kMiB, quant::T_Q4_0, K, 64), Wf = at(200 * kMiB, quant::T_F32, K, 64);
    Op p;
    p.kind = OpKind::mul_mat;
    p.src[0] = &Wq; p.src[1] = &X;
    cuda::ActRoundKey key;
    expect(cuda::product_shared_rounding(p, env, &key) && key.codes && key.mode == cuda::act_round_q8_32 &&
               key.x == X.data && key.T == 3 && key.K == K,
           "Q4_0 product: the norm writes the q8 copy and its int8 codes");
    env.int8 = false;
    expect(cuda::product_shared_rounding(p, env, &key) && !key.codes, "... without int8 kernels: values only");
    env.int8 = true;
    env.act_round = false;
    expect(!cuda::product_shared_rounding(p, env, &key), "no rounding (IKLLM_CUDA_ACT_ROUND=0): nothing to write");
    env.act_round = true;
    p.src[0] = &Wf;
    expect(!cuda::product_shared_rounding(p, env, &key), "F32 weights, aligned rows: no copy");
    Tensor Xm = at(1 * kMiB + 4, quant::T_F32, K, 3);
    p.src[1] = &Xm;
    expect(cuda::product_shared_rounding(p, env, &key) && key.mode == cuda::act_round_none,
           "F32 weights, misaligned rows on <= 8 tokens: an aligned copy");
    p.kind = OpKind::mul_mat_swiglu;
    p.src[0] = &Wq; p.src[1] = &X; p.src[2] = &Wq;
    expect(cuda::product_shared_rounding(p, env, &key) && key.codes, "gate/up product: shares like a projection");
    p.kind = OpKind::mul_mat_heads;
    expect(!cuda::product_shared_rounding(p, env, &key), "not a product that shares rounding (per-head)");
}

}  // namespace

int main() {
    mul_mat_add_rules();
    rope_rules();
    kv_store_rules();
    norm_rounding_rules();
    if (g_fail) {
        std::printf("cuda_fusion_host_test: %d failures\n", g_fail);
        return 1;
    }
    std::printf("cuda_fusion_host_test: ok\n");
    return 0;
}
