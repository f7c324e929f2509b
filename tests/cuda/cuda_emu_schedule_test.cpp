// The host emulation's own checks (tests/cuda/emu_cuda.h): each schedule perturbation does what it is
// there for. A missing barrier that the plain first-to-last order hides shows reversed and shuffled;
// blocks run in the order asked; shared memory a kernel never wrote reads as 0xFF bytes with
// "poison" (static and dynamic); a cp.async's bytes are there after its wait_group, not before; a
// kernel launched with programmatic dependent launch whose threads skip IKLLM_KERNEL_ENTRY aborts.
// Exit code 1 on any failure.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "emu_cuda.h"
#include "cuda/launch.cuh"

namespace {

bool g_ok = true;
void expect(bool c, const char* what) {
    std::printf("%-72s %s\n", what, c ? "ok" : "FAIL");
    g_ok = g_ok && c;
}

// Thread 0 publishes a value (new each launch) that the others read with no barrier between (the bug).
int readers_that_missed(int threads) {
    static int launch = 0;
    const int token = ++launch;
    std::vector<int> out((size_t)threads, 0);
    emu::launch(dim3(1), threads, [&] {
        IKLLM_SHARED(int, value, );
        if (threadIdx.x == 0) value = token;
        out[threadIdx.x] = value;  // missing __syncthreads() above
    });
    int missed = 0;
    for (int v : out) missed += v != token;
    return missed;
}

std::vector<unsigned> block_order(unsigned blocks) {
    std::vector<unsigned> order;
    emu::launch(dim3(blocks), 32, [&] {
        if (threadIdx.x == 0) order.push_back(blockIdx.x);
    });
    return order;
}

// What a block reads from shared memory before writing it: static, then dynamic.
void unwritten_shared(uint32_t* stat, uint32_t* dyn) {
    emu::launch(dim3(1), 32, [&] {
        IKLLM_SHARED(uint32_t, words, [4]);
        IKLLM_DYN_SHARED(uint32_t, d);
        if (threadIdx.x == 0) {
            *stat = words[3];
            *dyn = d[3];
        }
    }, 64);
}

// Runs a 2-block launch in a child process, every thread passing IKLLM_KERNEL_ENTRY or (skip) the
// odd threads of block 1 not; true when the child ended normally.
bool pdl_launch_survives(bool pdl, bool skip) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        emu::launch(dim3(2), 64, [&] {
            if (!(skip && blockIdx.x == 1 && threadIdx.x % 2)) IKLLM_KERNEL_ENTRY();
        }, 0, pdl);
        std::_Exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main() {
    emu::Schedule& s = emu::schedule();
    s = emu::Schedule{};
    expect(readers_that_missed(128) == 0, "plain order: the missing barrier goes unseen (why the others exist)");
    s.reverse = true;
    expect(readers_that_missed(128) == 127, "reverse: every reader runs before the writer");
    const std::vector<unsigned> rev = block_order(5);
    expect(rev == std::vector<unsigned>({4, 3, 2, 1, 0}), "reverse: blocks last-first");
    s = emu::Schedule{};
    s.shuffle = true;
    const int missed = readers_that_missed(128);
    expect(missed > 0 && missed < 127, "shuffle: some readers before the writer, some after");
    const std::vector<unsigned> sh = block_order(64);
    std::vector<unsigned> sorted = sh;
    std::sort(sorted.begin(), sorted.end());
    bool all = sorted.size() == 64;
    for (unsigned i = 0; all && i < 64; ++i) all = sorted[i] == i;
    expect(all && sh != sorted, "shuffle: every block once, not in index order");

    s = emu::Schedule{};
    uint32_t st = 1, dy = 1;
    unwritten_shared(&st, &dy);
    expect(st == 0 && dy == 0, "plain: unwritten shared memory reads as zero (hides such reads)");
    s.poison = true;
    unwritten_shared(&st, &dy);
    expect(st == 0xFFFFFFFFu && dy == 0xFFFFFFFFu, "poison: unwritten shared memory reads as 0xFF bytes");

    // cp.async: the bytes land at the wait that covers their group.
    s = emu::Schedule{};
    alignas(16) static uint32_t src[4] = {7, 7, 7, 7};
    uint32_t before = 1, after = 0;
    emu::launch(dim3(1), 32, [&] {
        IKLLM_SHARED_ALIGNED(16, uint32_t, dst, [4]);
        if (threadIdx.x == 0) {
            dst[0] = 0;
            emu::cp_async16(dst, src);
            emu::cp_async_commit();
            before = dst[0];
            emu::cp_async_wait(0);
            after = dst[0];
        }
    });
    expect(before == 0 && after == 7, "cp.async: not there before its wait_group, there after");

    // Programmatic dependent launch: a kernel that may finish before the one ahead of it is refused.
    expect(pdl_launch_survives(true, false), "pdl: every thread passes IKLLM_KERNEL_ENTRY: runs");
    expect(!pdl_launch_survives(true, true), "pdl: threads that skip IKLLM_KERNEL_ENTRY: aborts");
    expect(pdl_launch_survives(false, true), "no pdl: the entry is not required");

    std::printf("%s\n", g_ok ? "cuda_emu_schedule_test: ok" : "cuda_emu_schedule_test: FAIL");
    return g_ok ? 0 : 1;
}
