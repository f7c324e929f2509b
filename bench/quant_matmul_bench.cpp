// Per-type matrix-product throughput through the engine's CPU op (activation encoding + kernel +
// thread split), for 1 and 2 threads: a 4096 x 4096 weight matrix of each type times nt = 1
// (generation) and nt = 64 (prompt) activation rows. Prints weight GB/s (bytes of W per second)
// and GFLOP/s (2 * rows * ne0 * nt per second), medians of 5 wall-clock repetitions. Several
// copies of the matrix are cycled so W does not sit in the last-level cache.
// Usage: quant_matmul_bench [--threads 1,2] [--nt 1,64] [--shape ROWSxK] [--cpu-time] [type ...]
// (IKLLM_ISA caps the ISA; --shape, default 4096x4096, measures a model's own matrices, e.g.
// 512x2048 for small K/V; --cpu-time times the process's CPU seconds instead of wall-clock ones:
// with one thread on a machine busy with other work it still compares kernels fairly; --hot keeps
// one copy of the matrix, so a small --shape measures the kernel's decode rate from cache)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cpu_ops.h"
#include "quant/repack.h"
#include "kernels/matmul.h"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

int64_t kNe0 = 4096, kRows = 4096;  // --shape
bool g_cpu_time = false;             // --cpu-time
bool g_hot = false;                  // --hot: one copy of the matrix (stays in cache if it fits)

