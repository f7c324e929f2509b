// The CUDA backend's op kernels. The executor hands each function an Op whose pointers are
// all device pointers: every Tensor::data (activations, weights, KV cache), op.i32,
// op.seq_ids, op.kv.cell_pos, op.kv.cell_seqs and op.rope.freq_factors. The Tensor structs
// themselves are host structs (read shapes and strides on the host, pass them by value to
// kernels). Semantics are exactly those of the CPU backend (backends/cpu/op_*.cpp), which the
// op-by-op tests compare against.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "launch.cuh"
#include "ops.h"

namespace ikllm::cuda {

// Device scratch for temporaries of one op: a bump allocator over one device buffer, reset
// by the executor before each op. alloc() throws std::bad_alloc when the buffer is too small
// (the executor then grows it and retries the op... it does not: size it with need()).
class Scratch {
public:
    virtual ~Scratch() = default;
    // 256-byte aligned device memory valid until the op returns (stream-ordered).
    virtual void* alloc(size_t bytes) = 0;
    // What was allocated so far stays valid after the op, until the executor drops it
    // (OpEnv::act_cache). Scratch that cannot keep never gets a cache.
    virtual void keep() {}
};

class ActRoundCache;

struct OpEnv {
    cudaStream_t stream = nullptr;
    Scratch* scratch = nullptr;
    int sm_count = 0;
    // Round activations like the CPU kernels before quantized products (act_round.cuh);
    // IKLLM_CUDA_ACT_ROUND=0 turns it off (plain f32 activations: closer to the exact product,
    // further from the CPU backend and the reference engine).
    bool act_round = true;
    // Single-token products stage weights through shared memory where the layout allows
    // (matmul.cu, mat_vec_staged_kernel). Off by default: no faster than the register kernel
    // on an H200 (llama-8b Q4_0 tg128 105.7-110.9 vs 114.2 t/s); IKLLM_CUDA_STAGED=1 turns it on.
    bool staged = false;
    // K step of the int8 tensor-core kernel in 32s (mat_mma_int8_kernel.cuh: 1, or 2 with
    // IKLLM_CUDA_MMA_KSUB=2: half the barriers, but over 128 registers for most views, so one
    // block per SM instead of two). Same results either way; which is faster is for a GPU to say.
    int mma_k_sub = 1;
    // Products on up to 8 tokens with weights of a type that has an integer view
    // (int8_codes.cuh: Q8_0, Q4_0, IQ4_NL, Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_K) multiply int8
    // weight codes with the rounded activations' int8 codes (dp4a) instead of decoding to
    // float, in the reference's CPU numerics (saturating pair sums for IQ4_XS / IQ4_K), as the
    // CPU backend does. IKLLM_CUDA_INT8=0 turns it off (decode to float, exact products).
    bool int8 = true;
    // The same for prompt batches (more than 8 tokens): int8 mma.sync on the tensor cores
    // (mat_mma_int8.cu) instead of weights decoded to fp16, with the reference's batch forms
    // from 32 tokens per call. IKLLM_CUDA_INT8_MMA=0 turns it off.
    bool int8_mma = true;
    // The op's session option batch_invariant (set per op by the executor): products never
    // take the reference's batch form (the CPU backend then multiplies in blocks of <= 15 tokens).
    bool batch_invariant = false;
    // Products (set per op by the executor): rounded activations shared with the previous or next
    // product of the same rows (act_round_cache.h), kept in scratch via Scratch::keep. Null: each
    // product rounds its own copy. IKLLM_CUDA_ACT_SHARE=0 turns the sharing off.
    ActRoundCache* act_cache = nullptr;
    // Fused launches: gate and up of a generation step in one matrix-vector launch (and the
    // executor's op pairs above). IKLLM_CUDA_FUSE=0 turns them off.
    bool fuse = true;
    // Attention of prompt batches with an f16 cache on the tensor cores (attention_mma.cu)
    // instead of the float kernel. IKLLM_CUDA_ATTN_MMA=0 turns it off.
    bool attn_mma = true;
    // Kernels may start before the kernel ahead of them has finished (programmatic dependent
    // launch, compute capability 9.0 on; launch.cuh: each waits at IKLLM_KERNEL_ENTRY), hiding
    // the gap between one kernel's end and the next one's start. IKLLM_CUDA_PDL=1 turns it on.
    bool pdl = false;
    // Matrix-vector kernels ask for their block's weight rows in L2 (one bulk prefetch) before
    // they wait for the kernel ahead (MatArgs::l2_prefetch). IKLLM_CUDA_L2_PREFETCH=1 turns it on.
    bool l2_prefetch = false;
    // The single-token int8 kernel loads 4 chunks per thread and row ahead of their arithmetic
    // instead of 2 (MatArgs::mv_unroll): twice the bytes in flight, more registers, same results.
    // IKLLM_CUDA_MV_UNROLL=4 turns it on.
    int mv_unroll = 2;
    // Where the op's kernels go.
    StreamRef on() const { return StreamRef(stream, pdl); }
};

// Throws std::runtime_error naming the call when a CUDA call failed.
void check(cudaError_t e, const char* what);
#define IKLLM_CUDA_CHECK(call) ::ikllm::cuda::check((call), #call)
// After a launch: reports launch-configuration errors right away.
#define IKLLM_CUDA_LAUNCHED(name) ::ikllm::cuda::check(cudaGetLastError(), name)

struct ActRoundOut;  // act_round_kernel.cuh
struct ActRoundKey;  // act_round_cache.h

// Element-wise and normalisation ops (ops_basic.cu). With `round`, rms_norm also writes the
// rounded copy of its output rows [K, T] that the product after it takes (the executor's fusion).
void run_rms_norm(const Op& op, const OpEnv& env, const ActRoundOut* round = nullptr);
void run_add(const Op& op, const OpEnv& env);
void run_swiglu(const Op& op, const OpEnv& env);
void run_copy(const Op& op, const OpEnv& env);
void run_gather_rows(const Op& op, const OpEnv& env);
void run_rope(const Op& op, const OpEnv& env);
void run_kv_store(const Op& op, const OpEnv& env);
// Attention (ops_attention.cu): standard heads (GQA) and MLA latent caches, f32/f16/bf16/q8_0 cache.
void run_attention(const Op& op, const OpEnv& env);
// MoE routing (ops_moe_route.cu).
void run_moe_route(const Op& op, const OpEnv& env);

// Weight ops (matmul.cu, moe.cu, get_rows.cu).
void run_get_rows(const Op& op, const OpEnv& env);
void run_mul_mat(const Op& op, const OpEnv& env);
// With `round`, the swiglu output rows [N, T] come with the rounded copy the next product takes.
void run_mul_mat_swiglu(const Op& op, const OpEnv& env, const ActRoundOut* round = nullptr);
void run_mul_mat_heads(const Op& op, const OpEnv& env);
void run_moe_ffn(const Op& op, const OpEnv& env);

// Pairs of consecutive ops the executor runs as one launch (OpEnv::fuse), each bit-identical to
// running the two ops: a projection on <= 8 tokens and the residual add of its output (in the
// product's epilogue); the rope of q and of k (same positions and parameters); the K and V
// stores of a layer (same cells and cache type). And the rounded copy a product's activations
// need, when the op writing them may write it (rms_norm above, mul_mat_swiglu below).
bool mul_mat_add_fusable(const Op& mm, const Op& add);
void run_mul_mat_add(const Op& mm, const Op& add, const OpEnv& env);
bool rope_pair_fusable(const Op& a, const Op& b);
void run_rope_pair(const Op& a, const Op& b, const OpEnv& env);
bool kv_store_pair_fusable(const Op& a, const Op& b);
void run_kv_store_pair(const Op& a, const Op& b, const OpEnv& env);
bool product_shared_rounding(const Op& product, const OpEnv& env, ActRoundKey* key);

// Which weight types the matrix kernels and get_rows decode (block_decode.cuh).
bool weight_type_supported(uint32_t type);

}  // namespace ikllm::cuda
