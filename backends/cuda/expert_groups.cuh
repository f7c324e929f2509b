// Grouped routed-expert products (MatArgs::grp): one launch multiplies many experts, each with
// its own rows (prompt batches of a MoE layer, grouped by expert on the host: ops_weights.cu).
// Every product kernel starts with enter_group, after which it sees the plain product of its
// group's expert and rows as batch entry 0, so the kernels' bodies do not change.
#pragma once
#include "matmul_kernels.cuh"

namespace ikllm::cuda {

// For the block of batch entry z whose tokens start at t0: rewrites `a` (and z, now 0) to the
// group's own product. False when the group has no rows at t0 or beyond (the grid covers the
// largest group): the whole block returns, before any barrier.
__device__ inline bool enter_group(MatArgs& a, int64_t& z, int64_t t0) {
    if (!a.grp) return true;
    const int32_t* g = a.grp + 3 * z;
    const int64_t first = g[1];
    a.T = g[2];
    if (t0 >= a.T) return false;
    a.w += (a.grp_w_seq ? z : (int64_t)g[0]) * (int64_t)a.w_z;
    if (a.x_rows) a.x_rows += first;
    else a.x = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.x) + first * (int64_t)a.x_t);
    if (a.xq) {
        a.xq += first * a.K;
        a.xq_d += first * (a.K / 32);
    }
    a.y = reinterpret_cast<float*>(reinterpret_cast<char*>(a.y) + first * (int64_t)a.y_t);
    a.Z = 1;
    z = 0;
    return true;
}

// The source matrix of batch entry z for a kernel that reads whole matrices (re-encoding).
__device__ inline const uint8_t* group_weights(const MatArgs& a, int64_t z) {
    return a.w + (a.grp ? (int64_t)a.grp[3 * z] : z) * (int64_t)a.w_z;
}

}  // namespace ikllm::cuda
