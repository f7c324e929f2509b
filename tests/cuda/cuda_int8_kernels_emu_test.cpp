// Host run of the int8 CUDA kernels (mat_vec_int8_kernel.cuh: dp4a matrix-vector;
// mat_mma_int8_kernel.cuh: int8 mma.sync tiles) through a thread-per-lane emulation, so their
// indexing (block and warp tiles, shared-memory layout, fragments, epilogues, row and token
// edges) is checked where there is no GPU. Every CUDA thread of a block is a fiber;
// __syncthreads is a block barrier, __shfl_xor_sync and mma.sync exchange registers through
// per-warp slots between two warp barriers. The mma follows the PTX ISA's fragment layout of
// mma.m16n8k16 with .s8 operands (A: lane g*4+t holds row g (reg 0) and g+8 (reg 1), columns
// 4t..4t+3; B: rows 4t..4t+3 of column g; C: rows g and g+8, columns 2t, 2t+1).
// Products follow the kernel choice of launch_rounded (matmul.cu) and are compared with the
// CPU backend's scalar kernel, which reproduces the reference's numerics (saturating pair sums
// below 32 tokens per call, re-encoded or fp16-scaled batch forms from 32 on: int8_codes.cuh),
// and, for the views multiplied exactly, with the exact double product of the decoded weights
// and the activation codes x scales; output padding must stay untouched (NaN-poisoned outputs
// for rows and tokens the kernels must write). Exit code 1 on any mismatch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <memory>
#include <ucontext.h>
#include <vector>

#include "cuda/int8_codes.cuh"  // first: the CUDA headers (__host__, dim3, uint2 ...)
#include "cuda/act_round.cuh"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

namespace emu {

// Every CUDA thread of a block is a fiber on the calling thread: a barrier yields to a
// round-robin scheduler until all its threads have arrived. (One OS thread per lane spent most of
// the test's time in futex calls.) On x86-64 a fiber switch is a plain stack switch that saves
// the callee-saved registers; swapcontext (the portable fallback) also saves and restores the
// signal mask, two system calls per switch that took ~45 % of this test's time.
#if defined(__x86_64__) && !defined(IKLLM_EMU_UCONTEXT)
#define IKLLM_EMU_STACK_SWITCH 1
extern "C" void ikllm_emu_switch(void** save_sp, void* load_sp);
asm(".pushsection .text\n"
    ".globl ikllm_emu_switch\n"
    ".type ikllm_emu_switch, @function\n"
    "ikllm_emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size ikllm_emu_switch, .-ikllm_emu_switch\n"
    ".popsection\n");
struct Fiber {
    void* sp = nullptr;
    dim3 tid;
    bool done = false;
};
void* g_sched_sp = nullptr;
#else
struct Fiber {
    ucontext_t ctx;
    dim3 tid;
    bool done = false;
};
ucontext_t g_sched;
#endif
Fiber* g_current = nullptr;
dim3 tl_tid;

#ifdef IKLLM_EMU_STACK_SWITCH
inline void yield() { ikllm_emu_switch(&g_current->sp, g_sched_sp); }
#else
inline void yield() { swapcontext(&g_current->ctx, &g_sched); }
#endif

// A reusable barrier for n fibers.
class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void wait() {
        const uint64_t gen = gen_;
        if (++count_ == n_) {
            count_ = 0;
            ++gen_;
            return;
        }
        while (gen_ == gen) yield();
    }

private:
    int n_, count_ = 0;
    uint64_t gen_ = 0;
};

struct Block {
    dim3 idx, dim;
    Barrier block;
    std::vector<std::unique_ptr<Barrier>> warps;
    std::vector<uint32_t> slot;  // per lane exchange words: 4 per thread
    explicit Block(int threads) : block(threads), slot(4 * (size_t)threads) {
        for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Barrier>(32));
    }
};

Block* tl_block = nullptr;
inline void sync_block() { tl_block->block.wait(); }
inline int lane() { return (int)tl_tid.x % 32; }
inline uint32_t* warp_slots() { return tl_block->slot.data() + 4 * (size_t)(tl_tid.x / 32 * 32); }
inline void sync_warp() { tl_block->warps[tl_tid.x / 32]->wait(); }

