// Prompt batches in integers on the tensor cores: weights of a type with an integer view
// (int8_codes.cuh) times the activations' int8 codes (MatArgs::xq), int8 mma.sync
// (m16n8k16, s32 accumulators), scaled to float once per 32 values of K (16 for kScale16 views). The default for
// types with a view (OpEnv::int8_mma; IKLLM_CUDA_INT8_MMA=0 turns it off).
//
// A block of 8 warps owns 128 weight rows x 64 tokens; K goes in steps of 32 x kSub (1 today: at
// 2 most instantiations need more than 128 registers, i.e. one block per SM instead of two).
// Per step every thread turns 2 x kSub chunks (8 weights each) into int8 codes in shared memory
// (with their row's scale per 16 and bias per 32), and the activation codes of the step are
// stored in 16-byte pieces; both the next step's weights and its activation codes and scales are
// read into registers while the tensor cores work (before 2026-11-30 the activations were read
// inside the step: a global-memory latency per 32 values of K). Each
// warp computes 32 rows x 32 tokens: 2 x 4 tiles of 16 x 8, whose fragments are plain 32-bit
// shared-memory loads (row stride 48 bytes: the 32 lanes' loads hit 32 different banks).
#include <algorithm>
#include <type_traits>

#include "cuda_ops.cuh"
#include "mat_mma_int8_kernel.cuh"

namespace ikllm::cuda {

static_assert(Int8Codes<quant::T_Q6_K>::kConv32MinTokens == kRefConv32Tokens, "mat_form_band's bands follow the batch forms");

namespace {

bool device_has_int8_mma() {
    int dev = 0, major = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 8;
}

// Re-encoded weights take up to 1.13 bytes per weight of scratch (Q6_K's batch form): a large
// matrix (an output head) goes in slices of rows that keep it below this.
constexpr int64_t kReencodeScratchBytes = 64ll << 20;

// Runs the kernels of run_batch_forms on a stream; re-encoded weights go to one scratch buffer,
// reused by the next slice (stream order: its re-encoding runs after this slice's products).
struct Launcher {
    Scratch* scratch;
    StreamRef stream;
    uint8_t* buf = nullptr;
    size_t cap = 0;
    template <class V>
    void mma(const MatArgs& a) {
        using namespace mma8;
        const dim3 grid((unsigned)((a.N + kBM - 1) / kBM), (unsigned)((a.T + kBN - 1) / kBN), (unsigned)a.Z);
        if (a.mma_k_sub == 2) IKLLM_LAUNCH(grid, kThreads, 0, stream, mat_mma_int8_kernel<V, 2>)(a);
        else IKLLM_LAUNCH(grid, kThreads, 0, stream, mat_mma_int8_kernel<V, 1>)(a);
        IKLLM_CUDA_LAUNCHED("mat_mma_int8_kernel");
    }
    template <class C, bool Conv32>
    bool encode(const MatArgs& a, MatArgs& b) {
        if (!scratch) return false;
        using V = std::conditional_t<Conv32, ConvQ8x32Codes, ConvQ8Codes>;
        const int64_t out_row = a.K / V::D::kBlockElems * V::D::kBlockBytes;
        const size_t need = (size_t)(a.Z * a.N * out_row);
        if (need > cap) {
            buf = static_cast<uint8_t*>(scratch->alloc(need));
            cap = need;
        }
        uint8_t* out = buf;
        // conv: a warp per 256 weights; conv32: a thread per 8
        const int64_t threads = Conv32 ? a.N * (a.K / 8) : a.N * (a.K / 256) * 32;
        const dim3 grid((unsigned)((threads + mma8::kThreads - 1) / mma8::kThreads), 1, (unsigned)a.Z);
        if constexpr (Conv32) IKLLM_LAUNCH(grid, mma8::kThreads, 0, stream, mma8::conv32_encode_kernel<C>)(a, out, out_row);
        else IKLLM_LAUNCH(grid, mma8::kThreads, 0, stream, mma8::conv_encode_kernel<C>)(a, out, out_row);
        IKLLM_CUDA_LAUNCHED("conv_encode_kernel");
        b = a;
        b.w = out;
        b.w_row = (size_t)out_row;
        b.w_z = (size_t)(a.N * out_row);
        b.grp_w_seq = a.grp != nullptr;  // group z's copy is matrix z
        return true;
    }
};

}  // namespace

bool launch_mat_mma_int8(const MatArgs& a, bool batch_form, Scratch* scratch, StreamRef stream) {
    if (!a.xq || a.w_ids || a.x_div != 1 || a.K % 32 != 0) return false;
    if (!device_has_int8_mma()) return false;
    Launcher x{scratch, stream};
    // Rows per slice: a multiple of the kernel's row tile (rows are independent). Grouped
    // experts go in slices of groups instead (each group's rows land where its table says).
    const int64_t per_row = a.K + a.K / 8;
    const int64_t rows = a.Z == 1 ? std::max<int64_t>(mma8::kBM, kReencodeScratchBytes / per_row / mma8::kBM * mma8::kBM) : a.N;
    const int64_t groups = a.grp && a.Z > 1 ? std::max<int64_t>(1, kReencodeScratchBytes / (per_row * a.N)) : a.Z;
    bool ran = true;
    const bool typed = dispatch_int8_type(a.type, [&](auto c) {
        for (int64_t z0 = 0; z0 < a.Z && ran; z0 += groups)
            for (int64_t n0 = 0; n0 < a.N && ran; n0 += rows) {
                MatArgs s = a;
                if (a.grp) {
                    s.grp = a.grp + 3 * z0;
                    s.Z = std::min(groups, a.Z - z0);
                }
                s.w = a.w + n0 * a.w_row;
                s.N = std::min(rows, a.N - n0);
                s.y = a.y + n0;
                s.bias = a.bias ? a.bias + n0 : nullptr;
                ran = mma8::run_batch_forms<decltype(c)>(s, batch_form, x);
            }
    });
    // Not ran: the decode-to-fp16 kernel instead (closer to the reference than a direct form;
    // only the first slice can fail, before anything was written: every slice takes the same path).
    return typed && ran;
}

}  // namespace ikllm::cuda
