// Matrix kernels over any weight type with a BlockDecoder: a warp-per-row matrix-vector
// kernel for small token counts (generation) and a tensor-core (fp16 WMMA, fp32 accumulate)
// tiled kernel for prompt batches. Both read the weights once per launch in their storage
// type and decode in registers / shared memory.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "act_round_cache.h"
#include "launch.cuh"

namespace ikllm::cuda {

constexpr int kMatVecMaxTokens = 8;  // products on up to this many tokens: a matrix-vector kernel

// One batched product: for each z in [0, Z): y_z[n, t] = w_z[n, :] . x_z[:, t] (+ bias[n]).
// Strides are in bytes. x_rows (optional, per z) maps token t to the x row it reads.
struct MatArgs {
    uint32_t type = 0;
    // Exact products only (exact_interleaved_form: converted interleaved weights): no
    // saturating pair sums, no batch re-encoding, activations rounded per 256 values.
    bool exact = false;
    const uint8_t* w = nullptr;
    size_t w_row = 0, w_z = 0;
    const float* x = nullptr;
    size_t x_t = 0, x_z = 0;
    const int32_t* x_rows = nullptr;
    float* y = nullptr;
    size_t y_t = 0, y_z = 0;
    const float* bias = nullptr;
    int64_t K = 0, N = 0, T = 0, Z = 1;
    bool round_x_f16 = false;  // round activations to f16 first (F16 expert numerics)
    // z reads activation block z / x_div (routed experts: k (token, expert) pairs per token).
    int64_t x_div = 1;
    // Routed experts, matrix-vector kernel only (T <= 8): the weight matrix of z is number
    // w_ids[(z / ids_k) * ids_t + z % ids_k] (stride w_z); z is skipped (y left as it is) when
    // that id is negative or >= w_count. The ids stay on the device: no host round trip.
    const int32_t* w_ids = nullptr;
    int64_t ids_k = 1, ids_t = 0, w_count = 0;
    // Routed experts grouped by expert (prompt batches; expert_groups.cuh): z is group z of
    // grp[3z .. 3z+2] = {expert, first row, rows}: expert matrix `expert` (w_ids unset; stride
    // w_z) times rows [first, first + rows) of x (x_rows[first ...] when set) and xq, into rows
    // [first, ...) of y; T is the most rows of any group (grid size), x_z / y_z unused. With
    // grp_w_seq the weights of group z are matrix z instead (re-encoded copies of the groups'
    // experts, mat_mma_int8.cu).
    const int32_t* grp = nullptr;
    bool grp_w_seq = false;
    bool staged = false;  // may use the shared-memory staged kernel (OpEnv::staged)
    int mma_k_sub = 1;    // the int8 tensor-core kernel's K step in 32s (OpEnv::mma_k_sub)
    // The activations' int8 codes (with_rounded_activations, OpEnv::int8): row r = (z / x_div)
    // * T + t of xq holds K codes, of xq_d K / 32 scales (one per 32 codes; value = code *
    // scale). When set and the weight type has an integer view (int8_codes.cuh), products on
    // up to 8 tokens use the dp4a kernel; x still holds the same values as floats.
    const int8_t* xq = nullptr;
    const float* xq_d = nullptr;
    // y = y_scale x (w . x) + bias: the float kernels' factor for types whose reference matmul
    // scales the product beyond the dequantized values (IQ2_KT, IQ3_KT: float_matmul_factor).
    float y_scale = 1.f;
    // Matrix-vector kernels only (T <= 8, Z = 1): also y_res[t][n] = y[t][n] + res[t][n], the
    // residual add that follows a projection, done in the product's epilogue (the executor's
    // product + add fusion; bit-identical to the add op: one rounded float add).
    const float* res = nullptr;
    float* y_res = nullptr;
    size_t res_t = 0, y_res_t = 0;
    // Matrix-vector kernels over one weight matrix (no w_ids): each block first asks for its
    // rows in L2 with one bulk prefetch, before it waits for the kernel ahead (OpEnv::l2_prefetch).
    bool l2_prefetch = false;
    // Chunks per thread and row loaded together by the single-token int8 kernel (2, or 4:
    // OpEnv::mv_unroll; mat_vec_int8_kernel.cuh). Same results.
    int mv_unroll = 2;
};

// Picks the kernel by T; throws std::runtime_error for an unsupported type. Activations are
// used as they are.
void launch_mat(const MatArgs& a, StreamRef stream);
struct OpEnv;
class Scratch;
// The same after rounding the activations like the CPU kernels do for this weight type
// (act_round.cuh); the rounded copy lives in env.scratch.
void launch_mat(const MatArgs& a, const OpEnv& env);
// The rounding step of the above alone: `a` with x pointing at a rounded, contiguous copy in
// env.scratch (rows [Z][T][K], x_rows and x_div undone), or `a` itself when nothing needs
// doing. Lets several products share one rounded copy.
MatArgs with_rounded_activations(const MatArgs& a, const OpEnv& env);
// Whether with_rounded_activations makes a copy for a that other products may share (plain
// rows of one activation block), described by *key: the executor then lets the op writing
// those rows write the copy too (rms_norm) and stores it in OpEnv::act_cache.
bool shared_rounding(const MatArgs& a, const OpEnv& env, ActRoundKey* key);
// Scratch for a rounded copy of `blocks` activation blocks as key describes.
ActRoundCopy alloc_rounded_copy(const ActRoundKey& key, int64_t blocks, Scratch& scratch);
// Whether the matrix-vector kernel handles a's token count (routed-expert ids need it).
bool mat_is_vector(const MatArgs& a);
// The products of already rounded activations (with_rounded_activations), by the kernel that
// follows the reference's numerics for the call's size where a.xq is set.
void launch_rounded(const MatArgs& a, const OpEnv& env);
// The int8 matrix-vector kernel (mat_vec_int8.cu) for a.xq and a weight type with an integer
// view, any number of tokens (8 per block row); false (nothing launched) for other types.
bool launch_mat_vec_int8(const MatArgs& a, StreamRef stream);
// The int8 tensor-core kernel (mat_mma_int8.cu) for a.xq, more than 8 tokens, a weight type
// with an integer view, no routed-expert ids; false (nothing launched) otherwise. With
// `batch_form` (a call of kRefBatchTokens or more, not batch-invariant) kConv types are first
// re-encoded into `scratch` (null: no re-encoding, false) and kConvF16Scales types take
// fp16-rounded scales, as the reference's CPU kernels do (int8_codes.cuh).
bool launch_mat_mma_int8(const MatArgs& a, bool batch_form, Scratch* scratch, StreamRef stream);
bool int8_view_supported(uint32_t type);
// Whether calls of more than 8 tokens below the batch form take the matrix-vector kernel: the
// saturating types (the reference's small-batch numerics) and views without a direct
// tensor-core form (Q2_K).
bool int8_view_vec_batches(uint32_t type);
// Whether the int8 tensor-core kernel multiplies the type's codes directly (int8_codes.cuh,
// kDirectMma; Q2_K does not).
bool int8_view_direct_mma(uint32_t type);
// The reference's CPU kernels switch numerics at this many tokens per call.
constexpr int64_t kRefBatchTokens = 32;
// ... and the batch form of Q6_K (kConv32) at this many (int8_codes.cuh).
constexpr int64_t kRefConv32Tokens = 64;
// Calls whose token counts share a band take the same kernel in the same numerics
// (launch_rounded): grouped routed-expert products (MatArgs::grp) join the experts of a band.
inline int mat_form_band(int64_t T) {
    return T <= kMatVecMaxTokens ? 0 : T < kRefBatchTokens ? 1 : T < kRefConv32Tokens ? 2 : 3;
}
constexpr int kMatFormBands = 4;

}  // namespace ikllm::cuda
