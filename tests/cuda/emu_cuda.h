// Host emulation of CUDA kernels for tests (cuda_*_emu_test.cpp): every CUDA thread of a block
// is a fiber on the calling thread, one block at a time; a barrier yields to a round-robin
// scheduler until all its threads have arrived. __syncthreads is a block barrier;
// __shfl_xor_sync and mma.sync exchange registers through per-warp slots between two warp
// barriers, the mma following the PTX ISA's fragment layout of mma.m16n8k16 with .s8 operands
// (A: lane g*4+t holds row g (reg 0) and g+8 (reg 1), columns 4t..4t+3; B: rows 4t..4t+3 of
// column g; C: rows g and g+8, columns 2t, 2t+1). Include after the CUDA headers (cuda_runtime.h
// for dim3 and the vector types) and before the kernel headers it maps the CUDA vocabulary for.
//
// Also the base of the emulated CUDA backend (emu_prelude.h, emu_runtime.cpp): everything here is
// safe to include in several translation units (inline, a weak switch routine), and launcher() is
// what IKLLM_LAUNCH (backends/cuda/launch.cuh) expands to there. One launch runs at a time in the
// process (launcher() holds launch_mutex(): the kernels' __shared__ variables are statics), so the
// fiber state is plain globals.
#pragma once
#ifndef IKLLM_CUDA_EMULATION
#define IKLLM_CUDA_EMULATION 1  // (the kernel headers' emulation hooks: warp_reduce.cuh, launch.cuh)
#endif
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <type_traits>
#include <ucontext.h>
#include <utility>
#include <vector>

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
    ".weak ikllm_emu_switch\n"  // (defined by every translation unit that includes this)
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
    unsigned exchanges = 0;  // warp exchanges (shuffles, mma) so far: which slot buffer is next
    bool done = false;
    bool entered = false;  // passed IKLLM_KERNEL_ENTRY (kernel_entry, below)
};
inline void* g_sched_sp = nullptr;
#else
struct Fiber {
    ucontext_t ctx;
    dim3 tid;
    unsigned exchanges = 0;
    bool done = false;
    bool entered = false;
};
inline ucontext_t g_sched;
#endif
inline Fiber* g_current = nullptr;
inline dim3 tl_tid;

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

// One 16-byte cp.async of a thread, not yet landed.
struct AsyncCopy {
    void* dst;
    const void* src;
};
// A thread's cp.async groups: committed ones (oldest first) and the open one.
struct AsyncGroups {
    std::deque<std::vector<AsyncCopy>> committed;
    std::vector<AsyncCopy> open;
};

struct Block {
    dim3 idx, dim;
    Barrier block;
    std::vector<AsyncGroups> async;  // per thread, made by the block's first cp.async
    std::vector<std::unique_ptr<Barrier>> warps;
    // Per lane exchange words, 4 per thread, in two buffers used in turn by a warp's exchanges:
    // one warp barrier per exchange then suffices (a lane writes a buffer again only after the
    // next exchange's barrier, which every lane reaches after reading this one).
    std::vector<uint32_t> slot;
    explicit Block(int threads) : block(threads), slot(8 * (size_t)threads) {
        for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Barrier>(32));
    }
};

inline Block* tl_block = nullptr;
inline void sync_block() { tl_block->block.wait(); }
inline int lane() { return (int)tl_tid.x % 32; }
// The slots of the calling lane's warp in the buffer of its next exchange.
inline uint32_t* warp_slots() {
    const size_t buffer = g_current->exchanges++ & 1u;
    return tl_block->slot.data() + 4 * (buffer * tl_block->slot.size() / 8 + tl_tid.x / 32 * 32);
}
inline void sync_warp() { tl_block->warps[tl_tid.x / 32]->wait(); }

