// Encoder throughput and error per weight type: what `ikllm quantize` spends per weight, and
// what it gets for it. Rows of heavy-tailed random weights (Student-t, 5 degrees of freedom, as
// trained weights are heavier-tailed than a normal), optionally with a random importance matrix,
// are encoded on one thread (CPU time) and decoded again.
// Prints per type: the first row group's milliseconds (with one-time set-up), then from the
// other rows microseconds per 256 weights, million weights per second, the relative rms
// error sqrt(sum (x - q)^2 / sum x^2), the importance-weighted one, and an FNV-1a hash of the
// encoded bytes (equal hashes across two builds = the encoder's output did not change).
// Usage: quantize_bench [--rows N] [--ne0 K] [--imatrix] [--seed S] type ...
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "quant/type_traits.h"

using namespace ikllm::quant;

namespace {

double cpu_s() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t fnv1a(const std::vector<uint8_t>& b) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t c : b) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace

int main(int argc, char** argv) {
    int64_t rows = 16, ne0 = 4096;
    bool use_imatrix = false;
    unsigned seed = 1;
    std::vector<std::string> types;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--rows" && i + 1 < argc) rows = std::stoll(argv[++i]);
        else if (a == "--ne0" && i + 1 < argc) ne0 = std::stoll(argv[++i]);
        else if (a == "--seed" && i + 1 < argc) seed = (unsigned)std::stoul(argv[++i]);
        else if (a == "--imatrix") use_imatrix = true;
        else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr, "usage: quantize_bench [--rows N] [--ne0 K] [--imatrix] [--seed S] type ...\n");
            return 2;
        } else types.push_back(a);
    }
    if (types.empty()) types = {"iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s"};

    std::student_t_distribution<float> dist(5.0f);
    std::uniform_real_distribution<float> imd(0.05f, 4.0f);
    std::printf("| type | first row ms | us / 256 weights | M weights / s | rel rms | weighted rel rms | hash |\n|---|---|---|---|---|---|---|\n");
    for (const std::string& name : types) {
        const TypeTraits* tt = find_type_by_name(name.c_str());
        if (!tt || !tt->quantize || !tt->dequant || ne0 % tt->block_elems) {
            std::printf("| %s | (unknown, no encoder, or ne0 not a multiple of its block) |\n", name.c_str());
            continue;
        }
        const int64_t groups = (rows + tt->interleave - 1) / tt->interleave, n = groups * tt->interleave;
        std::vector<float> x((size_t)(n * ne0)), im((size_t)ne0, 1.0f), y(x.size());
        std::mt19937 rng(seed);  // every type encodes the same rows: hashes compare across type lists
        for (float& v : x) v = 0.02f * dist(rng);
        if (use_imatrix)
            for (float& v : im) v = imd(rng);
        const size_t gb = row_bytes(*tt, ne0) * (size_t)tt->interleave;
        std::vector<uint8_t> q(gb * (size_t)groups);
        // The first row group alone: it pays one-time set-up (code book indices built on first
        // use), reported apart so the rate is the steady one.
        auto encode = [&](int64_t g) {
            tt->quantize(&x[(size_t)(g * tt->interleave * ne0)], &q[gb * (size_t)g], ne0, use_imatrix ? im.data() : nullptr);
        };
        const double t0 = cpu_s();
        encode(0);
        const double t1 = cpu_s();
        for (int64_t g = 1; g < groups; ++g) encode(g);
        const double dt = groups > 1 ? cpu_s() - t1 : t1 - t0;
        const double nw_timed = (double)((groups > 1 ? groups - 1 : 1) * tt->interleave * ne0);
        for (int64_t g = 0; g < groups; ++g) tt->dequant(&q[gb * (size_t)g], &y[(size_t)(g * tt->interleave * ne0)], ne0);
        double e = 0, s = 0, ew = 0, sw = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double d = (double)x[i] - y[i], w = im[i % (size_t)ne0];
            e += d * d, s += (double)x[i] * x[i], ew += w * d * d, sw += w * x[i] * x[i];
        }
        std::printf("| %s | %.1f | %.2f | %.3f | %.5f | %.5f | %016llx |\n", tt->name, 1e3 * (t1 - t0), 1e6 * dt * 256 / nw_timed,
                    nw_timed / dt * 1e-6,
                    std::sqrt(e / s), std::sqrt(ew / sw), (unsigned long long)fnv1a(q));
        std::fflush(stdout);
    }
    return 0;
}