inline float shfl_xor(float v, int o) {
    uint32_t* s = warp_slots();
    std::memcpy(&s[4 * lane()], &v, 4);
    sync_warp();
    float r;
    std::memcpy(&r, &s[4 * (lane() ^ o)], 4);
    sync_warp();
    return r;
}

inline int8_t byte_of(uint32_t w, int i) { return (int8_t)(uint8_t)(w >> 8 * i); }

inline void mma_s8_16816(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    uint32_t* s = warp_slots();
    const int l = lane();
    s[4 * l] = a0;
    s[4 * l + 1] = a1;
    s[4 * l + 2] = b0;
    sync_warp();
    auto A = [&](int row, int k) { return (int)byte_of(s[4 * ((row % 8) * 4 + k / 4) + (row >= 8)], k % 4); };
    auto B = [&](int k, int n) { return (int)byte_of(s[4 * (n * 4 + k / 4) + 2], k % 4); };
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 4; ++e) {
        const int row = g + 8 * (e / 2), col = 2 * t + e % 2;
        int acc = 0;
        for (int k = 0; k < 16; ++k) acc += A(row, k) * B(k, col);
        c[e] += acc;
    }
    sync_warp();
}

const std::function<void()>* g_kernel = nullptr;
#ifdef IKLLM_EMU_STACK_SWITCH
// A fiber's first switch "returns" into this (entered with rsp = 8 mod 16, as after a call); it
// never returns: the last switch goes back to the scheduler for good.
[[noreturn]] void fiber_entry() {
    (*g_kernel)();
    g_current->done = true;
    void* unused = nullptr;
    ikllm_emu_switch(&unused, g_sched_sp);
    __builtin_trap();
}
// A fresh stack for ikllm_emu_switch to load: six zero registers, then fiber_entry as the return
// address, above it a never-used return slot for fiber_entry's own frame.
void* fiber_stack(char* stack, size_t bytes) {
    void** sp = reinterpret_cast<void**>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~(uintptr_t)15);
    *--sp = nullptr;
    *--sp = reinterpret_cast<void*>(&fiber_entry);
    for (int i = 0; i < 6; ++i) *--sp = nullptr;
    return sp;
}
#else
void fiber_main() {
    (*g_kernel)();
    g_current->done = true;
}
#endif
// One block: every fiber from the start of the kernel to its end. (Kept out of launch(): locals
// that live across it would draw -Wclobbered: getcontext counts as returns-twice.)
[[gnu::noinline]] void run_block(Block& b, std::vector<Fiber>& fibers, char* stacks, size_t stack_bytes) {
    tl_block = &b;
    for (size_t t = 0; t < fibers.size(); ++t) {
        Fiber& f = fibers[t];
        f.tid = dim3((unsigned)t, 0, 0);
        f.done = false;
#ifdef IKLLM_EMU_STACK_SWITCH
        f.sp = fiber_stack(stacks + stack_bytes * t, stack_bytes);
#else
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks + stack_bytes * t;
        f.ctx.uc_stack.ss_size = stack_bytes;
        f.ctx.uc_link = &g_sched;
        makecontext(&f.ctx, fiber_main, 0);
#endif
    }
    for (size_t left = fibers.size(); left > 0;)
        for (Fiber& f : fibers) {
            if (f.done) continue;
            g_current = &f;
            tl_tid = f.tid;
#ifdef IKLLM_EMU_STACK_SWITCH
            ikllm_emu_switch(&g_sched_sp, f.sp);
#else
            swapcontext(&g_sched, &f.ctx);
#endif
            left -= f.done;
        }
}

// Runs kernel() for every thread of every block of the grid, one block at a time.
template <class F>
void launch(dim3 grid, int threads, F kernel) {
    constexpr size_t kStack = 256 * 1024;
    const std::function<void()> fn = kernel;
    g_kernel = &fn;
    // Fiber stacks kept across launches (fresh ones cost a page fault per page every launch).
    static std::unique_ptr<char[]> stacks;
    static int stack_threads = 0;
    if (threads > stack_threads) {
        stacks.reset(new char[kStack * (size_t)threads]);
        stack_threads = threads;
    }
    std::vector<Fiber> fibers((size_t)threads);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                Block b(threads);
                b.idx = dim3(bx, by, bz);
                b.dim = dim3(threads, 1, 1);
                run_block(b, fibers, stacks.get(), kStack);
            }
}

}  // namespace emu

