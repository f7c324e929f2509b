// bf16 attention for prompt batches, on the AMX tile unit (amx_attention) or, without it, on
// AVX512-BF16 vector products (avx512_bf16_attention; the same layouts and softmax,
// attn_bf16_common_avx512.h): Q K^T and P V as bf16 x bf16 -> fp32 products, the softmax in
// fp32 (online across chunks of keys, exact max within a chunk). The keys and values of one KV
// head are packed once per op into the tile unit's B-tile layouts, then every
// call attends up to kAmxAttnRows query rows (tokens x query heads sharing that KV head) against
// a prefix of them, so the packing is paid once per KV head and not once per query block.
//
// Numerics: Q, K, P and V are rounded to bf16 (as the AMX matrix products round activations),
// so results differ from the fp32 flash-attention kernels by ~1e-3 relative; used only for
// prompt batches of kAmxMinTokens or more and never in batch-invariant sessions (op_attention).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ikllm::cpu {

constexpr int kAmxAttnRows = 32;     // query rows per attend() call
constexpr int64_t kAmxKeyGroup = 32; // keys are packed (and padded) in groups of this many

struct AmxAttention {
    // bf16 elements of the packed keys / values of n_pad keys (n_pad a multiple of kAmxKeyGroup);
    // the keys of group g (32 keys) start at g * key_elems(32, d_k), likewise for values.
    size_t (*key_elems)(int64_t n_pad, int64_t d_k);
    size_t (*value_elems)(int64_t n_pad, int64_t d_v);
    // One group of 32 keys / values from f32 rows (row j at rows + j * d; rows n..31 taken as 0).
    void (*pack_keys)(const float* rows, int n, int64_t d_k, uint16_t* group);
    void (*pack_values)(const float* rows, int n, int64_t d_v, uint16_t* group);
    // out[r][0..d_v) = softmax_j(scale * q[r] . k_j) v_j over the keys j < n_vis[r] (0 when
    // n_vis[r] == 0), for r < nr <= kAmxAttnRows. d_k and d_v multiples of 32.
    void (*attend)(const float* const* q, const int64_t* n_vis, int nr, float scale, const uint16_t* keys,
                   const uint16_t* values, int64_t d_k, int64_t d_v, float* const* out);
};

// The tile-unit attention when it is compiled in and amx_usable(), else nullptr.
const AmxAttention* amx_attention();
// The vector-product version when it is compiled in and best_isa() is AVX-512 (which includes
// AVX512-BF16), else nullptr.
const AmxAttention* avx512_bf16_attention();

}  // namespace ikllm::cpu
