// CPU attention throughput through the engine's op (op_attention): one decode step (or a few
// query tokens) of one sequence against D cached cells, for every layer of a model's shape, so
// the caches stream from memory as in generation (all layers' caches together exceed the
// last-level cache). Prints microseconds per layer, the cache bytes read per second and GFLOP/s
// (4 * d * D per query head: scores and values), medians of 7 repetitions of at least 20 ms.
// Usage: attention_bench [--shape llama-1b|qwen3|mla] [--depth 1024,4096,8192] [--tokens 1]
//                        [--threads 2] [--cache f16|q8_0] [--layers 16]
//   llama-1b: 32 query heads, 8 KV heads, d 64; qwen3: 32 / 4, d 128;
//   mla: DeepSeek's latent cache, 16 heads on one 576-value row (values: its first 512).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/aligned_memory.h"
#include "cpu_ops.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

using namespace ikllm;

namespace {

// A cache buffer as the CPU backend allocates one: 64-byte aligned, huge pages advised before the
// first write.
struct Buffer {
    uint8_t* p = nullptr;
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { aligned_free64(p); }
    void resize(size_t n) {
        p = static_cast<uint8_t*>(aligned_alloc64(n));
        advise_huge_pages(p, n);
    }
    uint8_t* data() { return p; }
};

struct Shape {
    int64_t n_head, n_head_kv, d_k, d_v;
    bool latent;
};

Shape shape_named(const std::string& s) {
    if (s == "qwen3") return {32, 4, 128, 128, false};
    if (s == "mla") return {16, 1, 576, 512, true};
    return {32, 8, 64, 64, false};
}

std::vector<int64_t> int_list(const std::string& s) {
    std::vector<int64_t> v;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoll(x));
    return v;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

Tensor view(void* data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2) {
    Tensor t;
    t.type = type;
    t.data = data;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.ne[3] = 1;
    t.nb[0] = quant::find_type(type)->block_elems == 1 ? quant::find_type(type)->block_bytes : 0;
    t.nb[1] = nb1;
    t.nb[2] = nb2;
    t.nb[3] = nb2 * (size_t)ne2;
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    std::string shape_name = "llama-1b", cache = "f16";
    std::vector<int64_t> depths{1024, 4096, 8192};
    int64_t T = 1, layers = 16;
    int threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--shape") shape_name = v;
        else if (k == "--depth") depths = int_list(v);
        else if (k == "--tokens") T = std::stoll(v);
        else if (k == "--threads") threads = std::stoi(v);
        else if (k == "--cache") cache = v;
        else if (k == "--layers") layers = std::stoll(v);
        else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return 2;
        }
    }
    const Shape sh = shape_named(shape_name);
    const uint32_t type = cache == "q8_0" ? quant::T_Q8_0 : quant::T_F16;
    cpu::ThreadPool pool(threads);
    cpu::Scratch scratch;
    uint32_t lcg = 1;  // cheap values in [-2, 2): setting up gigabytes of cache stays quick
    const auto nd = [&lcg](auto&) { return (float)((lcg = lcg * 1664525u + 1013904223u) >> 8) * (4.0f / 16777216.0f) - 2.0f; };
    int rng = 0;
    std::printf("attention %s (%lld q heads, %lld kv heads, d_k %lld, d_v %lld), %s cache, %lld query tokens, %d threads, "
                "%lld layers cycled\n\n",
                shape_name.c_str(), (long long)sh.n_head, (long long)sh.n_head_kv, (long long)sh.d_k, (long long)sh.d_v,
                cache.c_str(), (long long)T, threads, (long long)layers);
    std::printf("| depth | us per layer | cache GB/s | GFLOP/s |\n|---:|---:|---:|---:|\n");
    for (int64_t D : depths) {
        const int64_t n_cells = D + T;
        const size_t krb = quant::kv_row_bytes(type, sh.d_k), vrb = quant::kv_row_bytes(type, sh.d_v);
        std::vector<Buffer> kc(layers), vc(layers);
        std::vector<float> row(std::max(sh.d_k, sh.d_v));
        for (int64_t l = 0; l < layers; ++l) {
            kc[l].resize(krb * sh.n_head_kv * n_cells);
            for (int64_t i = 0; i < sh.n_head_kv * n_cells; ++i) {
                for (auto& x : row) x = nd(rng);
                quant::kv_encode_row(type, row.data(), kc[l].data() + i * krb, sh.d_k);
            }
            if (!sh.latent) {
                vc[l].resize(vrb * sh.n_head_kv * n_cells);
                for (int64_t i = 0; i < sh.n_head_kv * n_cells; ++i) {
                    for (auto& x : row) x = nd(rng);
                    quant::kv_encode_row(type, row.data(), vc[l].data() + i * vrb, sh.d_v);
                }
            }
        }
        std::vector<int32_t> cell_pos(n_cells), pos(T), seq_ids(T, 0);
        std::vector<uint64_t> seqs(n_cells, 1);
        for (int64_t c = 0; c < n_cells; ++c) cell_pos[c] = (int32_t)c;
        for (int64_t t = 0; t < T; ++t) pos[t] = (int32_t)(D + t);
        std::vector<float> q(sh.d_k * sh.n_head * T), out(sh.d_v * sh.n_head * T);
        for (auto& x : q) x = nd(rng);
        Tensor Q = view(q.data(), quant::T_F32, sh.d_k, sh.n_head, T, 4 * sh.d_k, 4 * sh.d_k * sh.n_head);
        Tensor O = view(out.data(), quant::T_F32, sh.d_v * sh.n_head, T, 1, 4 * sh.d_v * sh.n_head, 4 * sh.d_v * sh.n_head * T);
        std::vector<double> times;
        int64_t inner = 1;  // passes over the layers per repetition: at least ~20 ms each
        for (int rep = 0; rep < 8; ++rep) {
            const double t0 = now_s();
            for (int64_t it = 0; it < inner * layers; ++it) {
                const int64_t l = it % layers;
                Tensor K = view(kc[l].data(), type, sh.d_k, sh.n_head_kv, n_cells, krb, krb * sh.n_head_kv);
                Tensor V = sh.latent ? K : view(vc[l].data(), type, sh.d_v, sh.n_head_kv, n_cells, vrb, vrb * sh.n_head_kv);
                if (sh.latent) V.ne[0] = sh.d_v;
                Op op{};
                op.kind = OpKind::attention;
                op.src[0] = &Q;
                op.src[1] = &K;
                op.src[2] = &V;
                op.dst = &O;
                op.i32 = pos.data();
                op.n_i32 = T;
                op.seq_ids = seq_ids.data();
                op.kv.cell_pos = cell_pos.data();
                op.kv.cell_seqs = seqs.data();
                op.kv.seq_words = 1;
                op.kv.n_cells = (int32_t)n_cells;
                op.f[0] = 1.0f / std::sqrt((float)sh.d_k);
                cpu::op_attention(op, pool, scratch);
            }
            const double dt = now_s() - t0;
            if (rep == 0) inner = std::max<int64_t>(1, (int64_t)(0.02 / std::max(dt, 1e-6)));  // rep 0 warms up
            else times.push_back(dt / (double)(inner * layers));
        }
        std::sort(times.begin(), times.end());
        const double s = times[times.size() / 2];
        const double bytes = (double)n_cells * sh.n_head_kv * (double)(krb + (sh.latent ? 0 : vrb));
        const double flop = 2.0 * (double)(sh.d_k + sh.d_v) * (double)n_cells * (double)sh.n_head * (double)T;
        std::printf("| %lld | %.1f | %.1f | %.1f |\n", (long long)D, s * 1e6, bytes / s / 1e9, flop / s / 1e9);
    }
    return 0;
}