// The kernels' CUDA vocabulary, mapped onto the emulation.
#undef __global__
#undef __device__
#undef __shared__
#undef __launch_bounds__
#undef __align__
#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define threadIdx (::emu::tl_tid)
#define blockIdx (::emu::tl_block->idx)
#define __syncthreads() ::emu::sync_block()
#define __shfl_xor_sync(mask, v, o) ::emu::shfl_xor((v), (o))
#define __fadd_rn(a, b) ((a) + (b))  // one IEEE float add, as on the device
#define IKLLM_MMA_EMULATION(c, a0, a1, b0) ::emu::mma_s8_16816((c), (a0), (a1), (b0))
namespace ikllm::cuda {
using std::min;
}
#include "cuda/mat_mma_int8_kernel.cuh"
#include "cuda/mat_vec_int8_kernel.cuh"

using namespace ikllm;
using namespace ikllm::cuda;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Case {
    int64_t K, N, T;
    bool invariant = false;  // a batch-invariant session: never the batch form
};

// Activations rounded like act_round_kernel: codes [T][K] and one scale per 32 values.
void round_activations(int mode, const std::vector<float>& x, int64_t T, int64_t K, std::vector<int8_t>& q,
                       std::vector<float>& d32) {
    const int64_t B = act_round_block(mode);
    q.assign((size_t)(T * K), 0);
    d32.assign((size_t)(T * K / 32), 0.f);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t b0 = 0; b0 < K; b0 += B) {
            float amax = 0.f;
            for (int64_t i = b0; i < b0 + B; ++i) amax = std::max(amax, std::fabs(x[t * K + i]));
            float d, id;
            act_scale(mode, amax, &d, &id);
            for (int64_t i = b0; i < b0 + B; ++i) q[t * K + i] = (int8_t)(int)act_code(x[t * K + i], id);
            for (int64_t i = b0; i < b0 + B; i += 32) d32[(t * K + i) / 32] = d;
        }
}

// Every sub-block scale of a row's first block set to 1 (and, for the IQ4 types, small levels),
// so that the block's integer weights stay below 127: the batch forms' branch that keeps them as they are (re-encoding with a
// factor above 1 would change them).
void small_scales(uint32_t type, uint8_t* b) {
    switch (type) {
        case quant::T_IQ4_K:  // scales_h 2-bit fields 2, scales_l nibbles 1: (1 | 2 << 4) - 32
            std::memset(b + 4, 0xAA, 4);
            std::memset(b + 8, 0x11, 8);
            for (int i = 0; i < 128; ++i) b[16 + i] = (uint8_t)(0x88 + 0x11 * (i % 3));  // levels 1, 13, 25
            break;
        case quant::T_IQ4_XS:
            std::memset(b + 2, 0xAA, 2);
            std::memset(b + 4, 0x11, 4);
            for (int i = 0; i < 128; ++i) b[8 + i] = (uint8_t)(0x88 + 0x11 * (i % 3));
            break;
        case quant::T_Q6_K:
            std::memset(b + 192, 1, 16);
            break;
        case quant::T_IQ2_K:  // scale nibbles 9: 9 - 8
            std::memset(b + 4, 0x99, 8);
            break;
        case quant::T_IQ3_K:  // signs 0, magnitude nibbles 0: 2 * 0 + 1
            std::memset(b + 4, 0, 10);
            break;
        case quant::T_IQ5_K:  // as IQ4_K (levels <= 126 need no change)
            std::memset(b + 4, 0xAA, 4);
            std::memset(b + 8, 0x11, 8);
            break;
        case quant::T_IQ6_K:  // int8 scales 1, high level bits 2: levels -2..44
            std::memset(b + 4, 1, 16);
            std::memset(b + 148, 0xAA, 64);
            break;
        default:
            break;
    }
}

