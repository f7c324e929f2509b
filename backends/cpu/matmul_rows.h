// Building blocks shared by the matrix-product ops (mul_mat, fused gate/up, experts, per-head
// products): encoding activations for a kernel and running it on a range of weight rows.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/matmul.h"
#include "quant/type_traits.h"
#include "ops.h"

namespace ikllm::cpu {

// The kernel for a weight tensor's type (throws unsupported, naming the tensor, if none).
const MatmulKernel& kernel_for(const Tensor& w);
// The same for a batch of nt tokens of `op` (prompt-batch kernels, kernels/matmul.h
// find_batch_matmul, unless the op is batch-invariant).
const MatmulKernel& kernel_for(const Tensor& w, const Op& op, int64_t nt);

// Rows [r0, r1) of the matrix starting at `w` (row_bytes apart) times nt encoded activation
// rows; result row r (relative to r0) of token t goes to y[t * y_stride + (r - r0)].
// r0 must be a multiple of the type's interleave.
// max_tokens > 0 splits the tokens into balanced calls of at most that many.
void run_rows(const MatmulKernel& k, const uint8_t* w, size_t row_bytes, int64_t ne0, int64_t r0, int64_t r1,
              const uint8_t* act, size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride, int64_t max_tokens = 0);

// Batch invariance: every kernel computes a token of a call of at most kInvariantTokens tokens
// exactly as it computes that token alone (the batch forms that re-encode weights or change
// the float order start at 16 tokens, kP32ExactMinTokens; test
// CpuMatmulThreads.BatchInvariantOpsMatchSingleTokens). So a batch-invariant op caps its kernel
// calls there.
constexpr int64_t kInvariantTokens = 15;
inline int64_t max_call_tokens(const Op& op) { return op.batch_invariant ? kInvariantTokens : 0; }
// Size of balanced blocks of at most max_tokens (0 = one block of nt).
inline int64_t balanced_block(int64_t nt, int64_t max_tokens) {
    if (max_tokens <= 0 || nt <= max_tokens) return nt < 1 ? 1 : nt;
    const int64_t n = (nt + max_tokens - 1) / max_tokens;
    return (nt + n - 1) / n;
}

// Granularity of row splits for a kernel: its row group, or 16 rows for kernels that
// re-encode weights in 16-row panels.
int64_t row_unit(const MatmulKernel& k, const quant::TypeTraits& tt);

// Rows per work chunk so that `rows` splits into about per_thread chunks per thread (default 4:
// balance), a multiple of `unit`.
int64_t chunk_rows(int64_t rows, int64_t unit, int n_threads, int64_t per_thread = 4);
// Chunks per thread suited to kernel k (1 for kernels that repack the batch per call, else 4).
int64_t chunks_per_thread(const MatmulKernel& k);

// The row chunks of one product: chunk c is rows [r0(c), r1(c)). Uniform chunks of chunk_rows()
// rows, except for a few tokens (token generation), where each chunk is the streaming cost of its
// weights alone: the chunks shrink in the order the pool hands them out (highest index first;
// each about a 2P-th of the rows left, none under kGuidedMinBytes of weights), so the two cores
// end within a short chunk of each other instead of one waiting out the other's last quarter-
// of-a-thread chunk. Rows are independent: results do not depend on the chunks.
class RowChunks {
public:
    static constexpr int kMax = 64;
    static constexpr int64_t kGuidedMaxTokens = 4;
    static constexpr int64_t kGuidedMinBytes = 32 << 10;
    RowChunks() = default;
    RowChunks(int64_t rows, int64_t unit, int n_threads, int64_t per_thread, int64_t tokens, size_t row_bytes);
    int64_t count() const { return n_; }
    int64_t r0(int64_t c) const { return start_[c]; }
    int64_t r1(int64_t c) const { return start_[c] + size_[c]; }
    int64_t max_rows() const { return max_; }

private:
    int64_t n_ = 0, max_ = 0;
    int64_t start_[kMax] = {}, size_[kMax] = {};
};

// x rounded to f16 precision and back (reference numerics of F16 expert matmuls).
void round_to_f16(float* x, int64_t n);

}  // namespace ikllm::cpu