template <class T>
inline T shfl_xor(T v, int o) {
    static_assert(sizeof(T) <= 16, "a lane's exchange slot holds 16 bytes");
    uint32_t* s = warp_slots();
    std::memcpy(&s[4 * lane()], &v, sizeof(T));
    sync_warp();
    T r;
    std::memcpy(&r, &s[4 * (lane() ^ o)], sizeof(T));
    return r;
}

// A butterfly all-reduce over the warp (backends/cuda/warp_reduce.cuh) in one exchange: every
// lane gets all 32 values and replays the butterfly, so its result has the device's bits.
template <class T, class Op>
inline T warp_butterfly(T v, Op op) {
    static_assert(sizeof(T) <= 16, "a lane's exchange slot holds 16 bytes");
    uint32_t* s = warp_slots();
    std::memcpy(&s[4 * lane()], &v, sizeof(T));
    sync_warp();
    T vals[32];
    for (int i = 0; i < 32; ++i) std::memcpy(&vals[i], &s[4 * i], sizeof(T));
    // Only this lane's dependencies: after the step with offset o it needs the o lanes that agree
    // with it above bit log2(o), each combined with its partner l ^ o (not among them: in place).
    const int l = lane();
    for (int o = 16; o > 0; o >>= 1)
        for (int m = 0; m < o; ++m) {
            const int i = (l & ~(o - 1)) | m;
            vals[i] = op(vals[i], vals[i ^ o]);
        }
    return vals[l];
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
}

inline AsyncGroups& async_groups() {
    if (tl_block->async.empty()) tl_block->async.resize(tl_block->dim.x);
    return tl_block->async[tl_tid.x];
}
// cp.async.cg 16 bytes: both addresses must be 16-byte aligned (the device faults otherwise), and the
// data is only guaranteed in shared memory after a cp.async.wait_group that covers its group -- so
// here it lands exactly then, never earlier (a read before the wait sees the old bytes).
inline void cp_async16(void* dst, const void* src) {
    if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 != 0) __builtin_trap();
    async_groups().open.push_back({dst, src});
}
inline void cp_async_commit() {
    AsyncGroups& g = async_groups();
    g.committed.push_back(std::move(g.open));
    g.open.clear();
}
// cp.async.wait_group n: all but the n newest committed groups have landed.
inline void cp_async_wait(int n) {
    AsyncGroups& g = async_groups();
    for (; (int)g.committed.size() > n; g.committed.pop_front())
        for (const AsyncCopy& c : g.committed.front()) std::memcpy(c.dst, c.src, 16);
}

// IKLLM_KERNEL_ENTRY (backends/cuda/launch.cuh): on the device the wait for the kernel ahead under
// programmatic dependent launch. Here kernels run one after another anyway; what is checked is the
// contract that makes such launches safe: every thread of a kernel launched that way (g_pdl) passes
// the entry before it ends (run_block), so no kernel can finish before the one ahead of it.
inline bool g_pdl = false;
inline void kernel_entry() { g_current->entered = true; }
[[noreturn]] inline void pdl_contract_broken() {
    std::fputs("emulated CUDA: a thread of a kernel launched with programmatic dependent launch ended without "
               "IKLLM_KERNEL_ENTRY() (backends/cuda/launch.cuh)\n", stderr);
    std::abort();
}
// IKLLM_PREFETCH_L2: only a hint on the device, which requires a 16-byte aligned address and a
// size that is a multiple of 16 (cp.async.bulk.prefetch); a violation traps here.
inline void prefetch_l2(const void* p, uint64_t bytes) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0 || bytes % 16 != 0) __builtin_trap();
}

