// Run-time repacking (model option "repack", the reference's -rtr): CPU-resident matrix
// weights are converted at load to their row-interleaved layout, which the CPU kernels multiply
// faster. Converted tensors move from the file mapping into owned buffers. Results are the
// same as with the plain layout (repacking is lossless, quant/repack.h).
#pragma once
#include "core/log.h"
#include "model/model.h"

namespace ikllm {

// Repacks the given matmul weights in place where a faster interleaved form exists; returns
// the number of tensors converted.
int repack_weights(Model& m, const std::vector<Tensor*>& matmul_weights, const Logger& log);

}  // namespace ikllm