// `rows` rows of K gaussian weights quantized by the CPU registry, and their decoded values.
template <class D>
void random_weights(const quant::TypeTraits& tt, int64_t rows, int64_t K, std::mt19937& rng, std::vector<uint8_t>& w,
                    std::vector<float>& deq) {
    const size_t rb = quant::row_bytes(tt, K);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> wf((size_t)K);
    w.assign(rb * (size_t)rows, 0);
    deq.assign((size_t)(rows * K), 0.f);
    for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : wf) v = nd(rng);
        if (r % 7 == 3) std::fill(wf.begin(), wf.begin() + 256, 0.f);  // an all-zero block
        tt.quantize(wf.data(), w.data() + r * rb, K, nullptr);
        if (r % 7 == 5) small_scales(tt.id, w.data() + r * rb);
        for (int64_t e = 0; e < K; e += 8)
            D::decode8(w.data() + r * rb, e / D::kBlockElems, (int)((e % D::kBlockElems) / 8), &deq[r * K + e]);
    }
}

template <class V>
struct IsF16Scaled : std::false_type {};
template <class C>
struct IsF16Scaled<F16ScaleCodes<C>> : std::true_type {};

// Runs the kernels of mma8::run_batch_forms through the emulation (as mat_mma_int8.cu's
// Launcher does on a stream) and names the form in `kernel`.
struct EmuLauncher {
    std::string& kernel;
    std::vector<std::vector<uint8_t>> buffers;
    template <class V>
    void mma(const MatArgs& a) {
        if (V::kSymAccum) kernel += "-sym";
        if (IsF16Scaled<V>::value) kernel += "-f16sc";
        const dim3 grid((unsigned)((a.N + mma8::kBM - 1) / mma8::kBM), (unsigned)((a.T + mma8::kBN - 1) / mma8::kBN),
                        (unsigned)a.Z);
        emu::launch(grid, mma8::kThreads, [&] { mma8::mat_mma_int8_kernel<V>(a); });
    }
    template <class C, bool Conv32>
    bool encode(const MatArgs& a, MatArgs& b) {
        using V = std::conditional_t<Conv32, ConvQ8x32Codes, ConvQ8Codes>;
        kernel = Conv32 ? "conv32+mma" : "conv+mma";
        const int64_t out_row = a.K / V::D::kBlockElems * V::D::kBlockBytes;
        buffers.emplace_back((size_t)(a.Z * a.N * out_row), (uint8_t)0xA5);
        uint8_t* out = buffers.back().data();
        const int64_t threads = Conv32 ? a.N * (a.K / 8) : a.N * (a.K / 256) * 32;
        const dim3 grid((unsigned)((threads + mma8::kThreads - 1) / mma8::kThreads), 1, (unsigned)a.Z);
        emu::launch(grid, mma8::kThreads, [&] {
            if constexpr (Conv32) mma8::conv32_encode_kernel<C>(a, out, out_row);
            else mma8::conv_encode_kernel<C>(a, out, out_row);
        });
        b = a;
        b.w = out;
        b.w_row = (size_t)out_row;
        b.w_z = (size_t)(a.N * out_row);
        return true;
    }
};

