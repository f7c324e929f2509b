// Operands of the attention kernels (ops_attention.cu: the float split kernel; attention_mma.cu:
// the tensor-core kernel for prompt batches), all device pointers; strides in bytes.
#pragma once
#include <cstdint>

#include "cuda_ops.cuh"

namespace ikllm::cuda {

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

// Prompt batches with an f16 cache on the tensor cores (attention_mma.cu); false when the shape,
// types or alignment do not fit it (the caller runs the float kernel).
bool launch_attention_mma(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env);

// Blocks of 16 query rows on the tensor cores (attention_mma16.cu), f16 cache: MLA (576 / 512
// latent rows) for any batch, standard heads of 64 / 128 / 256 otherwise; false when it does not apply.
bool launch_attention_mma16(const AttnArgs& a, int64_t T, int64_t n_head, const OpEnv& env);

// Merges the parts of a cell-split attention: partial[((t * n_head + h) * n_splits + s) * (d_v + 2)]
// holds split s's unnormalised output, then its running max and sum (ops_attention.cu).
void launch_attention_combine(const AttnArgs& a, int64_t T, int64_t n_head, int n_splits, const float* partial,
                              StreamRef stream);

}  // namespace ikllm::cuda
