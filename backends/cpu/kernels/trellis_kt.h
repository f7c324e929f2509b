// Sub-block scales of the trellis kernels (trellis_{scalar,avx2,avx512}.cpp), as the reference's
// matrix multiplication forms them (measured against the reference logits of refdata/quant):
//  * the scale of a 32-weight sub-block is (d * s) * F with the row scale d, the sub-block's
//    integer scale s and a per-type factor F: 1.05 for IQ2_KT, 1.01 for IQ3_KT, 1 otherwise.
//    The reference's to_float (dequantization) has no such factor, so a matmul is not the dot
//    product of the dequantized row: IQ2_KT's factor alone moves logits by ~9e-2 rms;
//  * for batches of kKtConvMinTokens tokens or more the reference repacks the rows to an
//    8-bit format with fp16 scales (Q8_0_R8): the sub-block scale is rounded to fp16 (RNE), and
//    the sums follow that format's batch order (from kKtBatchMinTokens on here).
// Everything is internal to each including file (see interleaved_common.h).
#pragma once
#include <cstdint>
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

inline constexpr int64_t kKtConvMinTokens = 32;
// From this many tokens a call sums in the symmetric 32-weight batch order (SymBatchAccum,
// legacy_sym_accum.h), the order of the panels the SIMD kernels run such calls through (with
// exact scales below kKtConvMinTokens). Batch-invariant calls stay below (kInvariantTokens = 15).
inline constexpr int64_t kKtBatchMinTokens = 16;

template <uint32_t Type>
inline float kt_scale(float d, int s) {
    const float sl = d * (float)s;
    if constexpr (Type == quant::T_IQ2_KT) return sl * 1.05f;
    else if constexpr (Type == quant::T_IQ3_KT) return sl * 1.01f;
    else return sl;
}

}  // namespace
}  // namespace ikllm::cpu