template <class C>
bool run_case(const quant::TypeTraits& tt, const Case& cs, std::mt19937& rng) {
    using D = typename C::D;
    const int64_t K = cs.K, N = cs.N, T = cs.T;
    const size_t rb = quant::row_bytes(tt, K);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<uint8_t> w;
    std::vector<float> deq;
    random_weights<D>(tt, N, K, rng, w, deq);
    std::vector<float> x((size_t)(T * K));
    for (auto& v : x) v = nd(rng);
    std::vector<int8_t> xq;
    std::vector<float> xd;
    round_activations(act_round_for(tt.id), x, T, K, xq, xd);

    const int64_t ys = N + 3;  // padding between token rows must stay NaN
    std::vector<float> y((size_t)(ys * T), kNaN);
    MatArgs a;
    a.type = tt.id;
    a.w = w.data();
    a.w_row = rb;
    a.K = K;
    a.N = N;
    a.T = T;
    a.y = y.data();
    a.y_t = sizeof(float) * ys;
    a.xq = xq.data();
    a.xq_d = xd.data();
    // The matrix-vector kernels' residual epilogue (y_res = y + res): the executor's fused
    // product + add. Set for every case; the mma kernel never reads it.
    std::vector<float> res((size_t)(T * N)), y_res((size_t)(ys * T), kNaN);
    for (auto& v : res) v = nd(rng);
    a.res = res.data();
    a.res_t = sizeof(float) * N;
    a.y_res = y_res.data();
    a.y_res_t = sizeof(float) * ys;
    // The kernel launch_rounded picks (matmul.cu).
    const bool batch_form = T >= kRefBatchTokens && !cs.invariant;
    std::string kernel;
    if (T > mv::kVecMaxTokens && !(C::kSat && !batch_form)) {
        kernel = "mma";
        EmuLauncher x{kernel, {}};
        if (!mma8::run_batch_forms<C>(a, batch_form, x)) {
            std::printf("%s: no batch form ran\n", tt.name);
            return false;
        }
    } else if (T == 1) {
        kernel = "vec T=1";
        emu::launch(dim3((unsigned)((N + 3) / 4), 1, 1), 32 * mv::kVecWarps, [&] { mv::mat_vec_int8_kernel<C, 1, 4>(a); });
    } else {
        kernel = "vec";
        emu::launch(dim3((unsigned)((N + 1) / 2), (unsigned)((T + 7) / 8), 1), 32 * mv::kVecWarps,
                    [&] { mv::mat_vec_int8_kernel<C, mv::kVecMaxTokens, 2>(a); });
    }
    // The CPU backend's scalar kernel on the same weights and activations, called as op_matmul
    // does: the whole call in the batch form, blocks of <= 15 tokens in a batch-invariant one.
    const cpu::MatmulKernel* k = cpu::find_matmul_exact(tt.id, cpu::Isa::scalar);
    std::vector<float> yc((size_t)(N * T), kNaN);
    if (k) {
        const size_t arb = k->act->row_bytes(K);
        std::vector<uint8_t> act(arb * (size_t)T);
        for (int64_t t = 0; t < T; ++t) k->act->encode_row(x.data() + t * K, act.data() + t * arb, K);
        const int64_t tb = cs.invariant ? 15 : T;
        for (int64_t t0 = 0; t0 < T; t0 += tb)
            k->run(w.data(), rb, K, 0, N, act.data() + t0 * arb, arb, std::min(tb, T - t0), yc.data() + t0 * N, N);
    }
    double err = 0, norm = 0, cerr = 0, cnorm = 0;
    long bad_pad = 0, nan = 0, bad_res = 0;
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t n = 0; n < N; ++n) {
            double ex = 0;
            for (int64_t kk = 0; kk < K; ++kk) ex += (double)deq[n * K + kk] * xq[t * K + kk] * xd[(t * K + kk) / 32];
            const float got = y[t * ys + n];
            if (std::isnan(got)) ++nan;
            err += (got - ex) * (got - ex);
            norm += ex * ex;
            const double c = yc[t * N + n];
            cerr += (got - c) * (got - c);
            cnorm += c * c;
        }
        for (int64_t n = N; n < ys; ++n) bad_pad += !std::isnan(y[t * ys + n]) + !std::isnan(y_res[t * ys + n]);
        // vec: y_res is exactly y + res; mma: never written
        for (int64_t n = 0; n < N; ++n) {
            const float want = kernel.find("vec") != 0 ? kNaN : y[t * ys + n] + res[t * N + n];
            const float got = y_res[t * ys + n];
            bad_res += std::isnan(want) ? !std::isnan(got) : std::memcmp(&want, &got, 4) != 0;
        }
    }
    const double rel = std::sqrt(err / (norm > 0 ? norm : 1)), crel = std::sqrt(cerr / (cnorm > 0 ? cnorm : 1));
    // Against the CPU always (its numerics are the reference's); against the exact product
    // where the view is multiplied exactly in this form.
    // (Not the KT types whose reference matmul scales by a factor: matmul_scale.)
    const bool exact_form = C::matmul_scale(1.0f) == 1.0f && (kernel.find("vec") == 0 ? !C::kSat : kernel == "mma");
    const bool ok = k && crel < 1e-6 && (!exact_form || rel < 1e-6) && nan == 0 && bad_pad == 0 && bad_res == 0;
    std::printf("%-8s %-9s K=%lld N=%lld T=%lld%s: cpu %.2e, exact %.2e%s, unwritten %ld, padding written %ld, "
                "residual wrong %ld -> %s\n",
                tt.name, kernel.c_str(), (long long)K, (long long)N, (long long)T, cs.invariant ? " invariant" : "", crel,
                rel, exact_form ? "" : " (not judged)", nan, bad_pad, bad_res, ok ? "ok" : "FAIL");
    return ok;
}

