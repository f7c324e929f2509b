// Generation products in integers: weights of a type with an integer view (int8_codes.cuh)
// times the activations' int8 codes (MatArgs::xq, written by with_rounded_activations), four
// products per dp4a instruction. Same geometry as the decode-to-float kernel (matmul.cu): a
// block of kVecWarps warps owns R rows and up to NT tokens, the warps split the row into
// 8-value chunks, and the partial sums meet in shared memory (mv::reduce_store). Per chunk
// and row: the codes and scale (and bias), then per token two dp4a (plus two for the code sum
// when the type has a bias) and two float multiply-adds, where decoding to float costs ~48
// float operations: at HBM rates the float kernel was instruction-bound.
#include "cuda_ops.cuh"
#include "mat_vec_int8_kernel.cuh"

namespace ikllm::cuda {

namespace {

using mv::kVecMaxTokens;
using mv::kVecWarps;

template <class C, bool Sat>
void launch_int8_form(const MatArgs& a, StreamRef s) {
    const dim3 block(32 * kVecWarps);
    if (a.T == 1 && !a.grp) {  // (grouped experts: the token-tile kernel, same numerics)
        constexpr int R = 4;
        const dim3 grid((unsigned)((a.N + R - 1) / R), 1, (unsigned)a.Z);
        if (a.mv_unroll == 4) IKLLM_LAUNCH(grid, block, 0, s, mv::mat_vec_int8_kernel<C, 1, R, Sat, 4>)(a);
        else IKLLM_LAUNCH(grid, block, 0, s, mv::mat_vec_int8_kernel<C, 1, R, Sat>)(a);
    } else {
        constexpr int R = 2;
        const dim3 grid((unsigned)((a.N + R - 1) / R), (unsigned)((a.T + kVecMaxTokens - 1) / kVecMaxTokens),
                        (unsigned)a.Z);
        IKLLM_LAUNCH(grid, block, 0, s, mv::mat_vec_int8_kernel<C, kVecMaxTokens, R, Sat>)(a);
    }
    IKLLM_CUDA_LAUNCHED("mat_vec_int8_kernel");
}

template <class C>
void launch_typed_int8(const MatArgs& a, StreamRef s) {
    if constexpr (C::kSat)
        if (a.exact) return launch_int8_form<C, false>(a, s);
    launch_int8_form<C, C::kSat>(a, s);
}

}  // namespace

bool int8_view_supported(uint32_t type) {
    return dispatch_int8_type(type, [](auto) {});
}

bool int8_view_vec_batches(uint32_t type) {
    bool vec = false;
    dispatch_int8_type(type, [&](auto c) { vec = decltype(c)::kSat || !decltype(c)::kDirectMma; });
    return vec;
}

bool int8_view_direct_mma(uint32_t type) {
    bool direct = false;
    dispatch_int8_type(type, [&](auto c) { direct = decltype(c)::kDirectMma; });
    return direct;
}

bool launch_mat_vec_int8(const MatArgs& a, StreamRef stream) {
    if (!a.xq || a.K % 32 != 0) return false;
    return dispatch_int8_type(a.type, [&](auto c) { launch_typed_int8<decltype(c)>(a, stream); });
}

}  // namespace ikllm::cuda
