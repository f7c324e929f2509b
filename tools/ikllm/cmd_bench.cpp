// ikllm bench: llama-bench style pp/tg timing and sweep-bench style speed-vs-depth curves,
// plus the memory-bandwidth view of token generation (bytes of weights read per token).
#include <sys/mman.h>
#include <sys/resource.h>

#include <thread>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cli.h"
#include "json_reader.h"

namespace cli {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string meta(ikllm_model* m, const std::string& key) {
    size_t need = 0;
    if (ikllm_model_meta_value(m, key.c_str(), 0, nullptr, 0, &need) != IKLLM_ERR_BUFFER_TOO_SMALL) return "";
    std::string s(need, '\0');
    if (ikllm_model_meta_value(m, key.c_str(), 0, s.data(), s.size(), &need) != IKLLM_OK) return "";
    s.resize(std::strlen(s.c_str()));
    return s;
}

// Weight bytes one generated token reads: every matrix once, embeddings one row, routed experts
// only the used fraction.
// Weight bytes a generated token reads, per device of the model (index as
// ikllm_model_device_name: 0 = CPU): all of each tensor, the token's row of an untied embedding
// table, the used share of routed experts.
std::vector<double> bytes_per_token_by_device(ikllm_model* m) {
    const std::string arch = ikllm_model_architecture(m);
    const double n_exp = std::atof(meta(m, arch + ".expert_count").c_str());
    const double n_used = std::atof(meta(m, arch + ".expert_used_count").c_str());
    std::vector<double> per((size_t)std::max(1, ikllm_model_device_count(m)), 0.0);
    for (int32_t i = 0; i < ikllm_model_tensor_count(m); ++i) {
        const char* name = nullptr;
        int64_t ne[4];
        uint64_t bytes = 0;
        if (ikllm_model_tensor_info(m, i, &name, nullptr, ne, &bytes) != IKLLM_OK) continue;
        const std::string n = name;
        int32_t dev = 0;
        if (ikllm_model_tensor_device(m, name, &dev) != IKLLM_OK || dev < 0 || (size_t)dev >= per.size()) dev = 0;
        double& total = per[(size_t)dev];
        if (n == "token_embd.weight") {
            bool tied = true;
            for (int32_t j = 0; j < ikllm_model_tensor_count(m); ++j) {
                const char* o = nullptr;
                ikllm_model_tensor_info(m, j, &o, nullptr, nullptr, nullptr);
                if (o && std::strcmp(o, "output.weight") == 0) tied = false;
            }
            total += tied ? (double)bytes : (double)bytes / (double)std::max<int64_t>(1, ne[1]);
        } else if (n.find("_exps.") != std::string::npos && n_exp > 0) {
            total += (double)bytes * n_used / n_exp;
        } else {
            total += (double)bytes;
        }
    }
    return per;
}

// Peak device-memory bandwidth (bytes/s) of the GPU named `name` ("CUDA0"), 0 when unknown.
double gpu_peak_bandwidth(ikllm_lib* lib, const std::string& name) {
    for (int32_t g = 0; g < ikllm_lib_gpu_count(lib); ++g) {
        char* json = nullptr;
        if (ikllm_lib_gpu_info(lib, g, &json) != IKLLM_OK) continue;
        const std::string text = json;
        ikllm_free(json);
        const JVal v = JReader(text).value();
        if (v["name"].s == name) return (double)v["memory_bandwidth"].u64();
    }
    return 0;
}

// Generation's bound when weights live on GPUs: each device reads its share of a token's weights
// at its bandwidth (a GPU's peak; the CPU's measured read rate), one after another.
struct DeviceBound {
    std::vector<std::string> names;
    std::vector<double> bytes, bandwidth;  // per device; bandwidth 0 = unknown
    double tg = 0;                         // 0 when some device's bandwidth is unknown
};
DeviceBound device_bound(ikllm_lib* lib, ikllm_model* m, const std::vector<double>& per, double cpu_bytes_s) {
    DeviceBound d;
    double seconds = 0;
    bool known = true;
    for (size_t i = 0; i < per.size(); ++i) {
        const char* n = ikllm_model_device_name(m, (int32_t)i);
        d.names.push_back(n ? n : "?");
        d.bytes.push_back(per[i]);
        d.bandwidth.push_back(i == 0 ? cpu_bytes_s : gpu_peak_bandwidth(lib, d.names.back()));
        if (per[i] > 0) {
            if (d.bandwidth.back() > 0) seconds += per[i] / d.bandwidth.back();
            else known = false;
        }
    }
    d.tg = known && seconds > 0 ? 1.0 / seconds : 0;
    return d;
}

// Read bandwidth of this machine: sum a 512 MiB buffer with the bench's thread count. The bound
// uses the best of 5 passes; the median is printed beside it, since on a shared VM the passes
// spread by ±15 % and generation is reported as a mean. The same probe also runs one pass before
// each generation rep and one after the last, so that each rep is compared with the bandwidth of
// its own moment (the "paired" fraction of the bound), which the VM's drift does not blur.
class ReadProbe {
public:
    explicit ReadProbe(int threads) : threads_(std::max(1, threads)) {
        void* mem = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) return;
        // On huge pages where the kernel has them, like weights read into memory (use_mmap auto):
        // the bound is the machine's streaming rate, not its 4 KiB-page TLB miss rate.
#if defined(MADV_HUGEPAGE)
        ::madvise(mem, kBytes, MADV_HUGEPAGE);
#endif
        buf_ = std::span<uint64_t>(static_cast<uint64_t*>(mem), kBytes / 8);
        std::fill(buf_.begin(), buf_.end(), 1);
    }
    ~ReadProbe() {
        if (!buf_.empty()) ::munmap(buf_.data(), kBytes);
    }
    ReadProbe(const ReadProbe&) = delete;
    ReadProbe& operator=(const ReadProbe&) = delete;