// Routed experts through the matrix-vector kernel: pair z = (token z / k, choice z % k) reads
// activation row z / k (x_div) and expert ids[z] (w_ids); id -1 leaves its output alone.
template <class C>
bool run_experts(const quant::TypeTraits& tt, std::mt19937& rng) {
    using D = typename C::D;
    constexpr int64_t K = 256, N = 6, E = 3, k = 2, T = 3;
    const int32_t ids[T * k] = {2, 0, -1, 1, 1, 2};
    const size_t rb = quant::row_bytes(tt, K);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<uint8_t> w;
    std::vector<float> deq;
    random_weights<D>(tt, E * N, K, rng, w, deq);
    std::vector<float> x((size_t)(T * K));
    for (auto& v : x) v = nd(rng);
    std::vector<int8_t> xq;
    std::vector<float> xd;
    round_activations(act_round_for(tt.id), x, T, K, xq, xd);  // rows [T][K]: block z / k, one token each
    std::vector<float> y((size_t)(T * k * N), kNaN);
    MatArgs a;
    a.type = tt.id;
    a.w = w.data();
    a.w_row = rb;
    a.w_z = rb * N;
    a.K = K;
    a.N = N;
    a.T = 1;
    a.Z = T * k;
    a.x_div = k;
    a.w_ids = ids;
    a.ids_k = k;
    a.ids_t = k;
    a.w_count = E;
    a.y = y.data();
    a.y_z = sizeof(float) * N;
    a.xq = xq.data();
    a.xq_d = xd.data();
    emu::launch(dim3((unsigned)((N + 3) / 4), 1, (unsigned)a.Z), 32 * mv::kVecWarps, [&] { mv::mat_vec_int8_kernel<C, 1, 4>(a); });
    // References: the CPU's scalar kernel per pair (one token: the small-batch form) and, for
    // the views multiplied exactly, the exact product.
    const cpu::MatmulKernel* ck = cpu::find_matmul_exact(tt.id, cpu::Isa::scalar);
    if (!ck) return false;
    const size_t arb = ck->act->row_bytes(K);
    std::vector<uint8_t> act(arb * (size_t)T);
    for (int64_t t = 0; t < T; ++t) ck->act->encode_row(x.data() + t * K, act.data() + t * arb, K);
    double err = 0, norm = 0, cerr = 0, cnorm = 0;
    long wrong_skip = 0;
    std::vector<float> yc((size_t)N);
    for (int64_t z = 0; z < T * k; ++z) {
        if (ids[z] >= 0) ck->run(w.data() + (size_t)ids[z] * N * rb, rb, K, 0, N, act.data() + (z / k) * arb, arb, 1, yc.data(), N);
        for (int64_t n = 0; n < N; ++n) {
            const float got = y[z * N + n];
            if (ids[z] < 0) {
                wrong_skip += !std::isnan(got);
                continue;
            }
            double ex = 0;
            const int64_t t = z / k;
            for (int64_t i = 0; i < K; ++i) ex += (double)deq[(ids[z] * N + n) * K + i] * xq[t * K + i] * xd[(t * K + i) / 32];
            err += (got - ex) * (got - ex);
            norm += ex * ex;
            cerr += (got - yc[n]) * (got - yc[n]);
            cnorm += (double)yc[n] * yc[n];
        }
    }
    const double rel = std::sqrt(err / (norm > 0 ? norm : 1)), crel = std::sqrt(cerr / (cnorm > 0 ? cnorm : 1));
    const bool exact_form = !C::kSat && C::matmul_scale(1.0f) == 1.0f;
    const bool ok = crel < 1e-6 && (!exact_form || rel < 1e-6) && wrong_skip == 0;
    std::printf("%-8s vec experts (ids, x_div %lld): cpu %.2e, exact %.2e%s, skipped pair written %ld -> %s\n", tt.name,
                (long long)k, crel, rel, exact_form ? "" : " (not judged)", wrong_skip, ok ? "ok" : "FAIL");
    return ok;
}