inline const std::function<void()>* g_kernel = nullptr;
#ifdef IKLLM_EMU_STACK_SWITCH
// A fiber's first switch "returns" into this (entered with rsp = 8 mod 16, as after a call); it
// never returns: the last switch goes back to the scheduler for good.
[[noreturn]] inline void fiber_entry() {
    (*g_kernel)();
    g_current->done = true;
    void* unused = nullptr;
    ikllm_emu_switch(&unused, g_sched_sp);
    __builtin_trap();
}
// A fresh stack for ikllm_emu_switch to load: six zero registers, then fiber_entry as the return
// address, above it a never-used return slot for fiber_entry's own frame.
inline void* fiber_stack(char* stack, size_t bytes) {
    void** sp = reinterpret_cast<void**>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~(uintptr_t)15);
    *--sp = nullptr;
    *--sp = reinterpret_cast<void*>(&fiber_entry);
    for (int i = 0; i < 6; ++i) *--sp = nullptr;
    return sp;
}
#else
inline void fiber_main() {
    (*g_kernel)();
    g_current->done = true;
}
#endif
// Test-only perturbations of the schedule, IKLLM_CUDA_EMU_SCHEDULE = a comma list of
//   reverse     threads of a block and blocks of a grid run last-first,
//   shuffle[=S] in a fresh random order (seed S) per pass over a block's threads and per grid,
//   poison      shared memory (static and dynamic) holds 0xFF bytes when each block starts.
// The device promises no order between a block's threads from one barrier to the next, nor between
// blocks, and leaves shared memory undefined: a missing barrier, a kernel that relies on its blocks'
// order or reads shared memory it never wrote passes in the default schedule (threads first-last,
// up to their next barrier; shared memory zeroed per launch) and fails in one of these.
struct Schedule {
    bool reverse = false, shuffle = false, poison = false;
    uint64_t seed = 1;
};
// (Mutable for the emulation's own test, cuda_emu_schedule_test.)
inline Schedule& schedule() {
    static Schedule s = [] {
        Schedule r;
        const char* e = std::getenv("IKLLM_CUDA_EMU_SCHEDULE");
        for (const char* p = e ? e : ""; *p;) {
            const char* end = std::strchr(p, ',');
            const std::string word(p, end ? (size_t)(end - p) : std::strlen(p));
            if (word == "reverse") r.reverse = true;
            else if (word == "poison") r.poison = true;
            else if (word.rfind("shuffle", 0) == 0) {
                r.shuffle = true;
                if (word.size() > 8 && word[7] == '=') r.seed = std::strtoull(word.c_str() + 8, nullptr, 10);
            }
            p = end ? end + 1 : p + word.size();
        }
        return r;
    }();
    return s;
}
// xorshift64*: cheap enough to reshuffle a block's threads at every barrier.
inline uint64_t schedule_random() {
    static uint64_t x = schedule().seed * 0x9E3779B97F4A7C15ull | 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
}
// The order of one pass over n items (threads of a block, blocks of a grid).
inline void schedule_order(std::vector<uint32_t>& order, size_t n) {
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[i] = (uint32_t)(schedule().reverse ? n - 1 - i : i);
    if (schedule().shuffle)
        for (size_t i = n; i > 1; --i)  // Fisher-Yates, index by multiply-shift
            std::swap(order[i - 1], order[(size_t)(((schedule_random() >> 32) * (uint64_t)i) >> 32)]);
}
inline uint64_t g_block_serial = 0;  // counts the blocks run (a block's shared memory is poisoned once)
inline std::vector<char> g_dyn_shared;  // the launch's dynamic shared memory (extern __shared__)

// One static shared-memory declaration (IKLLM_SHARED, below; one per instantiation of a template
// kernel): a host array of its own, kept for the process. With "poison" the first thread of a block
// to reach the declaration fills it with 0xFF -- only this kernel's arrays, once per block.
template <class T>
class SharedVar {
public:
    static_assert(std::is_trivially_default_constructible<std::remove_all_extents_t<T>>::value,
                  "shared memory holds plain data");
    explicit SharedVar(size_t align)
        : p_(static_cast<T*>(::operator new(sizeof(T), std::align_val_t(std::max(align, alignof(T)))))) {
        std::memset(static_cast<void*>(p_), 0, sizeof(T));
    }
    T& get() {
        if (schedule().poison && block_ != g_block_serial) {
            block_ = g_block_serial;
            std::memset(static_cast<void*>(p_), 0xFF, sizeof(T));
        }
        return *p_;
    }

private:
    T* p_;
    uint64_t block_ = 0;
};