    bool ok() const { return !buf_.empty(); }

    // One timed pass over the whole buffer, GB/s (0 when the buffer could not be mapped).
    double pass() {
        if (buf_.empty()) return 0;
        const auto t0 = Clock::now();
        std::vector<uint64_t> part((size_t)threads_, 0);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads_; ++t)
            ts.emplace_back([&, t] {
                const size_t b = buf_.size() * t / threads_, e = buf_.size() * (t + 1) / threads_;
                // One cache line per step with a software prefetch 4 KiB ahead, like the engine's
                // matrix-vector kernels: without it one core reads a stream at about 2/3 of the rate
                // it can, and the "bound" would understate what token generation reaches.
                uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                size_t i = b;
                for (; i + 8 <= e; i += 8) {
                    __builtin_prefetch(buf_.data() + i + 512, 0, 3);
                    s0 += buf_[i] + buf_[i + 4];
                    s1 += buf_[i + 1] + buf_[i + 5];
                    s2 += buf_[i + 2] + buf_[i + 6];
                    s3 += buf_[i + 3] + buf_[i + 7];
                }
                for (; i < e; ++i) s0 += buf_[i];
                part[(size_t)t] = s0 + s1 + s2 + s3;
            });
        for (auto& th : ts) th.join();
        const double s = seconds_since(t0);
        if (part[0] == 42) std::fprintf(stderr, " ");  // keep the sums alive
        return (double)kBytes / s / 1e9;
    }

private:
    static constexpr size_t kBytes = (size_t)512 << 20;
    int threads_;
    std::span<uint64_t> buf_;
};

