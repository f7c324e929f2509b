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

// Rows [r0, r1) of the matrix starting at `w` (row_bytes apart) times nt encoded activation
// rows; result row r (relative to r0) of token t goes to y[t * y_stride + (r - r0)].
// r0 must be a multiple of the type's interleave.
void run_rows(const MatmulKernel& k, const uint8_t* w, size_t row_bytes, int64_t ne0, int64_t r0, int64_t r1,
              const uint8_t* act, size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride);

// Granularity of row splits for a kernel: its row group, or 16 rows for kernels that
// re-encode weights in 16-row panels.
int64_t row_unit(const MatmulKernel& k, const quant::TypeTraits& tt);

// Rows per work chunk so that `rows` splits into about 4 chunks per thread, a multiple of `unit`.
int64_t chunk_rows(int64_t rows, int64_t unit, int n_threads);

// x rounded to f16 precision and back (reference numerics of F16 expert matmuls).
void round_to_f16(float* x, int64_t n);

}  // namespace ikllm::cpu
