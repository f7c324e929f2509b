// Single-thread matmul kernel throughput: a 4096 x 4096 weight matrix of each type times nt = 1
// and nt = 64 activation rows. Prints weight GB/s (bytes of W streamed per second) and GFLOP/s
// (2*rows*ne0*nt per second). Activation encoding is excluded (done once, as in the engine).
// Several copies of the matrix are cycled so that W does not sit in the last-level cache.
// Time is the thread's CPU time (robust on a shared machine; equals wall time on an idle one).
// Usage: matmul_bench [isa] [nt=N] [type ...]   (isa: scalar|avx2|avx512, default: best available;
// nt=N adds a third column for N tokens)
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::cpu;
using namespace ikllm::quant;

namespace {

constexpr int64_t kNe0 = 4096, kRows = 4096;

struct Result {
    double ms, gbs, gflops;
};

Result bench(const MatmulKernel& k, const TypeTraits& tt, const std::vector<std::vector<uint8_t>>& copies, int64_t nt,
             const std::vector<float>& x) {
    const size_t arb = k.act->row_bytes(kNe0);
    std::vector<uint8_t> act(arb * (size_t)nt);
    for (int64_t t = 0; t < nt; ++t) k.act->encode_row(x.data() + (t % 64) * kNe0, act.data() + t * arb, kNe0);
    std::vector<float> y((size_t)(kRows * nt));
    const size_t wrb = row_bytes(tt, kNe0);
    auto once = [&](size_t c) { k.run(copies[c].data(), wrb, kNe0, 0, kRows, act.data(), arb, nt, y.data(), kRows); };
    auto now = [] {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    };
    once(0);  // warm-up
    const double t0 = now();
    size_t iters = 0;
    double elapsed = 0;
    while (elapsed < 0.5 || iters < 3) {
        once(iters % copies.size());
        ++iters;
        elapsed = now() - t0;
    }
    const double s = elapsed / (double)iters;
    return {s * 1e3, (double)(wrb * kRows) / s / 1e9, 2.0 * kRows * kNe0 * nt / s / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
    Isa isa = best_isa();
    std::vector<std::string> names;
    int64_t extra_nt = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("nt=", 0) == 0) extra_nt = std::stoll(a.substr(3));
        else if (a == "scalar") isa = Isa::scalar;
        else if (a == "avx2") isa = Isa::avx2;
        else if (a == "avx512") isa = Isa::avx512;
        else names.push_back(a);
    }
    if (names.empty()) names = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q6_0", "iq4_nl", "mxfp4"};

    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> src(64 * kNe0), x(64 * kNe0);
    for (auto& v : src) v = nd(rng) * 0.02f;
    for (auto& v : x) v = nd(rng);

    std::printf("matmul %lld x %lld, single thread, max isa %s (cpu: %s)\n", (long long)kRows, (long long)kNe0,
                isa_name(isa), isa_name(detected_isa()));
    std::printf("%-8s %-7s | %9s %8s %8s | %9s %8s %8s", "type", "kernel", "nt=1 ms", "GB/s", "GFLOP/s", "nt=64 ms",
                "GB/s", "GFLOP/s");
    if (extra_nt) std::printf(" | nt=%-5lld ms GFLOP/s", (long long)extra_nt);
    std::printf("\n");
    for (const std::string& name : names) {
        const TypeTraits* tt = find_type_by_name(name.c_str());
        const MatmulKernel* k = tt ? find_matmul(tt->id, isa) : nullptr;
        if (!tt || !tt->quantize || !k) {
            std::printf("%-8s (no quantizer or kernel)\n", name.c_str());
            continue;
        }
        // quantize 64 distinct rows, tile them; enough copies to exceed the last-level cache
        const size_t wrb = row_bytes(*tt, kNe0);
        std::vector<uint8_t> tile(wrb * 64);
        for (int r = 0; r < 64; r += tt->interleave) tt->quantize(src.data() + r * kNe0, tile.data() + r * wrb, kNe0, nullptr);
        const size_t bytes = wrb * kRows;
        const size_t ncopies = std::max<size_t>(1, (size_t)(512u << 20) / bytes);
        std::vector<std::vector<uint8_t>> copies(ncopies, std::vector<uint8_t>(bytes));
        for (auto& c : copies)
            for (int64_t r = 0; r < kRows; r += 64) std::memcpy(c.data() + r * wrb, tile.data(), tile.size());
        const Result r1 = bench(*k, *tt, copies, 1, x), r64 = bench(*k, *tt, copies, 64, x);
        std::printf("%-8s %-7s | %9.3f %8.2f %8.2f | %9.3f %8.2f %8.2f", tt->name, isa_name(k->isa), r1.ms, r1.gbs,
                    r1.gflops, r64.ms, r64.gbs, r64.gflops);
        if (extra_nt) {
            const Result rx = bench(*k, *tt, copies, extra_nt, x);
            std::printf(" | %11.3f %8.2f", rx.ms, rx.gflops);
        }
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