// One block: every fiber from the start of the kernel to its end. (Kept out of launch(): locals
// that live across it would draw -Wclobbered: getcontext counts as returns-twice.)
[[gnu::noinline]] inline void run_block(Block& b, std::vector<Fiber>& fibers, char* stacks, size_t stack_bytes) {
    tl_block = &b;
    ++g_block_serial;
    if (schedule().poison) std::memset(g_dyn_shared.data(), 0xFF, g_dyn_shared.size());
    for (size_t t = 0; t < fibers.size(); ++t) {
        Fiber& f = fibers[t];
        f.tid = dim3((unsigned)t, 0, 0);
        f.done = false;
        f.entered = false;
        f.exchanges = 0;
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
    static std::vector<uint32_t> order;
    for (size_t left = fibers.size(); left > 0;) {
        schedule_order(order, fibers.size());
        for (const uint32_t t : order) {
            Fiber& f = fibers[t];
            if (f.done) continue;
            g_current = &f;
            tl_tid = f.tid;
#ifdef IKLLM_EMU_STACK_SWITCH
            ikllm_emu_switch(&g_sched_sp, f.sp);
#else
            swapcontext(&g_sched, &f.ctx);
#endif
            if (f.done && g_pdl && !f.entered) pdl_contract_broken();
            left -= f.done;
        }
    }
}

template <class To, class From>
inline To bits_of(From v) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}

inline float uint_as_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline dim3 g_grid;  // gridDim of the running launch
template <class T>
T* dyn_shared() {
    return reinterpret_cast<T*>(g_dyn_shared.data());
}

// Runs kernel() for every thread of every block of the grid, one block at a time, with
// shared_bytes of dynamic shared memory (zeroed per launch; blocks run one after another).
// (pdl: launched with programmatic dependent launch; kernel_entry above.)
template <class F>
void launch(dim3 grid, int threads, F kernel, size_t shared_bytes = 0, bool pdl = false) {
    g_grid = grid;
    g_pdl = pdl;
    g_dyn_shared.assign(shared_bytes + 16, 0);
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
    std::vector<uint32_t> blocks;
    schedule_order(blocks, (size_t)grid.x * grid.y * grid.z);
    for (const uint32_t i : blocks) {
        Block b(threads);
        b.idx = dim3(i % grid.x, i / grid.x % grid.y, i / grid.x / grid.y);
        b.dim = dim3(threads, 1, 1);
        run_block(b, fibers, stacks.get(), kStack);
    }
    g_pdl = false;
}

// ---- launches through IKLLM_LAUNCH (the emulated backend) ------------------------------------

// A launch the device would refuse (block of more than 1024 threads, a grid dimension out of
// range, more than 48 KiB of dynamic shared memory) sets this instead of running, as a launch
// error; the emulated runtime's cudaGetLastError returns and clears it.
inline thread_local cudaError_t g_launch_error = cudaSuccess;
// Set by the emulated runtime (emu_runtime.cpp): takes the work of a launch on a stream that is
// being captured into a graph (true) or leaves it to run now (false). Null: always run now.
inline bool (*g_capture)(cudaStream_t stream, const void* kernel, const std::function<void()>& work) = nullptr;
// Per kernel, the dynamic shared memory it may take beyond 48 KiB (cudaFuncSetAttribute with
// cudaFuncAttributeMaxDynamicSharedMemorySize, as the device requires; emu_runtime.cpp).
inline std::mutex& opt_in_mutex() {
    static std::mutex m;
    return m;
}
inline std::map<const void*, size_t>& shared_opt_in() {
    static std::map<const void*, size_t> m;
    return m;
}
inline size_t shared_limit(const void* kernel) {
    std::lock_guard<std::mutex> lock(opt_in_mutex());
    const auto it = shared_opt_in().find(kernel);
    return it == shared_opt_in().end() ? 48 * 1024 : std::max<size_t>(48 * 1024, it->second);
}
// Kernels' __shared__ variables are statics: one launch at a time in the process.
inline std::recursive_mutex& launch_mutex() {
    static std::recursive_mutex m;
    return m;
}