struct Bandwidth {
    double best = 0, median = 0;
};
Bandwidth best_of_passes(ReadProbe& probe, int n) {
    std::vector<double> passes;
    for (int rep = 0; rep < n; ++rep) passes.push_back(probe.pass());
    std::sort(passes.begin(), passes.end());
    return {passes.back(), passes[passes.size() / 2]};
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

struct Stat {
    double mean = 0, sd = 0;
};
Stat stats(const std::vector<double>& v) {
    Stat s;
    for (double x : v) s.mean += x;
    s.mean /= (double)v.size();
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = v.size() > 1 ? std::sqrt(s.sd / (double)(v.size() - 1)) : 0;
    return s;
}

std::vector<int32_t> random_tokens(ikllm_model* m, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> d(3, std::max(4, ikllm_model_n_vocab(m) - 1));
    std::vector<int32_t> t(n);
    for (auto& x : t) x = d(rng);
    return t;
}

void decode_or_die(ikllm_session* s, const int32_t* toks, int32_t n) {
    std::vector<int32_t> want(n, 0);
    want[n - 1] = 1;
    check(ikllm_session_decode(s, toks, nullptr, nullptr, want.data(), n, 0), "decode");
}

// The tg row's extra JSONL fields: the paired fraction of the bound (median, min, max over reps).
std::string paired_json(double median, double lo, double hi) {
    char b[160];
    std::snprintf(b, sizeof b, ", \"bound_fraction_paired\": %.4f, \"bound_fraction_paired_min\": %.4f, "
                  "\"bound_fraction_paired_max\": %.4f", median, lo, hi);
    return b;
}

double peak_rss_mib() {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    Args a = parse(argc, argv, {"--sweep"});
    const int pp = (int)a.get_int("-p", 512), tg = (int)a.get_int("-n", 128), reps = (int)a.get_int("-r", 5);
    const std::string fmt = a.get("--format", "md");
    if (fmt != "md" && fmt != "jsonl") die("bench: --format must be md or jsonl");
    if (pp < 0 || tg < 0 || reps < 1) die("bench: -p/-n must be >= 0 and -r >= 1");
    // Steady-state speed: the weights are faulted in at load unless --no-prefault (a MoE model's
    // experts would otherwise be faulted in during the timed runs, as routing first reaches them).
    if (!a.has("--no-prefault")) a.opts["--prefault"];
    Loaded L;
    load(a, L);
    const bool sweep = a.has("--sweep");
    const int ub = (int)a.get_int("-ub", 512);
    const int ctx = sweep ? (int)a.get_int("-c", 4096) : pp + tg + 16;
    ikllm_options* so = session_options(a, 1, ctx);
    check(ikllm_options_set_int(so, "n_ctx", sweep ? ctx + ub + 128 : ctx), "n_ctx");
    check(ikllm_options_set_int(so, "n_batch", std::max(1, sweep ? ub : pp)), "n_batch");
    ikllm_session* s = nullptr;
    ikllm_status st = ikllm_session_create(L.model, so, &s);
    ikllm_options_free(so);
    check(st, "session");
    const int threads = (int)a.get_int("-t", 0);
    const std::string name = a.get("-m").substr(a.get("-m").find_last_of('/') + 1);
    const double size_mib = (double)ikllm_model_size_bytes(L.model) / 1048576.0;
    const std::vector<double> bpt_dev = bytes_per_token_by_device(L.model);
    double bpt_sum = 0;
    for (double b : bpt_dev) bpt_sum += b;
    const uint64_t bpt = (uint64_t)bpt_sum;
    bool on_gpu = false;  // some weights a token reads live on a GPU
    for (size_t i = 1; i < bpt_dev.size(); ++i) on_gpu = on_gpu || bpt_dev[i] > 0;

    if (sweep) {
        const std::vector<int32_t> toks = random_tokens(L.model, (size_t)ub, 1);
        const std::vector<int32_t> gen = random_tokens(L.model, 128, 2);
        if (fmt == "md") {
            std::printf("| %6s | %6s | %6s | %8s | %8s | %8s | %8s |\n", "PP", "TG", "N_KV", "T_PP s", "S_PP t/s",
                        "T_TG s", "S_TG t/s");
            std::printf("|--------|--------|--------|----------|----------|----------|----------|\n");
        }
        check(ikllm_session_clear(s), "clear");
        decode_or_die(s, toks.data(), std::min(ub, 16));  // warm-up
        check(ikllm_session_clear(s), "clear");
        for (int depth = 0; depth + ub <= ctx; depth += ub) {
            auto t0 = Clock::now();
            decode_or_die(s, toks.data(), ub);
            const double t_pp = seconds_since(t0);
            t0 = Clock::now();
            for (int i = 0; i < 128; ++i) decode_or_die(s, &gen[(size_t)i], 1);
            const double t_tg = seconds_since(t0);
            check(ikllm_session_seq_remove(s, 0, depth + ub, -1), "seq_remove");
            if (fmt == "md")
                std::printf("| %6d | %6d | %6d | %8.3f | %8.2f | %8.3f | %8.2f |\n", ub, 128, depth, t_pp, ub / t_pp,
                            t_tg, 128 / t_tg);
            else
                std::printf("{\"pp\": %d, \"tg\": 128, \"n_kv\": %d, \"t_pp\": %.6f, \"s_pp\": %.3f, \"t_tg\": %.6f, "
                            "\"s_tg\": %.3f}\n", ub, depth, t_pp, ub / t_pp, t_tg, 128 / t_tg);
            std::fflush(stdout);
        }
        ikllm_session_free(s);
        return 0;
    }

    struct Row {
        std::string test;
        Stat tps;
    };
    std::vector<Row> rows;
    // warm-up: one full-size prompt (sizes the activation arena and scratch, faults the weights in)
    // and a few generated tokens
    const std::vector<int32_t> warm = random_tokens(L.model, (size_t)std::max(1, pp) + 4, 7);
    check(ikllm_session_clear(s), "clear");
    decode_or_die(s, warm.data(), std::max(1, pp));
    for (int i = 0; i < 4; ++i) decode_or_die(s, &warm[(size_t)std::max(1, pp) + i], 1);
    if (pp > 0) {
        const std::vector<int32_t> toks = random_tokens(L.model, (size_t)pp, 1);
        std::vector<double> v;
        for (int r = 0; r < reps; ++r) {
            check(ikllm_session_clear(s), "clear");
            const auto t0 = Clock::now();
            decode_or_die(s, toks.data(), pp);
            v.push_back(pp / seconds_since(t0));
        }
        rows.push_back({"pp" + std::to_string(pp), stats(v)});
    }
    const double rss = peak_rss_mib();  // before the bandwidth probe's buffer (the warm-up sized everything)
    ReadProbe probe(threads > 0 ? threads : 2);
    // Per generation rep: its speed over the bound of the bandwidth measured around it (the mean
    // of the passes just before and just after it).
    std::vector<double> paired;
    if (tg > 0) {
        const std::vector<int32_t> toks = random_tokens(L.model, (size_t)tg, 3);
        std::vector<double> v;
        double before = probe.pass();
        for (int r = 0; r < reps; ++r) {
            check(ikllm_session_clear(s), "clear");
            const auto t0 = Clock::now();
            for (int i = 0; i < tg; ++i) decode_or_die(s, &toks[(size_t)i], 1);
            v.push_back(tg / seconds_since(t0));
            const double after = probe.pass();
            const double around = 0.5 * (before + after);
            if (around > 0 && bpt > 0) paired.push_back(v.back() / (around * 1e9 / (double)bpt));
            before = after;
        }
        rows.push_back({"tg" + std::to_string(tg), stats(v)});
    }
    ikllm_session_free(s);
    const Bandwidth bws = best_of_passes(probe, 5);
    const double bw = bws.best;
    const double bound = bw * 1e9 / (double)std::max<uint64_t>(1, bpt);
    const double paired_median = median_of(paired);
    const double paired_min = paired.empty() ? 0 : *std::min_element(paired.begin(), paired.end());
    const double paired_max = paired.empty() ? 0 : *std::max_element(paired.begin(), paired.end());
    const DeviceBound db = on_gpu ? device_bound(L.lib, L.model, bpt_dev, bw * 1e9) : DeviceBound{};
    if (fmt == "md") {
        std::printf("%s\n\n", ikllm_model_placement(L.model));
        std::printf("| model | size | threads | test | t/s |\n|---|---:|---:|---|---:|\n");
        for (auto& r : rows)
            std::printf("| %s | %.2f MiB | %d | %s | %.2f ± %.2f |\n", name.c_str(), size_mib, threads, r.test.c_str(),
                        r.tps.mean, r.tps.sd);
        std::printf("\nweights read per generated token: %.2f MiB; read bandwidth %.1f GB/s (best of 5 passes; median "
                    "%.1f) -> bandwidth-bound tg %.1f t/s; peak RSS %.1f MiB\n",
                    (double)bpt / 1048576.0, bw, bws.median, bound, rss);
        if (!paired.empty() && !on_gpu)
            std::printf("tg / bound of the bandwidth around each rep: median %.1f %% (%.1f-%.1f %%, %zu reps)\n",
                        100 * paired_median, 100 * paired_min, 100 * paired_max, paired.size());
        if (on_gpu) {
            // The line above is the host's bound; with weights on GPUs each device reads its share.
            std::printf("weights read per token by device:");
            for (size_t i = 0; i < db.names.size(); ++i)
                if (db.bytes[i] > 0) {
                    std::printf(" %s %.2f MiB", db.names[i].c_str(), db.bytes[i] / 1048576.0);
                    if (db.bandwidth[i] > 0) std::printf(" at %.0f GB/s%s", db.bandwidth[i] / 1e9, i == 0 ? " (measured)" : " (peak)");
                    else std::printf(" (bandwidth unknown)");
                }
            if (db.tg > 0) {
                std::printf(" -> device-memory-bound tg %.1f t/s", db.tg);
                for (auto& r : rows)
                    if (r.test[0] == 't') std::printf("; %s at %.1f %% of it", r.test.c_str(), 100 * r.tps.mean / db.tg);
            }
            std::printf("\n");
        }
    } else {
        std::string dev_json;
        if (on_gpu) {
            dev_json = ", \"devices\": [";
            for (size_t i = 0; i < db.names.size(); ++i)
                dev_json += std::string(i ? ", " : "") + "{\"name\": \"" + db.names[i] + "\", \"bytes_per_token\": " +
                            std::to_string((uint64_t)db.bytes[i]) + ", \"bandwidth_gbs\": " + std::to_string(db.bandwidth[i] / 1e9) + "}";
            dev_json += "], \"device_bound_tg\": " + std::to_string(db.tg);
        }
        for (auto& r : rows)
            std::printf("{\"model\": \"%s\", \"test\": \"%s\", \"threads\": %d, \"tokens_per_s\": %.4f, \"stddev\": %.4f, "
                        "\"reps\": %d, \"size_bytes\": %" PRIu64 ", \"bytes_per_token\": %" PRIu64
                        ", \"read_bandwidth_gbs\": %.3f, \"read_bandwidth_median_gbs\": %.3f, \"bandwidth_bound_tg\": %.3f"
                        ", \"peak_rss_mib\": %.1f%s%s}\n",
                        name.c_str(), r.test.c_str(), threads, r.tps.mean, r.tps.sd, reps,
                        ikllm_model_size_bytes(L.model), bpt, bw, bws.median, bound, rss,
                        r.test[0] == 't' && !paired.empty() ? paired_json(paired_median, paired_min, paired_max).c_str() : "",
                        dev_json.c_str());
    }
    return 0;
}

}  // namespace cli
