// Run-time repacking (model option "repack", the reference's -rtr): CPU-resident matrix
// weights are converted at load to their row-interleaved layout, which the CPU kernels multiply
// faster. Converted tensors move from a file mapping into owned buffers; in a read copy of the
// file they are converted where they lie when the interleaved form takes the same room (Q4_0,
// Q8_0, the K-quants...), so repacking then costs no memory. Repacking is lossless
// (quant/repack.h), but the interleaved kernels may sum in another order or round activations
// otherwise (the reference's Q4_K_R4, Q8_0_R8 on AVX2): the automatic mode skips those.
#pragma once
#include "core/log.h"
#include "model/model.h"

namespace ikllm {

// Repacks the given matmul weights where the CPU backend says the interleaved form is faster
// (Backend::repack_helps; `force`: wherever an interleaved form exists and runs), reporting the
// types kept as stored (a warning when asked for, information under `in_place_only`, the
// automatic default, which also leaves alone what cannot be converted where it lies and what
// would multiply with other results, Backend::repack_changes_results); returns the number of
// tensors converted.
int repack_weights(Model& m, const std::vector<Tensor*>& matmul_weights, bool force, bool in_place_only, const Logger& log);
// DeepSeek MLA: the per-head products wk_b / wv_b that the loader derived from attn_kv_b (owned,
// 512 x 128 or 128 x 512 per head) are interleaved where they stay on the CPU, whatever the
// repack option: Q8_0 to Q8_0_R8 (rows this short spend as much on per-row sums as on the
// weights; the interleaved kernel multiplies them 1.5-2x faster for 1 to 64 tokens), types with
// a run-time layout of the CPU's own to it (wv_b of an IQ4_K file: IQ4_K_R8). Returns the tensors
// converted. `exact_only` (repack option auto or off): only where the interleaved kernels give
// the stored form's results (Backend::repack_changes_results).
int repack_mla_heads(Model& m, bool exact_only, const Logger& log);
// Whether repack_weights could convert a tensor of this type.
bool repack_applies(const backend::Backend& cpu, uint32_t type, bool force);
// Whether the interleaved form of a row of ne0 columns of this type takes more room (Q8_KV).
bool repack_grows(const backend::Backend& cpu, uint32_t type, int64_t ne0);

}  // namespace ikllm
