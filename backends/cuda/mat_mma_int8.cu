// Prompt batches in integers on the tensor cores: weights of a type with an integer view
// (int8_codes.cuh) times the activations' int8 codes (MatArgs::xq), int8 mma.sync
// (m16n8k16, s32 accumulators), scaled to float once per 32 values of K (16 for kScale16 views). The default for
// types with a view (OpEnv::int8_mma; IKLLM_CUDA_INT8_MMA=0 turns it off).
//
// A block of 8 warps owns 128 weight rows x 64 tokens; K goes in steps of 32. Per step every
// thread turns 2 chunks (8 weights each) into int8 codes in shared memory (with their row's
// scale per 16 and bias per 32), and the activation codes of the step are copied in 16-byte
// pieces; the next step's weights are read into registers while the tensor cores work. Each
// warp computes 32 rows x 32 tokens: 2 x 4 tiles of 16 x 8, whose fragments are plain 32-bit
// shared-memory loads (row stride 48 bytes: the 32 lanes' loads hit 32 different banks).
#include <type_traits>

#include "cuda_ops.cuh"
#include "mat_mma_int8_kernel.cuh"

namespace ikllm::cuda {

namespace {

bool device_has_int8_mma() {
    int dev = 0, major = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 8;
}

// Runs the kernels of run_batch_forms on a stream; re-encoded weights go to scratch.
struct Launcher {
    Scratch* scratch;
    cudaStream_t stream;
    template <class V>
    void mma(const MatArgs& a) {
        using namespace mma8;
        const dim3 grid((unsigned)((a.N + kBM - 1) / kBM), (unsigned)((a.T + kBN - 1) / kBN), (unsigned)a.Z);
        mat_mma_int8_kernel<V><<<grid, kThreads, 0, stream>>>(a);
        IKLLM_CUDA_LAUNCHED("mat_mma_int8_kernel");
    }
    template <class C, bool Conv32>
    bool encode(const MatArgs& a, MatArgs& b) {
        if (!scratch) return false;
        using V = std::conditional_t<Conv32, ConvQ8x32Codes, ConvQ8Codes>;
        const int64_t out_row = a.K / V::D::kBlockElems * V::D::kBlockBytes;
        uint8_t* out = static_cast<uint8_t*>(scratch->alloc((size_t)(a.Z * a.N * out_row)));
        // conv: a warp per 256 weights; conv32: a thread per 8
        const int64_t threads = Conv32 ? a.N * (a.K / 8) : a.N * (a.K / 256) * 32;
        const dim3 grid((unsigned)((threads + mma8::kThreads - 1) / mma8::kThreads), 1, (unsigned)a.Z);
        if constexpr (Conv32) mma8::conv32_encode_kernel<C><<<grid, mma8::kThreads, 0, stream>>>(a, out, out_row);
        else mma8::conv_encode_kernel<C><<<grid, mma8::kThreads, 0, stream>>>(a, out, out_row);
        IKLLM_CUDA_LAUNCHED("conv_encode_kernel");
        b = a;
        b.w = out;
        b.w_row = (size_t)out_row;
        b.w_z = (size_t)(a.N * out_row);
        return true;
    }
};

}  // namespace

bool launch_mat_mma_int8(const MatArgs& a, bool batch_form, Scratch* scratch, cudaStream_t stream) {
    if (!a.xq || a.w_ids || a.x_div != 1 || a.K % mma8::kBK != 0) return false;
    if (!device_has_int8_mma()) return false;
    Launcher x{scratch, stream};
    bool ran = false;
    const bool typed = dispatch_int8_type(a.type, [&](auto c) { ran = mma8::run_batch_forms<decltype(c)>(a, batch_form, x); });
    // Not ran: the decode-to-fp16 kernel instead (closer to the reference than a direct form).
    return typed && ran;
}

}  // namespace ikllm::cuda