// IKLLM_LAUNCH's stream: a cudaStream_t, or ikllm::cuda::StreamRef (stream, pdl).
inline cudaStream_t stream_of(cudaStream_t s) { return s; }
inline bool pdl_of(cudaStream_t) { return false; }
template <class S>
cudaStream_t stream_of(const S& s) { return s.stream; }
template <class S>
bool pdl_of(const S& s) { return s.pdl; }

template <class... P>
struct Launcher {
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;
    bool pdl;
    void (*kernel)(P...);
    template <class... A>
    void operator()(A&&... a) const {
        const uint64_t threads = (uint64_t)block.x * block.y * block.z;
        if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
            grid.z > 65535 || shared > shared_limit(reinterpret_cast<const void*>(kernel))) {
            g_launch_error = cudaErrorInvalidConfiguration;
            return;
        }
        if (block.y != 1 || block.z != 1) {  // (no kernel of the backend uses them)
            g_launch_error = cudaErrorNotSupported;
            return;
        }
        // The arguments are copied at the launch, as the device does.
        auto args = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(a)...);
        const std::function<void()> work = [g = grid, n = (int)block.x, sh = shared, k = kernel, args, pdl = pdl] {
            std::lock_guard<std::recursive_mutex> lock(launch_mutex());
            launch(g, n, [&] { std::apply(k, *args); }, sh, pdl);
        };
        if (g_capture && g_capture(stream, reinterpret_cast<const void*>(kernel), work)) return;
        work();
    }
};

template <class S, class... P>
Launcher<P...> launcher(dim3 grid, dim3 block, size_t shared, const S& stream, void (*kernel)(P...)) {
    return {grid, block, shared, stream_of(stream), pdl_of(stream), kernel};
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
// Static shared memory is declared with IKLLM_SHARED (backends/cuda/launch.cuh); a plain __shared__
// would be a static the emulation cannot reach, and fails to compile here.
#define __shared__ IKLLM_declare_shared_memory_with_IKLLM_SHARED
#define IKLLM_SHARED(type, name, dims) IKLLM_SHARED_ALIGNED(alignof(type), type, name, dims)
#define IKLLM_SHARED_ALIGNED(n, type, name, dims)                 \
    static ::emu::SharedVar<type dims> name##_emu_shared_var((n)); \
    auto& name = name##_emu_shared_var.get()
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define threadIdx (::emu::tl_tid)
#define blockIdx (::emu::tl_block->idx)
#define blockDim (::emu::tl_block->dim)
#define gridDim (::emu::g_grid)
#define IKLLM_DYN_SHARED(type, name) type* name = ::emu::dyn_shared<type>()
#define __syncthreads() ::emu::sync_block()
#define __syncwarp(...) ::emu::sync_warp()
#define __shfl_xor_sync(mask, v, o) ::emu::shfl_xor((v), (o))
#define __fadd_rn(a, b) ((a) + (b))  // one IEEE float add, as on the device
#define __uint_as_float(u) ::emu::uint_as_float(u)
#define __fsub_rn(a, b) ((a) - (b))
#define __fmul_rn(a, b) ((a) * (b))
#define __fdiv_rn(a, b) ((a) / (b))
#define __float_as_uint(f) ::emu::bits_of<uint32_t>(f)
#define __int_as_float(i) ::emu::bits_of<float>((int32_t)(i))
#define __trap() __builtin_trap()
#define IKLLM_MMA_EMULATION(c, a0, a1, b0) ::emu::mma_s8_16816((c), (a0), (a1), (b0))
namespace ikllm::cuda {
using std::min;
}