// Gate and up of a generation step in one launch (ops_weights.cu run_mul_mat_swiglu): Z = 2
// matrices w_z apart, both reading activation block 0 (x_div 2, no ids); z = 1 writes y_z on.
// Each output must equal the CPU's scalar kernel on its own matrix.
template <class C>
bool run_gate_up(const quant::TypeTraits& tt, std::mt19937& rng) {
    using D = typename C::D;
    constexpr int64_t K = 256, N = 6;
    bool ok = true;
    for (int64_t T : {1, 3}) {
        const size_t rb = quant::row_bytes(tt, K);
        std::normal_distribution<float> nd(0.f, 1.f);
        std::vector<uint8_t> w;
        std::vector<float> deq;
        random_weights<D>(tt, 2 * N, K, rng, w, deq);  // gate rows, then up rows
        std::vector<float> x((size_t)(T * K));
        for (auto& v : x) v = nd(rng);
        std::vector<int8_t> xq;
        std::vector<float> xd;
        round_activations(act_round_for(tt.id), x, T, K, xq, xd);
        std::vector<float> y((size_t)(2 * N * T), kNaN);
        MatArgs a;
        a.type = tt.id;
        a.w = w.data();
        a.w_row = rb;
        a.w_z = rb * N;
        a.K = K;
        a.N = N;
        a.T = T;
        a.Z = 2;
        a.x_div = 2;
        a.y = y.data();
        a.y_t = sizeof(float) * N;
        a.y_z = sizeof(float) * N * T;
        a.xq = xq.data();
        a.xq_d = xd.data();
        if (T == 1)
            emu::launch(dim3((unsigned)((N + 3) / 4), 1, 2), 32 * mv::kVecWarps, [&] { mv::mat_vec_int8_kernel<C, 1, 4>(a); });
        else
            emu::launch(dim3((unsigned)((N + 1) / 2), 1, 2), 32 * mv::kVecWarps,
                        [&] { mv::mat_vec_int8_kernel<C, mv::kVecMaxTokens, 2>(a); });
        const cpu::MatmulKernel* ck = cpu::find_matmul_exact(tt.id, cpu::Isa::scalar);
        if (!ck) return false;
        const size_t arb = ck->act->row_bytes(K);
        std::vector<uint8_t> act(arb * (size_t)T);
        for (int64_t t = 0; t < T; ++t) ck->act->encode_row(x.data() + t * K, act.data() + t * arb, K);
        double cerr = 0, cnorm = 0;
        long nan = 0;
        std::vector<float> yc((size_t)(N * T));
        for (int z = 0; z < 2; ++z) {
            ck->run(w.data() + (size_t)z * N * rb, rb, K, 0, N, act.data(), arb, T, yc.data(), N);
            for (int64_t i = 0; i < N * T; ++i) {
                const float got = y[(size_t)(z * N * T + i)];
                nan += std::isnan(got);
                cerr += (got - yc[i]) * (got - yc[i]);
                cnorm += (double)yc[i] * yc[i];
            }
        }
        const double crel = std::sqrt(cerr / (cnorm > 0 ? cnorm : 1));
        const bool good = crel < 1e-6 && nan == 0;
        std::printf("%-8s vec gate+up (Z 2, x_div 2) T=%lld: cpu %.2e, unwritten %ld -> %s\n", tt.name, (long long)T, crel,
                    nan, good ? "ok" : "FAIL");
        ok &= good;
    }
    return ok;
}

}  // namespace

int main() {
    std::mt19937 rng(777);
    const Case cases[] = {{512, 13, 1}, {512, 9, 5}, {512, 16, 20}, {512, 140, 70}, {512, 8, 40, true}};
    bool ok = true;
    int tested = 0;
    size_t count = 0;
    const quant::TypeTraits* all = quant::all_types(&count);
    for (size_t i = 0; i < count; ++i)
        tested += dispatch_int8_type(all[i].id, [&](auto c) {
            for (const Case& cs : cases) ok &= run_case<decltype(c)>(all[i], cs, rng);
            ok &= run_experts<decltype(c)>(all[i], rng);
            ok &= run_gate_up<decltype(c)>(all[i], rng);
        });
    std::printf("%d types -> %s\n", tested, ok && tested == (int)std::size(kInt8ViewTypes) ? "ok" : "FAIL");
    return ok && tested == (int)std::size(kInt8ViewTypes) ? 0 : 1;
}