double now_s() {
    if (g_cpu_time) {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int> int_list(const std::string& s) {
    std::vector<int> v;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoi(x));
    return v;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Seconds per matmul (median of 5 reps, each at least ~50 ms of back-to-back products).
double time_matmul(const TypeTraits& tt, std::vector<std::vector<uint8_t>>& copies, int64_t nt,
                   std::vector<float>& x, cpu::ThreadPool& pool, cpu::Scratch& scratch) {
    Tensor w, a, y;
    w.type = tt.id;
    w.ne[0] = kNe0;
    w.ne[1] = kRows;
    w.nb[1] = row_bytes(tt, kNe0);
    w.name = "bench";
    a.type = T_F32;
    a.ne[0] = kNe0;
    a.ne[1] = nt;
    a.nb[0] = 4;
    a.nb[1] = 4 * kNe0;
    a.data = x.data();
    std::vector<float> out((size_t)(kRows * nt));
    y.type = T_F32;
    y.ne[0] = kRows;
    y.ne[1] = nt;
    y.nb[0] = 4;
    y.nb[1] = 4 * kRows;
    y.data = out.data();
    Op op;
    op.kind = OpKind::mul_mat;
    op.src[0] = &w;
    op.src[1] = &a;
    op.dst = &y;
    size_t c = 0;
    auto once = [&] {
        w.data = copies[c++ % copies.size()].data();
        cpu::op_mul_mat(op, pool, scratch);
    };
    once();  // warm-up
    const double t0 = now_s();
    once();
    const double one = now_s() - t0;
    const int iters = std::max(1, (int)(0.05 / std::max(one, 1e-6)));
    std::vector<double> reps;
    for (int r = 0; r < 5; ++r) {
        const double s = now_s();
        for (int i = 0; i < iters; ++i) once();
        reps.push_back((now_s() - s) / iters);
    }
    return median(reps);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> threads{1, 2}, nts{1, 64};
    std::vector<std::string> names;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        if (s == "--threads" && i + 1 < argc) threads = int_list(argv[++i]);
        else if (s == "--nt" && i + 1 < argc) nts = int_list(argv[++i]);
        else if (s == "--cpu-time") g_cpu_time = true;
        else if (s == "--hot") g_hot = true;
        else if (s == "--shape" && i + 1 < argc) {
            long long r = 0, k = 0;
            if (std::sscanf(argv[++i], "%lldx%lld", &r, &k) != 2 || r < 64 || r % 64 || k < 32 || k % 32) {
                std::fprintf(stderr, "--shape wants ROWSxK, ROWS a multiple of 64, K of 32 (of the type's block size)\n");
                return 2;
            }
            kRows = r;
            kNe0 = k;
        }
        else names.push_back(s);
    }
    if (names.empty()) {
        size_t n = 0;
        const TypeTraits* all = all_types(&n);
        for (size_t i = 0; i < n; ++i)
            if (all[i].quantize && !all[i].is_activation_only && cpu::find_matmul(all[i].id, cpu::best_isa()))
                names.push_back(all[i].name);
    }
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> src(64 * kNe0);
    for (auto& v : src) v = nd(rng) * 0.02f;
    int64_t max_nt = 1;
    for (int nt : nts) max_nt = std::max<int64_t>(max_nt, nt);
    std::vector<float> x((size_t)(max_nt * kNe0));
    for (auto& v : x) v = nd(rng);

    std::printf("matmul %lld x %lld via the CPU op (activation encoding included), isa %s, median of 5%s\n\n",
                (long long)kRows, (long long)kNe0, cpu::isa_name(cpu::best_isa()),
                g_cpu_time ? " (process CPU time)" : "");
    std::printf("| type | bpw | kernel |");
    for (int nt : nts)
        for (int t : threads) std::printf(" nt=%d t=%d GB/s | GFLOP/s |", nt, t);
    std::printf("\n|---|---:|---|");
    for (size_t i = 0; i < nts.size() * threads.size(); ++i) std::printf("---:|---:|");
    std::printf("\n");
    std::vector<cpu::ThreadPool*> pools;
    for (int t : threads) pools.push_back(new cpu::ThreadPool(t));
    cpu::Scratch scratch;
    for (const std::string& name : names) {
        const TypeTraits* tt = find_type_by_name(name.c_str());
        const cpu::MatmulKernel* k = tt ? cpu::find_matmul(tt->id, cpu::best_isa()) : nullptr;
        // Run-time layouts (no quantizer of their own): the base type's rows, repacked.
        const TypeTraits* base = tt && !tt->quantize && repack_base(tt->id) ? find_type(repack_base(tt->id)) : nullptr;
        if (!tt || !(tt->quantize || (base && base->quantize)) || !k) {
            std::printf("| %s | (no quantizer or kernel) |\n", name.c_str());
            continue;
        }
        if (kNe0 % tt->block_elems) {
            std::printf("| %s | (K not a multiple of its %d-weight blocks) |\n", name.c_str(), (int)tt->block_elems);
            continue;
        }
        const size_t wrb = row_bytes(*tt, kNe0);
        std::vector<uint8_t> tile(wrb * 64);
        if (tt->quantize) {
            for (int r = 0; r < 64; r += tt->interleave)
                tt->quantize(src.data() + r * kNe0, tile.data() + r * wrb, kNe0, nullptr);
        } else {
            std::vector<uint8_t> plain(row_bytes(*base, kNe0) * 64);
            for (int r = 0; r < 64; ++r) base->quantize(src.data() + r * kNe0, plain.data() + r * row_bytes(*base, kNe0), kNe0, nullptr);
            repack_rows_to(base->id, tt->id, plain.data(), tile.data(), kNe0, 64);
        }
        const size_t bytes = wrb * kRows;
        const size_t ncopies = g_hot ? 1 : std::max<size_t>(2, (size_t)(256u << 20) / bytes);
        std::vector<std::vector<uint8_t>> copies(ncopies, std::vector<uint8_t>(bytes));
        for (auto& c : copies)
            for (int64_t r = 0; r < kRows; r += 64) std::memcpy(c.data() + r * wrb, tile.data(), tile.size());
        std::printf("| %s | %.3g | %s |", tt->name, 8.0 * (double)wrb / (double)kNe0,
                    k->act->id == T_F32 && tt->id != T_F32 ? "dequant" : cpu::isa_name(k->isa));
        for (int nt : nts)
            for (size_t ti = 0; ti < threads.size(); ++ti) {
                const double s = time_matmul(*tt, copies, nt, x, *pools[ti], scratch);
                std::printf(" %.2f | %.1f |", (double)bytes / s / 1e9, 2.0 * kRows * kNe0 * nt / s / 1e9);
                std::fflush(stdout);
            }
        std::printf("\n");
    }
    for (auto* p : pools) delete p;
    return 0;
}
