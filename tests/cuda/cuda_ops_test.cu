// Op-by-op check of the CUDA backend: every op of backends/cuda/cuda_ops.cuh against the CPU
// backend's op (backends/cpu/cpu_ops.h) on random inputs, one line per case and a summary table.
//
//   element-wise / normalisation / rope / kv_store / attention / moe_route: GPU vs CPU with
//     per-element tolerances (kv_store and the moe_route ids: exact);
//   get_rows: bitwise equal to the CPU dequantization, for every weight type the GPU decodes;
//   mul_mat (+ bias), mul_mat_swiglu, mul_mat_heads (3-D weights, strided views as in the
//     deepseek2 graph), moe_ffn (separate and merged gate/up experts, unused slots -1, F16
//     rounding): weights are random floats quantized with the CPU registry. The CPU kernels
//     quantize activations to 8 bits, the GPU uses f32 (<= 8 tokens per weight matrix: the
//     matrix-vector kernel) or f16 (tensor cores), so both are compared with relative L2 errors
//     ||a - b|| / ||b|| against an exact double-precision product of the dequantized weights:
//     GPU vs exact must stay below 1e-5 (f32 path) or 2e-3 (f16 path); CPU vs exact and GPU vs
//     CPU are printed for information.
// Outputs are poisoned with NaN before each run (unwritten values fail), padding between rows
// must stay untouched, and input padding holds NaN (reads past a row fail).
//
// The int8 kernels (dp4a matrix-vector, int8 tensor cores) run for the types with an integer
// view unless IKLLM_CUDA_INT8=0 / IKLLM_CUDA_INT8_MMA=0 (as in the backend). They follow the reference's CPU numerics
// like the CPU backend, so a weight case passes when GPU vs exact OR GPU vs CPU is within the
// tolerance (the CPU's AMX bf16 kernels are turned off: IKLLM_AMX=0).
// Exit status: 0 all passed, 1 some case failed, 77 no usable CUDA device (CTest: skipped).
// `cuda_ops_test --cpu-only` runs only the CPU side of the weight cases against the exact
// references (checks the harness itself where there is no GPU); type names (q4_K iq4_k ...)
// restrict the weight ops to those types.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/fp16.h"
#include "cpu/cpu_ops.h"
#include "cpu/kernels/matmul.h"
#include "cuda/cuda_ops.cuh"
#include "cuda/act_round.cuh"
#include "cuda/act_round_kernel.cuh"
#include "cuda/matmul_kernels.cuh"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

using namespace ikllm;

namespace {

bool g_gpu = true;  // false with --cpu-only
std::vector<std::string> g_only;  // weight types named on the command line (empty: all)
std::mt19937 rng(7);
float rnd() { return std::uniform_real_distribution<float>(-1.f, 1.f)(rng); }
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- results -------------------------------------------------------------------------------

struct Summary {
    std::string op, type;
    int cases = 0, fails = 0;
    double gpu_exact = -1, cpu_exact = -1, gpu_cpu = -1;  // worst relative L2 errors (-1: n/a)
    double abs_diff = -1;                                  // worst max |gpu - cpu| (element-wise ops)
};
std::vector<Summary> g_summary;
int g_cases = 0, g_fails = 0;

Summary& summary(const std::string& op, const std::string& type) {
    for (Summary& s : g_summary)
        if (s.op == op && s.type == type) return s;
    g_summary.push_back({op, type});
    return g_summary.back();
}
void worst(double& slot, double v) {
    if (v < 0) return;
    if (slot < 0 || !(v <= slot)) slot = v;  // NaN / inf stick
}
void record(const std::string& op, const std::string& type, bool ok, double ge = -1, double ce = -1, double gc = -1,
            double ad = -1) {
    Summary& s = summary(op, type);
    ++s.cases;
    ++g_cases;
    if (!ok) {
        ++s.fails;
        ++g_fails;
    }
    worst(s.gpu_exact, ge);
    worst(s.cpu_exact, ce);
    worst(s.gpu_cpu, gc);
    worst(s.abs_diff, ad);
}

// Runs one case; an exception (CUDA error, unsupported op) fails it.
template <class F>
void guarded(const std::string& op, const std::string& type, const std::string& label, F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        std::printf("%-52s FAIL (exception: %s)\n", label.c_str(), e.what());
        record(op, type, false);
    }
}

// ---- device buffers ------------------------------------------------------------------------

struct Dev {
    void* p = nullptr;
    size_t n = 0;
    explicit Dev(size_t bytes) : n(bytes) {
        if (!g_gpu) return;
        IKLLM_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
        IKLLM_CUDA_CHECK(cudaMemset(p, 0, bytes ? bytes : 1));
    }
    ~Dev() {
        if (p) cudaFree(p);
    }
    Dev(const Dev&) = delete;
    Dev& operator=(const Dev&) = delete;
    void up(const void* h) { IKLLM_CUDA_CHECK(cudaMemcpy(p, h, n, cudaMemcpyHostToDevice)); }
    void down(void* h) { IKLLM_CUDA_CHECK(cudaMemcpy(h, p, n, cudaMemcpyDeviceToHost)); }
    void poison() { IKLLM_CUDA_CHECK(cudaMemset(p, 0xff, n)); }  // all-ones floats are NaN
};
template <class T>
struct Pair {  // host + device copies of one buffer
    std::vector<T> h;
    Dev d;
    explicit Pair(size_t n) : h(n), d(n * sizeof(T)) {}
    void up() { d.up(h.data()); }
    std::vector<T> got() {
        std::vector<T> r(h.size());
        d.down(r.data());
        return r;
    }
};
Tensor mk(void* data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2, size_t esz = 4) {
    Tensor t;
    t.type = type;
    t.ne[0] = ne0; t.ne[1] = ne1; t.ne[2] = ne2; t.ne[3] = 1;
    t.nb[0] = esz; t.nb[1] = nb1; t.nb[2] = nb2; t.nb[3] = nb2 * ne2;
    t.data = data;
    return t;
}
Tensor on(const Tensor& t, void* data) {  // the same view of a device buffer
    Tensor r = t;
    r.data = data;
    return r;
}
struct Env {
    struct S : cuda::Scratch {
        std::vector<void*> v;
        void* alloc(size_t b) override {
            void* p = nullptr;
            IKLLM_CUDA_CHECK(cudaMalloc(&p, b ? b : 1));
            v.push_back(p);
            return p;
        }
        void reset() {
            for (void* p : v) cudaFree(p);
            v.clear();
        }
        ~S() override { reset(); }
    } s;
    cuda::OpEnv e;
    Env() {
        e.stream = nullptr;
        e.scratch = &s;
        e.sm_count = 1;
        const char* st = std::getenv("IKLLM_CUDA_STAGED");  // 1: the staged matrix-vector kernel
        e.staged = st && std::string(st) == "1";
        const char* i8 = std::getenv("IKLLM_CUDA_INT8");  // 0: not the int8 (dp4a) matrix-vector kernel
        e.int8 = !(i8 && std::string(i8) == "0");
        const char* mma = std::getenv("IKLLM_CUDA_INT8_MMA");  // 0: not the int8 tensor-core kernel
        e.int8_mma = !(mma && std::string(mma) == "0");
        // 1: programmatic dependent launch / L2 prefetch of weights (compute capability 9.0 on, as
        // the executor has it), the kernels then on a stream of their own: a blocking one, so the
        // test's synchronous copies on the legacy stream stay ordered with them.
        int major = 0;
        IKLLM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
        const char* pdl = std::getenv("IKLLM_CUDA_PDL");
        e.pdl = major >= 9 && pdl && std::string(pdl) == "1";
        const char* l2 = std::getenv("IKLLM_CUDA_L2_PREFETCH");
        e.l2_prefetch = major >= 9 && l2 && std::string(l2) == "1";
        if (e.pdl) IKLLM_CUDA_CHECK(cudaStreamCreateWithFlags(&e.stream, cudaStreamDefault));
        const char* mu = std::getenv("IKLLM_CUDA_MV_UNROLL");  // 4: the unroll-4 single-token int8 kernel
        e.mv_unroll = mu && std::string(mu) == "4" ? 4 : 2;
    }
    ~Env() {
        if (e.stream) cudaStreamDestroy(e.stream);
    }
};
void dsync(Env& env) {
    IKLLM_CUDA_CHECK(cudaDeviceSynchronize());
    env.s.reset();
}

// Element-wise comparison for the non-weight ops.
void cmp(const std::string& op, const std::string& what, const std::vector<float>& a, const std::vector<float>& b,
         float rtol, float atol) {
    double maxd = 0;
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs((double)a[i] - b[i]);
        const bool same_nan = std::isnan(a[i]) && std::isnan(b[i]);
        if (!same_nan && !(d <= atol + rtol * std::fabs(b[i]))) {
            if (bad < 3) std::printf("  %s[%zu]: gpu %.9g cpu %.9g\n", what.c_str(), i, a[i], b[i]);
            ++bad;
        }
        if (d > maxd) maxd = d;
    }
    std::printf("%-52s %s (max abs diff %.3g, %zu bad of %zu)\n", what.c_str(), bad ? "FAIL" : "ok", maxd, bad, a.size());
    record(op, "-", bad == 0, -1, -1, -1, maxd);
}

// ---- the non-weight ops ---------------------------------------------------------------------

void test_basic(cpu::ThreadPool& pool, Env& env) {
    // rms_norm on a strided view, + gain
    guarded("rms_norm", "-", "rms_norm", [&] {
        const int64_t ne0 = 96, ne1 = 5, ne2 = 3, rowf = 100;
        Pair<float> x(rowf * ne1 * ne2), g(ne0), yc(ne0 * ne1 * ne2), yg(ne0 * ne1 * ne2);
        for (auto& v : x.h) v = rnd() * 3;
        for (auto& v : g.h) v = rnd();
        x.up(); g.up();
        Tensor X = mk(x.h.data(), 0, ne0, ne1, ne2, 4 * rowf, 4 * rowf * ne1), G = mk(g.h.data(), 0, ne0, 1, 1, 4 * ne0, 4 * ne0);
        Tensor Y = mk(yc.h.data(), 0, ne0, ne1, ne2, 4 * ne0, 4 * ne0 * ne1);
        Op op; op.kind = OpKind::rms_norm; op.src[0] = &X; op.src[1] = &G; op.dst = &Y; op.f[0] = 1e-5f;
        cpu::op_rms_norm(op, pool);
        Tensor Xd = on(X, x.d.p), Gd = on(G, g.d.p), Yd = on(Y, yg.d.p);
        Op od = op; od.src[0] = &Xd; od.src[1] = &Gd; od.dst = &Yd;
        cuda::run_rms_norm(od, env.e); dsync(env);
        cmp("rms_norm", "rms_norm", yg.got(), yc.h, 1e-6f, 1e-7f);
    });
    // add / swiglu on [70, 9]
    guarded("add", "-", "add / swiglu", [&] {
        Pair<float> a(70 * 9), b(70 * 9), c1(70 * 9), c2(70 * 9);
        for (auto& v : a.h) v = rnd() * 8;
        for (auto& v : b.h) v = rnd();
        a.up(); b.up();
        Tensor A = mk(a.h.data(), 0, 70, 9, 1, 280, 280 * 9), B = mk(b.h.data(), 0, 70, 9, 1, 280, 280 * 9), C = mk(c1.h.data(), 0, 70, 9, 1, 280, 280 * 9);
        Tensor Ad = on(A, a.d.p), Bd = on(B, b.d.p), Cd = on(C, c2.d.p);
        Op o2; o2.kind = OpKind::add; o2.src[0] = &A; o2.src[1] = &B; o2.dst = &C; cpu::op_add(o2, pool);
        Op o2d = o2; o2d.src[0] = &Ad; o2d.src[1] = &Bd; o2d.dst = &Cd; cuda::run_add(o2d, env.e); dsync(env);
        cmp("add", "add", c2.got(), c1.h, 0, 0);
        o2.kind = o2d.kind = OpKind::swiglu;
        cpu::op_swiglu(o2, pool);
        cuda::run_swiglu(o2d, env.e); dsync(env);
        cmp("swiglu", "swiglu", c2.got(), c1.h, 1e-6f, 1e-30f);
    });
    // copy between strided views [40, 3, 5]
    guarded("copy", "-", "copy", [&] {
        Pair<float> s(50 * 4 * 5), d1(45 * 3 * 6), d2(45 * 3 * 6);
        for (auto& v : s.h) v = rnd();
        s.up(); d2.up();
        Tensor S = mk(s.h.data(), 0, 40, 3, 5, 200, 800), D = mk(d1.h.data(), 0, 40, 3, 5, 180, 540);
        D.nb[2] = 180 * 3; D.nb[3] = D.nb[2] * 5;
        Tensor Sd = on(S, s.d.p), Dd = on(D, d2.d.p);
        Op o3; o3.kind = OpKind::copy; o3.src[0] = &S; o3.dst = &D; cpu::op_copy(o3, pool);
        Op o3d = o3; o3d.src[0] = &Sd; o3d.dst = &Dd; cuda::run_copy(o3d, env.e); dsync(env);
        cmp("copy", "copy", d2.got(), d1.h, 0, 0);
    });
    guarded("gather_rows", "-", "gather_rows", [&] {
        Pair<float> gs(50 * 10), g1(50 * 4), g2(50 * 4);
        Pair<int32_t> ids(4);
        for (auto& v : gs.h) v = rnd();
        ids.h = {3, 7, 0, 9};
        gs.up(); ids.up();
        Tensor GS = mk(gs.h.data(), 0, 50, 10, 1, 200, 2000), GD = mk(g1.h.data(), 0, 50, 4, 1, 200, 800);
        Tensor GSd = on(GS, gs.d.p), GDd = on(GD, g2.d.p);
        Op o4; o4.kind = OpKind::gather_rows; o4.src[0] = &GS; o4.dst = &GD; o4.i32 = ids.h.data(); o4.n_i32 = 4; cpu::op_gather_rows(o4, pool);
        Op o4d = o4; o4d.src[0] = &GSd; o4d.dst = &GDd; o4d.i32 = (int32_t*)ids.d.p; cuda::run_gather_rows(o4d, env.e); dsync(env);
        cmp("gather_rows", "gather_rows", g2.got(), g1.h, 0, 0);
    });
}

void test_rope(cpu::ThreadPool& pool, Env& env) {
    struct RC { const char* n; RopeMode m; int nd; float base, fs, ext, af; int nco; bool ff; };
    const RC rcs[] = {{"rope norm", RopeMode::norm, 64, 10000, 1, 0, 1, 0, false},
                      {"rope neox", RopeMode::neox, 64, 1e6f, 1, 0, 1, 0, false},
                      {"rope neox yarn", RopeMode::neox, 64, 1e6f, 0.25f, 1, 1, 32768, false},
                      {"rope norm yarn (ds)", RopeMode::norm, 64, 10000, 1.f / 40, 1, 0.7f, 4096, false},
                      {"rope norm freq_factors", RopeMode::norm, 64, 500000, 1, 0, 1, 0, true}};
    for (const RC& r : rcs)
        guarded("rope", "-", r.n, [&] {
            const int64_t H = 4, T = 6, rowf = 80;
            Pair<float> x(rowf * H * T), ff(32);
            Pair<int32_t> pos(T);
            for (auto& v : x.h) v = rnd();
            for (int j = 0; j < 32; ++j) ff.h[j] = 1.0f + j * 0.2f;
            pos.h = {0, 1, 5, 100, 4000, 30000};
            x.up(); ff.up(); pos.up();
            RopeParams p; p.mode = r.m; p.n_dims = r.nd; p.freq_base = r.base; p.freq_scale = r.fs; p.ext_factor = r.ext;
            p.attn_factor = r.af; p.n_ctx_orig = r.nco;
            Tensor X = mk(x.h.data() + 8, 0, 64, H, T, 4 * rowf, 4 * rowf * H);  // view at offset 8 floats
            Op op; op.kind = OpKind::rope; op.dst = &X; op.i32 = pos.h.data(); op.n_i32 = T; op.rope = p;
            if (r.ff) op.rope.freq_factors = ff.h.data();
            cpu::op_rope(op, pool);
            Tensor Xd = on(X, (float*)x.d.p + 8);
            Op od = op; od.dst = &Xd; od.i32 = (int32_t*)pos.d.p;
            if (r.ff) od.rope.freq_factors = (float*)ff.d.p;
            cuda::run_rope(od, env.e); dsync(env);
            cmp("rope", r.n, x.got(), x.h, 2e-6f, 2e-6f);
        });
}

void test_kv_store(cpu::ThreadPool& pool, Env& env) {
    for (uint32_t type : {quant::T_F32, quant::T_F16, quant::T_BF16, quant::T_Q8_0}) {
        const std::string label = std::string("kv_store ") + quant::kv_type_name(type);
        guarded("kv_store", "-", label, [&] {
            const int64_t width = 256, T = 5, cells = 12;
            const size_t rb = quant::kv_row_bytes(type, width);
            Pair<float> src(300 * T);
            Pair<uint8_t> cache(rb * cells);
            Pair<int32_t> cl(T);
            for (auto& v : src.h) v = rnd() * 4;
            src.h[7] = 0.5f; src.h[8] = 1e-8f;
            cl.h = {3, 0, 11, 7, 5};
            src.up(); cache.up(); cl.up();
            Tensor S = mk(src.h.data(), 0, width, T, 1, 1200, 1200 * T);
            Tensor Cc = mk(cache.h.data(), type, width, cells, 1, rb, rb * cells, 0);
            Op op; op.kind = OpKind::kv_store; op.src[0] = &S; op.dst = &Cc; op.i32 = cl.h.data(); op.n_i32 = T;
            cpu::op_kv_store(op, pool);
            Tensor Sd = on(S, src.d.p), Cd = on(Cc, cache.d.p);
            Op od = op; od.src[0] = &Sd; od.dst = &Cd; od.i32 = (int32_t*)cl.d.p;
            cuda::run_kv_store(od, env.e); dsync(env);
            const std::vector<uint8_t> g = cache.got();
            const bool ok = std::memcmp(g.data(), cache.h.data(), g.size()) == 0;
            std::printf("%-52s %s (bytes)\n", label.c_str(), ok ? "ok" : "FAIL");
            record("kv_store", "-", ok);
        });
    }
}

void test_attention(cpu::ThreadPool& pool, cpu::Scratch& cs, Env& env) {
    struct AC { const char* n; int dk, dv, H, Hkv; bool mla; };
    const AC acs[] = {{"attn d64 gqa 8/2", 64, 64, 8, 2, false}, {"attn d128 4/4", 128, 128, 4, 4, false},
                      {"attn d256 16/2", 256, 256, 16, 2, false}, {"attn d80 6/3", 80, 80, 6, 3, false},
                      {"attn d128 gqa 14/2", 128, 128, 14, 2, false},  // groups of 7 (Qwen2.5-7B): rows span tokens
                      {"attn mla 576/512 h16", 576, 512, 16, 1, true}};
    // T = 7: the float kernel; T = 40: a prompt batch (with an f16 cache and heads of <= 128 the
    // tensor-core kernel, attention_mma.cu), one query row scaled into f16's range.
    for (const int64_t T : {1, 7, 40})
    for (const AC& ac : acs)
        for (uint32_t type : {quant::T_F32, quant::T_F16, quant::T_BF16, quant::T_Q8_0}) {
            if (type == quant::T_Q8_0 && ac.dk % 32) continue;
            const std::string label = std::string(ac.n) + " " + quant::kv_type_name(type) + " T=" + std::to_string(T);
            guarded("attention", "-", label, [&] {
                // (T = 40 over 60 cells: the MLA kernel without a cell split; 1 and 7 over 150: with one)
                const int64_t N = T == 40 ? 60 : 150;
                const int sw = 2;
                Pair<float> q((size_t)ac.dk * ac.H * T), o1((size_t)ac.dv * ac.H * T), o2((size_t)ac.dv * ac.H * T);
                for (auto& v : q.h) v = rnd();
                // The batch: every query value times 2^18 (beyond f16's range for the tensor-core
                // kernels, which scale such rows down), the score scale divided by it.
                const float q_up = T > 7 ? 262144.0f : 1.0f;
                for (auto& v : q.h) v *= q_up;
                // cache: K rows [dk, Hkv, N]; V separate [dv, Hkv, N] unless MLA
                const size_t krb = quant::kv_row_bytes(type, ac.dk), vrb = quant::kv_row_bytes(type, ac.dv);
                Pair<uint8_t> kc(krb * ac.Hkv * N), vc(ac.mla ? 1 : vrb * ac.Hkv * N);
                std::vector<float> row(std::max(ac.dk, ac.dv));
                // bf16 rows span a wide range (the tensor-core kernels scale each 32 columns into
                // f16's): K blocks of 2^-20 among ordinary ones (which blocks: by cell), V column
                // blocks of 1, 2^10 and 2^20 (the same for every cell: outputs keep a uniform scale).
                const bool wide = type == quant::T_BF16;
                auto block_scale = [&](size_t i, int64_t r, bool key) {
                    const int64_t b = (int64_t)i / 32;
                    return !wide ? 1.0f : key ? ((b + r) % 3 == 0 ? 0x1p-20f : 1.0f) : std::ldexp(1.0f, (int)(10 * (b % 3)));
                };
                for (int64_t r = 0; r < ac.Hkv * N; ++r) {
                    for (size_t i = 0; i < row.size(); ++i) row[i] = rnd() * 2 * block_scale(i, r, true);
                    quant::kv_encode_row(type, row.data(), kc.h.data() + r * krb, ac.dk);
                    if (!ac.mla) {
                        for (size_t i = 0; i < row.size(); ++i) row[i] = rnd() * block_scale(i, r, false);
                        quant::kv_encode_row(type, row.data(), vc.h.data() + r * vrb, ac.dv);
                    }
                }
                // cells: seq 0 at even cells pos c/2, seq 70 (word 1) at odd cells; a few free / shared cells
                Pair<int32_t> cp(N), pos(T), sid(T);
                Pair<uint64_t> cs2((size_t)N * sw);
                for (int64_t c = 0; c < N; ++c) {
                    cp.h[c] = (int32_t)(c / 2);
                    cs2.h[c * sw] = (c % 2 == 0) ? 1ull : 0ull;
                    cs2.h[c * sw + 1] = (c % 2 == 1) ? (1ull << 6) : 0ull;
                    if (c % 17 == 5) cp.h[c] = -1;                    // free cell
                    if (c % 23 == 4) cs2.h[c * sw + 1] |= 1ull << 6;  // shared by both
                }
                pos.h = {0, 10, 40, 74, 3, 74, 20};
                sid.h = {0, 0, 0, 0, 70, 70, 5};  // seq 5 holds nothing: zeros
                if (T == 1) {  // a generation step late in sequence 70 (the MLA kernel splits the cells)
                    pos.h = {74};
                    sid.h = {70};
                }
                pos.h.resize((size_t)T);
                sid.h.resize((size_t)T);
                for (int64_t t = 7; t < T; ++t) {  // the batch: both sequences, a run of positions
                    pos.h[t] = (int32_t)(t < 30 ? 30 + t : (t * 7) % 75);
                    sid.h[t] = t == 33 ? 5 : (t < 30 ? 0 : 70);
                }
                q.up(); kc.up(); vc.up(); cp.up(); pos.up(); sid.up(); cs2.up();
                Tensor Q = mk(q.h.data(), 0, ac.dk, ac.H, T, 4 * ac.dk, 4 * ac.dk * ac.H);
                Tensor K = mk(kc.h.data(), type, ac.dk, ac.Hkv, N, krb, krb * ac.Hkv, 0);
                Tensor V = ac.mla ? K : mk(vc.h.data(), type, ac.dv, ac.Hkv, N, vrb, vrb * ac.Hkv, 0);
                if (ac.mla) V.ne[0] = ac.dv;
                Tensor O = mk(o1.h.data(), 0, ac.dv * ac.H, T, 1, 4 * ac.dv * ac.H, 4 * ac.dv * ac.H * T);
                Op op; op.kind = OpKind::attention; op.src[0] = &Q; op.src[1] = &K; op.src[2] = &V; op.dst = &O;
                op.i32 = pos.h.data(); op.n_i32 = T; op.seq_ids = sid.h.data();
                op.kv.cell_pos = cp.h.data(); op.kv.cell_seqs = cs2.h.data(); op.kv.seq_words = sw; op.kv.n_cells = (int32_t)N;
                op.f[0] = 1.0f / std::sqrt((float)ac.dk) / q_up;
                cpu::op_attention(op, pool, cs);
                Tensor Qd = on(Q, q.d.p), Kd = on(K, kc.d.p), Vd = on(V, ac.mla ? kc.d.p : vc.d.p), Od = on(O, o2.d.p);
                o2.d.poison();
                Op od = op; od.src[0] = &Qd; od.src[1] = &Kd; od.src[2] = &Vd; od.dst = &Od;
                od.i32 = (int32_t*)pos.d.p; od.seq_ids = (int32_t*)sid.d.p;
                od.kv.cell_pos = (int32_t*)cp.d.p; od.kv.cell_seqs = (uint64_t*)cs2.d.p;
                cuda::run_attention(od, env.e); dsync(env);
                std::vector<float> got = o2.got(), want = o1.h;
                if (wide)  // each output column back to the scale of ordinary V values (exact: powers of two)
                    for (size_t i = 0; i < got.size(); ++i) {
                        const float f = block_scale((size_t)((int64_t)i % ac.dv), 0, false);
                        got[i] /= f;
                        want[i] /= f;
                    }
                cmp("attention", label, got, want, 1e-4f, 2e-6f);
            });
        }
}

void test_moe_route(cpu::ThreadPool& pool, Env& env) {
    cpu::Scratch route_scratch;
    // cfg 4, 5: DeepSeek's 256 experts / 8 chosen, and a count that is no multiple of 32 (the
    // top-k's warp reduction: several experts per lane, lanes with fewer).
    for (int cfg = 0; cfg < 6; ++cfg) {
        const std::string label = "moe_route cfg " + std::to_string(cfg);
        guarded("moe_route", "-", label, [&] {
            const int64_t ne = cfg < 4 ? 64 : cfg == 4 ? 256 : 100, T = 33, k = cfg < 4 ? 6 : 8;
            Pair<float> lg(ne * T), bias(ne), w1(k * T), w2(k * T);
            Pair<int32_t> id1(k * T), id2(k * T);
            for (auto& v : lg.h) v = rnd() * 4;
            for (int64_t i = 0; i < ne; ++i) lg.h[5 * ne + i] = 0.25f;  // all ties for token 5
            lg.h[6 * ne + 3] = lg.h[6 * ne + 9] = 5.0f;                  // a tie at the top
            lg.h[7 * ne + 40] = lg.h[7 * ne + 72] = lg.h[7 * ne + 8] = 6.0f;  // three, across lanes and rounds
            for (auto& v : bias.h) v = rnd() * 0.1f;
            lg.up(); bias.up();
            Tensor L = mk(lg.h.data(), 0, ne, T, 1, 4 * ne, 4 * ne * T), Bt = mk(bias.h.data(), 0, ne, 1, 1, 4 * ne, 4 * ne);
            Tensor W = mk(w1.h.data(), 0, k, T, 1, 4 * k, 4 * k * T), I = mk(id1.h.data(), quant::T_I32, k, T, 1, 4 * k, 4 * k * T);
            Op op; op.kind = OpKind::moe_route; op.src[0] = &L; op.dst = &W; op.aux = &I;
            op.moe.n_used = (int32_t)k;
            op.moe.gating = cfg % 2 ? MoeGating::sigmoid : MoeGating::softmax;  // (cfg 5: sigmoid + bias)
            if (cfg % 2) op.src[1] = &Bt;
            op.moe.norm = cfg >= 1;
            op.moe.scale = cfg == 2 ? 2.5f : 1.0f;
            if (cfg == 3) { op.moe.ser_max = 3; op.moe.ser_frac = 0.3f; }
            cpu::op_moe_route(op, pool, route_scratch);
            Tensor Ld = on(L, lg.d.p), Bd = on(Bt, bias.d.p), Wd = on(W, w2.d.p), Id = on(I, id2.d.p);
            Op od = op; od.src[0] = &Ld; if (op.src[1]) od.src[1] = &Bd; od.dst = &Wd; od.aux = &Id;
            cuda::run_moe_route(od, env.e); dsync(env);
            const bool ok = id2.got() == id1.h;
            std::printf("%-52s %s\n", (label + " ids").c_str(), ok ? "ok" : "FAIL");
            record("moe_route", "-", ok);
            cmp("moe_route", label + " weights", w2.got(), w1.h, 1e-6f, 0);
        });
    }
}

// ---- weight ops ------------------------------------------------------------------------------

// `rows` rows of K random floats quantized with the CPU registry; deq = the registry's decoding.
struct QMat {
    uint32_t type = 0;
    int64_t K = 0, rows = 0;
    size_t rb = 0;
    std::vector<uint8_t> q;
    std::vector<float> deq;
    std::unique_ptr<Dev> d;
    const void* dev() const { return d ? d->p : nullptr; }
};

void encode_float_row(uint32_t type, const float* src, uint8_t* dst, int64_t K) {
    for (int64_t i = 0; i < K; ++i) {
        if (type == quant::T_F32) std::memcpy(dst + 4 * i, &src[i], 4);
        else {
            const uint16_t h = type == quant::T_F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
            std::memcpy(dst + 2 * i, &h, 2);
        }
    }
}
bool can_make_weights(const quant::TypeTraits& tt) {
    if (tt.interleave != 1 || !tt.dequant) return false;
    return tt.quantize || tt.id == quant::T_F32 || tt.id == quant::T_F16 || tt.id == quant::T_BF16;
}

QMat make_weights(cpu::ThreadPool& pool, uint32_t type, int64_t K, int64_t rows) {
    const quant::TypeTraits* tt = quant::find_type(type);
    QMat m;
    m.type = type;
    m.K = K;
    m.rows = rows;
    m.rb = quant::row_bytes(*tt, K);
    std::vector<float> src((size_t)(K * rows));
    for (int64_t r = 0; r < rows; ++r) {
        const float scale = 0.25f + 0.125f * (float)(r % 7);  // rows of different magnitudes
        for (int64_t i = 0; i < K; ++i) src[(size_t)(r * K + i)] = rnd() * scale;
    }
    m.q.resize(m.rb * (size_t)rows);
    m.deq.resize((size_t)(K * rows));
    pool.parallel_for(rows, [&](int64_t r, int) {
        uint8_t* dst = m.q.data() + m.rb * (size_t)r;
        if (tt->quantize) tt->quantize(src.data() + r * K, dst, K, nullptr);
        else encode_float_row(type, src.data() + r * K, dst, K);
        tt->dequant(dst, m.deq.data() + r * K, K);
    });
    if (g_gpu) {
        m.d = std::make_unique<Dev>(m.q.size());
        m.d->up(m.q.data());
    }
    return m;
}

// Weight tensor of a QMat: [K, N] (H = 1) or [K, N, H] with rows = N * H.
Tensor weight_tensor(const QMat& m, int64_t N, int64_t H, void* data, const char* name) {
    Tensor t = mk(data, m.type, m.K, N, H, m.rb, m.rb * (size_t)N, 0);
    t.nb[0] = (size_t)quant::find_type(m.type)->block_bytes;
    t.name = name;
    return t;
}

double dot(const float* w, const float* x, int64_t K) {
    double s = 0;
    for (int64_t i = 0; i < K; ++i) s += (double)w[i] * (double)x[i];
    return s;
}
// The GPU rounds activations like the CPU's 8-bit formats for quantized weights
// (backends/cuda/act_round.cuh); the exact reference uses the same rounded values.
std::vector<float> rx(uint32_t type, const float* x, int64_t K) {
    std::vector<float> r(x, x + K);
    cuda::act_round_row_host(cuda::act_round_for(type), r.data(), K);
    return r;
}

double silu(double g) { return g / (1.0 + std::exp(-g)); }
float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

// A strided f32 output [cols (fastest), rows] inside a buffer: where the values live.
struct OutLayout {
    size_t size;                // floats in the buffer
    std::vector<size_t> where;  // index in the buffer of value i (values in [row][col] order)
};
OutLayout layout_2d(int64_t cols, int64_t rows, size_t stride, size_t offset = 0) {
    OutLayout l;
    l.size = offset + stride * (size_t)rows;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) l.where.push_back(offset + stride * (size_t)r + (size_t)c);
    return l;
}

struct Metrics {
    double rel = 0;   // ||a - ref|| / ||ref||, inf when a value of `a` is not finite
    size_t bad = 0;   // non-finite values
};
Metrics rel_err(const std::vector<float>& buf, const OutLayout& l, const std::vector<double>& ref) {
    Metrics m;
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const float a = buf[l.where[i]];
        if (!std::isfinite(a)) {
            ++m.bad;
            continue;
        }
        num += (a - ref[i]) * (a - ref[i]);
        den += ref[i] * ref[i];
    }
    m.rel = m.bad ? INFINITY : std::sqrt(num / std::max(den, 1e-300));
    return m;
}
std::vector<double> as_ref(const std::vector<float>& buf, const OutLayout& l) {
    std::vector<double> r(l.where.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = buf[l.where[i]];
    return r;
}
// Floats of the buffer outside the layout must still hold the poison pattern.
size_t pad_clobbered(const std::vector<float>& buf, const OutLayout& l) {
    std::vector<char> used(buf.size(), 0);
    for (size_t w : l.where) used[w] = 1;
    size_t n = 0;
    for (size_t i = 0; i < buf.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &buf[i], 4);
        if (!used[i] && u != 0xffffffffu) ++n;
    }
    return n;
}

// Runs the GPU op on a poisoned output and judges it against the exact and CPU results.
struct Judge {
    std::string op, type, label;
    double tol;
    double cpu_tol = -1;  // >= 0: also within this of the CPU backend (kernels that follow its numerics)
};
void judge(const Judge& j, const std::vector<float>& gpu_buf, const std::vector<float>& cpu_buf, const OutLayout& l,
           const std::vector<double>& exact) {
    const Metrics ce = rel_err(cpu_buf, l, exact);
    if (!g_gpu) {
        std::printf("%-52s cpu-exact %.2e%s\n", j.label.c_str(), ce.rel, ce.bad ? " (CPU wrote non-finite values)" : "");
        record(j.op, j.type, ce.bad == 0, -1, ce.rel);
        return;
    }
    const Metrics ge = rel_err(gpu_buf, l, exact);
    const Metrics gc = ce.bad ? Metrics{INFINITY, 0} : rel_err(gpu_buf, l, as_ref(cpu_buf, l));
    const size_t clob = pad_clobbered(gpu_buf, l);
    // Close to the exact product, or to the CPU backend: the int8 kernels follow the reference's
    // CPU numerics (saturating sums, re-encoded batch forms: backends/cuda/int8_codes.cuh),
    // which are up to ~7 % away from the exact product for the IQ4 types.
    const bool ok = ge.bad == 0 && clob == 0 && (ge.rel < j.tol || gc.rel < j.tol) && (j.cpu_tol < 0 || gc.rel < j.cpu_tol);
    std::printf("%-52s gpu-exact %.2e (tol %.0e)  cpu-exact %.2e  gpu-cpu %.2e", j.label.c_str(), ge.rel, j.tol, ce.rel, gc.rel);
    if (j.cpu_tol >= 0) std::printf(" (tol %.0e)", j.cpu_tol);
    std::printf("  %s", ok ? "ok" : "FAIL");
    if (ge.bad) std::printf(" [%zu NaN/inf/unwritten outputs]", ge.bad);
    if (clob) std::printf(" [%zu padding floats overwritten]", clob);
    std::printf("\n");
    record(j.op, j.type, ok, ge.rel, ce.rel, gc.rel);
}

// f32 activations [K, T] with row stride xs floats; padding holds NaN. Normally distributed
// like real activations. (The CPU's IQ4_XS / IQ4_K-family and KT kernels follow the reference's
// numerics for calls of < 32 tokens, which drift from the exact product: cpu-exact up to ~0.1
// with these inputs, ~0.2 with uniform ones. Only GPU vs exact is judged.)
std::vector<float> activations(int64_t K, int64_t rows, size_t xs) {
    std::vector<float> x(xs * (size_t)rows, kNaN);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t i = 0; i < K; ++i) x[(size_t)t * xs + i] = nd(rng);
    return x;
}
std::unique_ptr<Dev> upload(const void* h, size_t bytes) {
    if (!g_gpu) return nullptr;
    auto d = std::make_unique<Dev>(bytes);
    d->up(h);
    return d;
}
std::unique_ptr<Dev> poisoned(size_t bytes) {
    if (!g_gpu) return nullptr;
    auto d = std::make_unique<Dev>(bytes);
    d->poison();
    return d;
}
std::vector<float> download(Dev* d, size_t floats) {
    std::vector<float> r(floats);
    if (d) d->down(r.data());
    return r;
}
void* dp(const std::unique_ptr<Dev>& d) { return d ? d->p : nullptr; }
// F32 weights take the float kernels at every batch size (routers: matmul.cu mat_is_vector).
double tol_for(int64_t tokens_per_matrix, uint32_t type = 1) {
    return tokens_per_matrix <= 8 || type == quant::T_F32 ? 1e-5 : 2e-3;
}

void test_get_rows(cpu::ThreadPool& pool, Env& env, const QMat& W, const std::string& tname) {
    const int64_t K = W.K, rows = W.rows;
    const std::vector<int32_t> ids = {0, (int32_t)rows - 1, 7, 7, 13, 21, 2};
    const int64_t n = (int64_t)ids.size();
    const size_t ds = (size_t)K + 8;
    const std::string label = "get_rows " + tname + " K=" + std::to_string(K);
    guarded("get_rows", tname, label, [&] {
        Tensor Wt = weight_tensor(W, rows, 1, (void*)W.q.data(), "table");
        const OutLayout l = layout_2d(K, n, ds);
        std::vector<float> yc(l.size, kNaN);
        Tensor Y = mk(yc.data(), 0, K, n, 1, 4 * ds, 4 * ds * n);
        Op op; op.kind = OpKind::get_rows; op.src[0] = &Wt; op.dst = &Y; op.i32 = ids.data(); op.n_i32 = n;
        cpu::op_get_rows(op, pool);
        if (!g_gpu) return;
        auto dids = upload(ids.data(), sizeof(int32_t) * ids.size());
        auto dy = poisoned(4 * l.size);
        Tensor Wd = on(Wt, (void*)W.dev()), Yd = on(Y, dp(dy));
        Op od = op; od.src[0] = &Wd; od.dst = &Yd; od.i32 = (const int32_t*)dp(dids);
        cuda::run_get_rows(od, env.e); dsync(env);
        const std::vector<float> yg = download(dy.get(), l.size);
        size_t diff = 0;
        for (size_t w : l.where) diff += std::memcmp(&yg[w], &yc[w], 4) != 0;
        const size_t clob = pad_clobbered(yg, l);
        const bool ok = diff == 0 && clob == 0;
        std::printf("%-52s %s (%zu of %zu values differ bitwise, %zu padding floats overwritten)\n", label.c_str(),
                    ok ? "ok" : "FAIL", diff, l.where.size(), clob);
        record("get_rows", tname, ok);
    });
}

// pad: activation rows K + pad floats apart (1: rows only 4-byte aligned, which the kernels'
// 16-byte loads must not assume).
void test_mul_mat(cpu::ThreadPool& pool, cpu::Scratch& cs, Env& env, const QMat& W, int64_t T, bool bias,
                  const std::string& tname, size_t pad = 8) {
    const int64_t K = W.K, N = W.rows;
    const std::string label = "mul_mat " + tname + " K=" + std::to_string(K) + " N=" + std::to_string(N) +
                              " T=" + std::to_string(T) + (bias ? " +bias" : "") + (pad % 4 ? " unaligned rows" : "");
    guarded("mul_mat", tname, label, [&] {
        const size_t xs = (size_t)K + pad, ys = (size_t)N + 5;
        const std::vector<float> x = activations(K, T, xs);
        std::vector<float> b((size_t)N);
        for (auto& v : b) v = rnd();
        std::vector<double> exact((size_t)(N * T));
        for (int64_t t = 0; t < T; ++t)
            for (int64_t n = 0; n < N; ++n)
                exact[(size_t)(t * N + n)] = dot(W.deq.data() + n * K, rx(W.type, x.data() + t * xs, K).data(), K) + (bias ? b[n] : 0.0);
        const OutLayout l = layout_2d(N, T, ys);
        std::vector<float> yc(l.size, kNaN);
        Tensor Wt = weight_tensor(W, N, 1, (void*)W.q.data(), "w");
        Tensor X = mk((void*)x.data(), 0, K, T, 1, 4 * xs, 4 * xs * T);
        Tensor B = mk(b.data(), 0, N, 1, 1, 4 * N, 4 * N);
        Tensor Y = mk(yc.data(), 0, N, T, 1, 4 * ys, 4 * ys * T);
        Op op; op.kind = OpKind::mul_mat; op.src[0] = &Wt; op.src[1] = &X; op.src[2] = bias ? &B : nullptr; op.dst = &Y;
        cpu::op_mul_mat(op, pool, cs);
        std::vector<float> yg;
        if (g_gpu) {
            auto dx = upload(x.data(), 4 * x.size()), db = upload(b.data(), 4 * b.size());
            auto dy = poisoned(4 * l.size);
            Tensor Wd = on(Wt, (void*)W.dev()), Xd = on(X, dp(dx)), Bd = on(B, dp(db)), Yd = on(Y, dp(dy));
            Op od = op; od.src[0] = &Wd; od.src[1] = &Xd; od.src[2] = bias ? &Bd : nullptr; od.dst = &Yd;
            cuda::run_mul_mat(od, env.e); dsync(env);
            yg = download(dy.get(), l.size);
        }
        judge({"mul_mat", tname, label, tol_for(T, W.type)}, yg, yc, l, exact);
    });
}

// up_below_gate: both matrices in one device buffer, up at the lower address (generation runs
// gate and up as one launch addressed by their distance: both orders must work).
void test_mul_mat_swiglu(cpu::ThreadPool& pool, cpu::Scratch& cs, Env& env, const QMat& Wg, const QMat& Wu, int64_t T,
                         const std::string& tname, bool up_below_gate = false) {
    const int64_t K = Wg.K, N = Wg.rows;
    const std::string label = "mul_mat_swiglu " + tname + " K=" + std::to_string(K) + " N=" + std::to_string(N) +
                              " T=" + std::to_string(T) + (up_below_gate ? " up below gate" : "");
    guarded("mul_mat_swiglu", tname, label, [&] {
        const size_t xs = (size_t)K + 4, ys = (size_t)N + 3;
        const std::vector<float> x = activations(K, T, xs);
        std::vector<double> exact((size_t)(N * T));
        for (int64_t t = 0; t < T; ++t)
            for (int64_t n = 0; n < N; ++n) {
                const double g = dot(Wg.deq.data() + n * K, rx(Wg.type, x.data() + t * xs, K).data(), K);
                const double u = dot(Wu.deq.data() + n * K, rx(Wu.type, x.data() + t * xs, K).data(), K);
                exact[(size_t)(t * N + n)] = silu(g) * u;
            }
        const OutLayout l = layout_2d(N, T, ys);
        std::vector<float> yc(l.size, kNaN);
        Tensor G = weight_tensor(Wg, N, 1, (void*)Wg.q.data(), "gate"), U = weight_tensor(Wu, N, 1, (void*)Wu.q.data(), "up");
        Tensor X = mk((void*)x.data(), 0, K, T, 1, 4 * xs, 4 * xs * T);
        Tensor Y = mk(yc.data(), 0, N, T, 1, 4 * ys, 4 * ys * T);
        Op op; op.kind = OpKind::mul_mat_swiglu; op.src[0] = &G; op.src[1] = &X; op.src[2] = &U; op.dst = &Y;
        cpu::op_mul_mat_swiglu(op, pool, cs);
        std::vector<float> yg;
        if (g_gpu) {
            auto dx = upload(x.data(), 4 * x.size());
            auto dy = poisoned(4 * l.size);
            const void* gp = Wg.dev();
            const void* up = Wu.dev();
            Dev both(up_below_gate ? Wg.q.size() + Wu.q.size() : 0);
            if (up_below_gate) {
                up = both.p;
                gp = static_cast<char*>(both.p) + Wu.q.size();
                IKLLM_CUDA_CHECK(cudaMemcpy((void*)up, Wu.q.data(), Wu.q.size(), cudaMemcpyHostToDevice));
                IKLLM_CUDA_CHECK(cudaMemcpy((void*)gp, Wg.q.data(), Wg.q.size(), cudaMemcpyHostToDevice));
            }
            Tensor Gd = on(G, (void*)gp), Ud = on(U, (void*)up), Xd = on(X, dp(dx)), Yd = on(Y, dp(dy));
            Op od = op; od.src[0] = &Gd; od.src[1] = &Xd; od.src[2] = &Ud; od.dst = &Yd;
            cuda::run_mul_mat_swiglu(od, env.e); dsync(env);
            yg = download(dy.get(), l.size);
        }
        judge({"mul_mat_swiglu", tname, label, tol_for(T)}, yg, yc, l, exact);
    });
}

// W: [K, N, H] (rows = N * H). strided: x is the first K values of [K + 16, H, T] rows (like
// q_nope in the deepseek2 graph) and y the first N values of [N + 64, H, T] (like the absorbed
// query qf); else both are contiguous (like wv_b on the attention output).
void test_mul_mat_heads(cpu::ThreadPool& pool, cpu::Scratch& cs, Env& env, const QMat& W, int64_t H, int64_t T,
                        bool strided, const std::string& tname) {
    const int64_t K = W.K, N = W.rows / H;
    const std::string label = "mul_mat_heads " + tname + " K=" + std::to_string(K) + " N=" + std::to_string(N) + " H=" +
                              std::to_string(H) + " T=" + std::to_string(T) + (strided ? " strided" : "");
    guarded("mul_mat_heads", tname, label, [&] {
        const size_t xr = (size_t)K + (strided ? 16 : 0), yr = (size_t)N + (strided ? 64 : 0);
        const std::vector<float> x = activations(K, H * T, xr);  // rows (h, t) at (t * H + h) * xr
        std::vector<double> exact((size_t)(N * H * T));
        OutLayout l;
        l.size = yr * (size_t)(H * T);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t n = 0; n < N; ++n) {
                    exact[(size_t)((t * H + h) * N + n)] =
                        dot(W.deq.data() + (h * N + n) * K, rx(W.type, x.data() + (size_t)(t * H + h) * xr, K).data(), K);
                    l.where.push_back((size_t)(t * H + h) * yr + (size_t)n);
                }
        std::vector<float> yc(l.size, kNaN);
        Tensor Wt = weight_tensor(W, N, H, (void*)W.q.data(), "w_heads");
        Tensor X = mk((void*)x.data(), 0, K, H, T, 4 * xr, 4 * xr * H);
        Tensor Y = mk(yc.data(), 0, N, H, T, 4 * yr, 4 * yr * H);
        Op op; op.kind = OpKind::mul_mat_heads; op.src[0] = &Wt; op.src[1] = &X; op.dst = &Y;
        cpu::op_mul_mat_heads(op, pool, cs);
        std::vector<float> yg;
        if (g_gpu) {
            auto dx = upload(x.data(), 4 * x.size());
            auto dy = poisoned(4 * l.size);
            Tensor Wd = on(Wt, (void*)W.dev()), Xd = on(X, dp(dx)), Yd = on(Y, dp(dy));
            Op od = op; od.src[0] = &Wd; od.src[1] = &Xd; od.dst = &Yd;
            cuda::run_mul_mat_heads(od, env.e); dsync(env);
            yg = download(dy.get(), l.size);
        }
        judge({"mul_mat_heads", tname, label, tol_for(T)}, yg, yc, l, exact);
    });
}

// Routed experts: x [E, T]; gate/up [E, n_ff, n_exp] (or merged [E, 2*n_ff, n_exp]); down
// [n_ff, E, n_exp]. Each token picks k distinct experts among the first n_exp - 1 (the last one
// stays unused); with `unused`, some slots are -1 and token 0 has no expert at all. `skewed`:
// expert 0 takes every token, the others few to many (pair counts in every band of
// mat_form_band: the grouped launches' kernels and numerics per band).
struct MoeCase {
    uint32_t t_gu, t_down;
    int64_t T;
    bool merged, round16, unused, skewed = false;
};
struct MoeWeights {
    QMat G, U, D;  // U empty when merged
};
MoeWeights make_moe_weights(cpu::ThreadPool& pool, uint32_t t_gu, uint32_t t_down, bool merged) {
    const int64_t E = 256, n_ff = 256, n_exp = 8;
    MoeWeights w;
    w.G = make_weights(pool, t_gu, E, (merged ? 2 : 1) * n_ff * n_exp);
    if (!merged) w.U = make_weights(pool, t_gu, E, n_ff * n_exp);
    w.D = make_weights(pool, t_down, n_ff, E * n_exp);
    return w;
}
void test_moe_ffn(cpu::ThreadPool& pool, cpu::Scratch& cs, Env& env, const MoeCase& c, const MoeWeights& mw) {
    const int64_t E = 256, n_ff = 256, n_exp = 8, k = 3, T = c.T;
    const std::string tname = std::string(quant::find_type(c.t_gu)->name) +
                              (c.t_down != c.t_gu ? std::string("/") + quant::find_type(c.t_down)->name : "");
    const std::string label = "moe_ffn " + tname + " T=" + std::to_string(T) + (c.merged ? " merged" : " gate+up") +
                              (c.round16 ? " round_f16" : "") + (c.unused ? " unused-slots" : "") + (c.skewed ? " skewed" : "");
    guarded("moe_ffn", tname, label, [&] {
        const QMat &G = mw.G, &U = mw.U, &D = mw.D;
        const size_t xs = (size_t)E + 4, ys = (size_t)E + 2;
        const std::vector<float> x = activations(E, T, xs);
        std::vector<int32_t> ids((size_t)(k * T));
        std::vector<float> wts((size_t)(k * T));
        std::vector<int64_t> count((size_t)n_exp, 0);
        for (int64_t t = 0; t < T; ++t) {
            std::vector<int32_t> pick((size_t)(n_exp - 1));
            for (int32_t e = 0; e < n_exp - 1; ++e) pick[(size_t)e] = e;
            std::shuffle(pick.begin(), pick.end(), rng);
            if (c.skewed) {  // T = 160: experts 0..6 take 160, 40, 10, 4, 80, 106, 80 pairs
                pick[0] = 0;
                pick[1] = t % 4 == 0 ? 1 : t % 13 == 1 ? 2 : t % 40 == 2 ? 3 : t % 2 ? 4 : 5;
                pick[2] = t % 2 == 0 ? 6 : pick[1] == 4 ? 5 : 4;
            }
            for (int64_t j = 0; j < k; ++j) {
                int32_t e = pick[(size_t)j];
                if (c.unused && (t == 0 || (t * k + j) % 5 == 3)) e = -1;
                ids[(size_t)(t * k + j)] = e;
                wts[(size_t)(t * k + j)] = 0.5f * (rnd() + 1.0f);
                if (e >= 0) ++count[(size_t)e];
            }
        }
        const int64_t max_tokens = *std::max_element(count.begin(), count.end());
        // exact
        std::vector<double> exact((size_t)(E * T), 0.0);
        std::vector<float> xin((size_t)E), h((size_t)n_ff);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < k; ++j) {
                const int32_t e = ids[(size_t)(t * k + j)];
                if (e < 0) continue;
                for (int64_t i = 0; i < E; ++i) xin[(size_t)i] = c.round16 ? round_f16(x[t * xs + i]) : x[t * xs + i];
                cuda::act_round_row_host(cuda::act_round_for(G.type), xin.data(), E);
                for (int64_t r = 0; r < n_ff; ++r) {
                    const float* gr = c.merged ? G.deq.data() + (e * 2 * n_ff + r) * E : G.deq.data() + (e * n_ff + r) * E;
                    const float* ur = c.merged ? G.deq.data() + (e * 2 * n_ff + n_ff + r) * E : U.deq.data() + (e * n_ff + r) * E;
                    const double hv = silu(dot(gr, xin.data(), E)) * dot(ur, xin.data(), E);
                    h[(size_t)r] = c.round16 ? round_f16((float)hv) : (float)hv;
                }
                cuda::act_round_row_host(cuda::act_round_for(D.type), h.data(), n_ff);
                const double w = wts[(size_t)(t * k + j)];
                for (int64_t i = 0; i < E; ++i) exact[(size_t)(t * E + i)] += w * dot(D.deq.data() + (e * E + i) * n_ff, h.data(), n_ff);
            }
        const OutLayout l = layout_2d(E, T, ys);
        std::vector<float> yc(l.size, kNaN);
        Tensor X = mk((void*)x.data(), 0, E, T, 1, 4 * xs, 4 * xs * T);
        Tensor Ids = mk(ids.data(), quant::T_I32, k, T, 1, 4 * k, 4 * k * T);
        Tensor Wts = mk(wts.data(), 0, k, T, 1, 4 * k, 4 * k * T);
        Tensor Y = mk(yc.data(), 0, E, T, 1, 4 * ys, 4 * ys * T);
        Tensor Gt = weight_tensor(G, (c.merged ? 2 : 1) * n_ff, n_exp, (void*)G.q.data(), c.merged ? "gate_up" : "gate");
        Tensor Ut = c.merged ? Tensor{} : weight_tensor(U, n_ff, n_exp, (void*)U.q.data(), "up");
        Tensor Dt = weight_tensor(D, E, n_exp, (void*)D.q.data(), "down");
        Op op; op.kind = OpKind::moe_ffn; op.src[0] = &X; op.src[1] = &Ids; op.src[2] = &Wts; op.dst = &Y;
        op.ex[0] = &Gt; op.ex[1] = c.merged ? nullptr : &Ut; op.ex[2] = &Dt;
        op.moe.n_used = (int32_t)k;
        op.moe.round_f16 = c.round16;
        cpu::op_moe_ffn(op, pool, cs);
        std::vector<float> yg;
        if (g_gpu) {
            auto dx = upload(x.data(), 4 * x.size()), di = upload(ids.data(), 4 * ids.size()), dw = upload(wts.data(), 4 * wts.size());
            auto dy = poisoned(4 * l.size);
            Tensor Xd = on(X, dp(dx)), Id = on(Ids, dp(di)), Wd = on(Wts, dp(dw)), Yd = on(Y, dp(dy));
            Tensor Gd = on(Gt, (void*)G.dev()), Ud = on(Ut, (void*)U.dev()), Dd = on(Dt, (void*)D.dev());
            Op od = op; od.src[0] = &Xd; od.src[1] = &Id; od.src[2] = &Wd; od.dst = &Yd;
            od.ex[0] = &Gd; od.ex[1] = c.merged ? nullptr : &Ud; od.ex[2] = &Dd;
            cuda::run_moe_ffn(od, env.e); dsync(env);
            yg = download(dy.get(), l.size);
        }
        // f32 path when every expert sees <= 8 tokens; F16 rounding of the hidden values can
        // land on the other side of a rounding boundary than the exact reference's: looser.
        double tol = tol_for(max_tokens);
        if (c.round16 && max_tokens <= 8) tol = 1e-4;
        // The hidden rows are rounded to 8 bits before the down product: a code on the other side
        // of a rounding boundary than the exact reference's (one step in ~10^3 values) shows here.
        // On the tensor-core path (more than 8 tokens per expert) the f16 products add their own
        // rounding on top (measured up to 3.5e-3 on an H200).
        if (cuda::act_round_for(D.type) != cuda::act_round_none) tol = std::max(tol, max_tokens <= 8 ? 2e-3 : 6e-3);
        // Skewed routing with the int8 kernels, which follow the CPU's numerics for each expert's
        // own pair count: close to the CPU backend too (a wrong form for some experts measured
        // 1.2e-3 .. 1.3e-2 here; right ones up to 1.6e-4, from codes on rounding boundaries).
        const bool int8_both = env.e.int8 && env.e.int8_mma && cuda::int8_view_supported(c.t_gu) &&
                               cuda::int8_view_supported(c.t_down);
        const double cpu_tol = c.skewed && int8_both ? 5e-4 : -1;
        judge({"moe_ffn", tname, label + " (max " + std::to_string(max_tokens) + " tok/expert)", tol, cpu_tol}, yg, yc, l,
              exact);
    });
}

// Weight types to test: decoded by the GPU, computable on the CPU, producible from floats.
std::vector<uint32_t> weight_types() {
    std::vector<uint32_t> out;
    size_t n = 0;
    const quant::TypeTraits* all = quant::all_types(&n);
    for (size_t i = 0; i < n; ++i) {
        const quant::TypeTraits& tt = all[i];
        if (!cuda::weight_type_supported(tt.id)) continue;
        if (!g_only.empty() && std::find(g_only.begin(), g_only.end(), std::string(tt.name)) == g_only.end()) continue;
        const char* why = nullptr;
        if (!tt.dequant) why = "no CPU dequantization";
        else if (!cpu::find_matmul(tt.id, cpu::best_isa())) why = "no CPU matmul kernel";
        else if (!can_make_weights(tt)) why = "no CPU quantizer";
        if (why) {
            std::printf("%-52s not tested (%s)\n", tt.name, why);
            summary("weights", tt.name);  // listed in the table with 0 cases
            continue;
        }
        out.push_back(tt.id);
    }
    return out;
}

int64_t block_multiple(int64_t K, uint32_t type) {
    const int64_t b = quant::find_type(type)->block_elems;
    return (K + b - 1) / b * b;
}

// ---- fused launches (the executor's op pairs, OpEnv::fuse): each bitwise equal to its two ops ----

std::vector<uint8_t> dev_bytes(const void* p, size_t n) {
    std::vector<uint8_t> h(n);
    if (n) IKLLM_CUDA_CHECK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
    return h;
}
void same_bits(const std::string& op, const std::string& label, const std::vector<std::pair<std::vector<uint8_t>, std::vector<uint8_t>>>& parts) {
    size_t diff = 0, total = 0;
    for (const auto& [a, b] : parts) {
        total += a.size();
        if (a.size() != b.size()) diff += std::max(a.size(), b.size());
        else
            for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
    }
    std::printf("%-52s %s (%zu of %zu bytes differ from the separate ops)\n", label.c_str(), diff ? "FAIL" : "ok", diff,
                total);
    record(op, "-", diff == 0);
}

// An op writing rows [K, T] that can also write the next product's rounded copy (rms_norm, the
// gate/up swiglu): run(y, nullptr) is the plain op, run(y, &out) the fused one. Its rows must
// equal the plain op's and the copy the product's own rounding (weights of type wt), bit for bit.
void check_rounding_writer(Env& env, const std::string& label, uint32_t wt, int64_t K, int64_t T,
                           const std::function<void(void*, const cuda::ActRoundOut*)>& run) {
    Dev y1(4 * K * T), y2(4 * K * T);
    run(y1.p, nullptr);
    cuda::MatArgs a;
    a.type = wt; a.x = (const float*)y1.p; a.x_t = 4 * K; a.T = T; a.K = K; a.N = 8;
    cuda::ActRoundKey key;
    if (!cuda::shared_rounding(a, env.e, &key)) throw std::runtime_error("no shared rounding planned");
    const cuda::MatArgs r = cuda::with_rounded_activations(a, env.e);  // the product's own copy
    const cuda::ActRoundCopy c = cuda::alloc_rounded_copy(key, 1, env.s);
    cuda::ActRoundOut ro;
    ro.mode = key.mode; ro.f16 = key.f16; ro.x = c.x; ro.q = c.q; ro.d = c.d;
    run(y2.p, &ro);
    IKLLM_CUDA_CHECK(cudaDeviceSynchronize());
    const size_t n = (size_t)(K * T);
    same_bits("fused", label,
              {{dev_bytes(y2.p, 4 * n), dev_bytes(y1.p, 4 * n)},
               {dev_bytes(c.x, 4 * n), dev_bytes(r.x, 4 * n)},
               {dev_bytes(c.q, key.codes ? n : 0), dev_bytes(r.xq, r.xq ? n : 0)},
               {dev_bytes(c.d, key.codes ? 4 * n / 32 : 0), dev_bytes(r.xq_d, r.xq_d ? 4 * n / 32 : 0)}});
    dsync(env);
}

void test_fused(cpu::ThreadPool& pool, Env& env) {
    // rms_norm that also writes the next product's rounded copy == that product's own rounding.
    for (uint32_t wt : {quant::T_Q4_0, quant::T_IQ4_XS, quant::T_Q6_K})
        for (int64_t T : {1, 5, 40}) {
            const std::string label = std::string("fused rms_norm + rounding for ") + quant::find_type(wt)->name +
                                      " T=" + std::to_string(T);
            guarded("fused", "-", label, [&] {
                const int64_t K = 512;
                Pair<float> x(K * T), g(K);
                for (auto& v : x.h) v = rnd() * 3;
                for (auto& v : g.h) v = rnd();
                x.up(); g.up();
                Tensor X = mk(x.d.p, 0, K, T, 1, 4 * K, 4 * K * T), G = mk(g.d.p, 0, K, 1, 1, 4 * K, 4 * K);
                check_rounding_writer(env, label, wt, K, T, [&](void* y, const cuda::ActRoundOut* ro) {
                    Tensor Y = mk(y, 0, K, T, 1, 4 * K, 4 * K * T);
                    Op op; op.kind = OpKind::rms_norm; op.src[0] = &X; op.src[1] = &G; op.dst = &Y; op.f[0] = 1e-5f;
                    cuda::run_rms_norm(op, env.e, ro);
                });
            });
        }
    // The swiglu of gate/up that also writes the down product's rounded copy.
    for (uint32_t wt : {quant::T_Q4_0, quant::T_IQ4_XS})
        for (int64_t T : {1, 5, 40}) {
            const std::string label = std::string("fused gate/up swiglu + rounding for ") + quant::find_type(wt)->name +
                                      " T=" + std::to_string(T);
            guarded("fused", "-", label, [&] {
                const int64_t K = 256, N = 512;
                const QMat Wg = make_weights(pool, quant::T_Q4_K, K, N), Wu = make_weights(pool, quant::T_Q4_K, K, N);
                const std::vector<float> xh = activations(K, T, K);
                auto dx = upload(xh.data(), 4 * xh.size());
                Tensor G = weight_tensor(Wg, N, 1, (void*)Wg.dev(), "gate"), U = weight_tensor(Wu, N, 1, (void*)Wu.dev(), "up");
                Tensor X = mk(dp(dx), 0, K, T, 1, 4 * K, 4 * K * T);
                check_rounding_writer(env, label, wt, N, T, [&](void* y, const cuda::ActRoundOut* ro) {
                    Tensor Y = mk(y, 0, N, T, 1, 4 * N, 4 * N * T);
                    Op op; op.kind = OpKind::mul_mat_swiglu; op.src[0] = &G; op.src[1] = &X; op.src[2] = &U; op.dst = &Y;
                    cuda::run_mul_mat_swiglu(op, env.e, ro);
                });
            });
        }
    // A projection and the residual add of its output in one launch.
    for (uint32_t wt : {quant::T_Q4_0, quant::T_IQ4_K, quant::T_Q6_K, quant::T_F16})
        for (int64_t T : {1, 3, 8}) {
            const std::string label = std::string("fused mul_mat + add ") + quant::find_type(wt)->name + " T=" + std::to_string(T);
            guarded("fused", "-", label, [&] {
                const int64_t K = 256, N = 40, xs = K + 8, rs = N + 2;
                const QMat W = make_weights(pool, wt, K, N);
                const std::vector<float> xh = activations(K, T, xs);
                Pair<float> res(rs * T);
                for (auto& v : res.h) v = rnd();
                res.up();
                auto dx = upload(xh.data(), 4 * xh.size());
                Dev y1(4 * N * T), y2(4 * N * T), z1(4 * N * T), z2(4 * N * T);
                Tensor Wt = weight_tensor(W, N, 1, (void*)W.dev(), "w"), X = mk(dp(dx), 0, K, T, 1, 4 * xs, 4 * xs * T);
                Tensor R = mk(res.d.p, 0, N, T, 1, 4 * rs, 4 * rs * T);
                Tensor Y1 = mk(y1.p, 0, N, T, 1, 4 * N, 4 * N * T), Y2 = mk(y2.p, 0, N, T, 1, 4 * N, 4 * N * T);
                Tensor Z1 = mk(z1.p, 0, N, T, 1, 4 * N, 4 * N * T), Z2 = mk(z2.p, 0, N, T, 1, 4 * N, 4 * N * T);
                Op mm; mm.kind = OpKind::mul_mat; mm.src[0] = &Wt; mm.src[1] = &X; mm.dst = &Y1;
                Op ad; ad.kind = OpKind::add; ad.src[0] = &R; ad.src[1] = &Y1; ad.dst = &Z1;
                cuda::run_mul_mat(mm, env.e); dsync(env);
                cuda::run_add(ad, env.e);
                Op mm2 = mm; mm2.dst = &Y2;
                Op ad2 = ad; ad2.src[1] = &Y2; ad2.dst = &Z2;
                if (!cuda::mul_mat_add_fusable(mm2, ad2)) throw std::runtime_error("not fusable");
                cuda::run_mul_mat_add(mm2, ad2, env.e);
                IKLLM_CUDA_CHECK(cudaDeviceSynchronize());
                const size_t n = (size_t)(4 * N * T);
                same_bits("fused", label, {{dev_bytes(y2.p, n), dev_bytes(y1.p, n)}, {dev_bytes(z2.p, n), dev_bytes(z1.p, n)}});
                dsync(env);
            });
        }
    // rope of q and k in one launch.
    for (int64_t T : {1, 6, 40}) {
        const std::string label = "fused rope q + k (neox yarn, freq factors) T=" + std::to_string(T);
        guarded("fused", "-", label, [&] {
            const int64_t d = 64;
            Pair<float> q(d * 8 * T), k(d * 2 * T), ff(32);
            Pair<int32_t> pos(T);
            for (auto& v : q.h) v = rnd();
            for (auto& v : k.h) v = rnd();
            for (int j = 0; j < 32; ++j) ff.h[j] = 1.0f + j * 0.1f;
            for (int64_t t = 0; t < T; ++t) pos.h[t] = (int32_t)(t * 37 + 3);
            q.up(); k.up(); ff.up(); pos.up();
            Dev q2(4 * q.h.size()), k2(4 * k.h.size());
            q2.up(q.h.data()); k2.up(k.h.data());
            RopeParams p; p.mode = RopeMode::neox; p.n_dims = d; p.freq_base = 1e6f; p.freq_scale = 0.25f;
            p.ext_factor = 1; p.n_ctx_orig = 32768; p.freq_factors = (const float*)ff.d.p;
            Tensor Q = mk(q.d.p, 0, d, 8, T, 4 * d, 4 * d * 8), K = mk(k.d.p, 0, d, 2, T, 4 * d, 4 * d * 2);
            Tensor Q2 = on(Q, q2.p), K2 = on(K, k2.p);
            Op a; a.kind = OpKind::rope; a.dst = &Q; a.i32 = (const int32_t*)pos.d.p; a.n_i32 = T; a.rope = p;
            Op b = a; b.dst = &K;
            cuda::run_rope(a, env.e);
            cuda::run_rope(b, env.e);
            Op a2 = a, b2 = b; a2.dst = &Q2; b2.dst = &K2;
            if (!cuda::rope_pair_fusable(a2, b2)) throw std::runtime_error("not fusable");
            cuda::run_rope_pair(a2, b2, env.e);
            IKLLM_CUDA_CHECK(cudaDeviceSynchronize());
            same_bits("fused", label, {{dev_bytes(q2.p, q2.n), dev_bytes(q.d.p, q.d.n)}, {dev_bytes(k2.p, k2.n), dev_bytes(k.d.p, k.d.n)}});
            dsync(env);
        });
    }
    // K and V stores of a layer in one launch.
    for (uint32_t type : {quant::T_F16, quant::T_Q8_0}) {
        const std::string label = std::string("fused kv_store K + V ") + quant::kv_type_name(type);
        guarded("fused", "-", label, [&] {
            const int64_t wk = 256, wv = 128, T = 5, cells = 12;
            const size_t rk = quant::kv_row_bytes(type, wk), rv = quant::kv_row_bytes(type, wv);
            Pair<float> sk(wk * T), sv(wv * T);
            Pair<int32_t> cl(T);
            for (auto& v : sk.h) v = rnd() * 4;
            for (auto& v : sv.h) v = rnd() * 4;
            cl.h = {3, 0, -1, 7, 5};
            sk.up(); sv.up(); cl.up();
            Dev ck1(rk * cells), cv1(rv * cells), ck2(rk * cells), cv2(rv * cells);
            Tensor SK = mk(sk.d.p, 0, wk, T, 1, 4 * wk, 4 * wk * T), SV = mk(sv.d.p, 0, wv, T, 1, 4 * wv, 4 * wv * T);
            Tensor CK1 = mk(ck1.p, type, wk, cells, 1, rk, rk * cells, 0), CV1 = mk(cv1.p, type, wv, cells, 1, rv, rv * cells, 0);
            Tensor CK2 = on(CK1, ck2.p), CV2 = on(CV1, cv2.p);
            Op a; a.kind = OpKind::kv_store; a.src[0] = &SK; a.dst = &CK1; a.i32 = (const int32_t*)cl.d.p; a.n_i32 = T;
            Op b = a; b.src[0] = &SV; b.dst = &CV1;
            cuda::run_kv_store(a, env.e);
            cuda::run_kv_store(b, env.e);
            Op a2 = a, b2 = b; a2.dst = &CK2; b2.dst = &CV2;
            if (!cuda::kv_store_pair_fusable(a2, b2)) throw std::runtime_error("not fusable");
            cuda::run_kv_store_pair(a2, b2, env.e);
            IKLLM_CUDA_CHECK(cudaDeviceSynchronize());
            same_bits("fused", label, {{dev_bytes(ck2.p, ck2.n), dev_bytes(ck1.p, ck1.n)}, {dev_bytes(cv2.p, cv2.n), dev_bytes(cv1.p, cv1.n)}});
            dsync(env);
        });
    }
    // Gate and up of a generation step in one launch (both address orders) == two launches.
    for (uint32_t wt : {quant::T_Q4_K, quant::T_IQ4_XS, quant::T_BF16})
        for (int64_t T : {1, 4})
            for (int swap = 0; swap < 2; ++swap) {
                const std::string label = std::string("fused gate + up ") + quant::find_type(wt)->name + " T=" +
                                          std::to_string(T) + (swap ? " (up first)" : "");
                guarded("fused", "-", label, [&] {
                    const int64_t K = 256, N = 24;
                    const QMat W1 = make_weights(pool, wt, K, N), W2 = make_weights(pool, wt, K, N);
                    const QMat& Wg = swap ? W2 : W1;
                    const QMat& Wu = swap ? W1 : W2;
                    const std::vector<float> xh = activations(K, T, K);
                    auto dx = upload(xh.data(), 4 * xh.size());
                    Dev y1(4 * N * T), y2(4 * N * T);
                    Tensor G = weight_tensor(Wg, N, 1, (void*)Wg.dev(), "gate"), U = weight_tensor(Wu, N, 1, (void*)Wu.dev(), "up");
                    Tensor X = mk(dp(dx), 0, K, T, 1, 4 * K, 4 * K * T);
                    Tensor Y1 = mk(y1.p, 0, N, T, 1, 4 * N, 4 * N * T), Y2 = on(Y1, y2.p);
                    Op op; op.kind = OpKind::mul_mat_swiglu; op.src[0] = &G; op.src[1] = &X; op.src[2] = &U; op.dst = &Y1;
                    cuda::OpEnv separate = env.e;
                    separate.fuse = false;
                    cuda::run_mul_mat_swiglu(op, separate); dsync(env);
                    Op o2 = op; o2.dst = &Y2;
                    cuda::run_mul_mat_swiglu(o2, env.e);
                    IKLLM_CUDA_CHECK(cudaDeviceSynchronize());
                    same_bits("fused", label, {{dev_bytes(y2.p, y2.n), dev_bytes(y1.p, y1.n)}});
                    dsync(env);
                });
            }
}

void test_weights(cpu::ThreadPool& pool, cpu::Scratch& cs, Env& env) {
    const std::vector<uint32_t> types = weight_types();
    for (uint32_t type : types) {
        const std::string tname = quant::find_type(type)->name;
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t K0 : {256, 768}) {
            const int64_t K = block_multiple(K0, type);
            for (int64_t N : {64, 200}) {
                QMat W;
                guarded("mul_mat", tname, "weights " + tname, [&] { W = make_weights(pool, type, K, N); });
                if (W.q.empty()) continue;
                if (N == 64) test_get_rows(pool, env, W, tname);
                for (int64_t T : {1, 3, 8, 9, 33, 130}) test_mul_mat(pool, cs, env, W, T, N == 200 && T % 3 == 0, tname);
                if (N == 200 && K0 == 256) test_mul_mat(pool, cs, env, W, 70, false, tname, 1);
            }
        }
        {
            const int64_t K = block_multiple(256, type), N = 200;
            QMat Wg, Wu;
            guarded("mul_mat_swiglu", tname, "weights " + tname, [&] {
                Wg = make_weights(pool, type, K, N);
                Wu = make_weights(pool, type, K, N);
            });
            if (!Wg.q.empty())
                for (int64_t T : {1, 5, 9, 70}) {
                    test_mul_mat_swiglu(pool, cs, env, Wg, Wu, T, tname);
                    if (T <= 8) test_mul_mat_swiglu(pool, cs, env, Wg, Wu, T, tname, true);
                }
        }
        {
            const int64_t K = block_multiple(256, type), N = 96, H = 4;
            QMat W;
            guarded("mul_mat_heads", tname, "weights " + tname, [&] { W = make_weights(pool, type, K, N * H); });
            if (!W.q.empty())
                for (int64_t T : {1, 6, 9, 40})
                    for (bool strided : {true, false}) test_mul_mat_heads(pool, cs, env, W, H, T, strided, tname);
        }
        std::printf("(%s: %.1f s)\n", tname.c_str(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    // Routed experts: a representative set of types (each case quantizes ~1.5M weights).
    auto usable = [&](uint32_t t) { return std::find(types.begin(), types.end(), t) != types.end(); };
    const std::vector<std::pair<uint32_t, uint32_t>> moe_types = {
        {quant::T_F16, quant::T_F16},     {quant::T_BF16, quant::T_BF16},     {quant::T_F32, quant::T_F32},
        {quant::T_Q8_0, quant::T_Q8_0},   {quant::T_Q4_0, quant::T_Q4_0},     {quant::T_Q5_1, quant::T_Q5_1},
        {quant::T_Q4_K, quant::T_Q6_K},   {quant::T_Q2_K, quant::T_Q3_K},     {quant::T_IQ4_XS, quant::T_IQ4_XS},
        {quant::T_IQ4_K, quant::T_IQ5_K}, {quant::T_IQ3_KS, quant::T_IQ4_KS}, {quant::T_IQ2_KT, quant::T_IQ4_KT},
        {quant::T_MXFP4, quant::T_MXFP4}};
    for (const auto& types_gd : moe_types) {
        const uint32_t gu = types_gd.first, down = types_gd.second;
        if (!usable(gu) || !usable(down)) continue;
        const bool f16 = gu == quant::T_F16;
        const std::string tname = std::string(quant::find_type(gu)->name) +
                                  (down != gu ? std::string("/") + quant::find_type(down)->name : "");
        for (bool merged : {false, true}) {
            MoeWeights mw;
            guarded("moe_ffn", tname, "weights " + tname, [&] { mw = make_moe_weights(pool, gu, down, merged); });
            if (mw.G.q.empty()) continue;
            for (int64_t T : {1, 6, 48}) test_moe_ffn(pool, cs, env, {gu, down, T, merged, f16, merged ? T == 48 : T != 1}, mw);
            test_moe_ffn(pool, cs, env, {gu, down, 160, merged, f16, false, true}, mw);
        }
    }
}

std::string fmt(double v) {
    if (v < 0) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.2e", v);
    return b;
}

void print_summary() {
    std::printf("\n%-16s %-20s %6s %6s  %-10s %-10s %-10s %-10s\n", "op", "type", "cases", "failed", "gpu-exact",
                "cpu-exact", "gpu-cpu", "max|diff|");
    for (const Summary& s : g_summary)
        std::printf("%-16s %-20s %6d %6d  %-10s %-10s %-10s %-10s%s\n", s.op.c_str(), s.type.c_str(), s.cases, s.fails,
                    fmt(s.gpu_exact).c_str(), fmt(s.cpu_exact).c_str(), fmt(s.gpu_cpu).c_str(), fmt(s.abs_diff).c_str(),
                    s.fails ? "  FAIL" : (s.cases ? "" : "  (not tested)"));
    std::printf("(gpu-exact, cpu-exact, gpu-cpu: worst relative L2 error; max|diff|: worst element-wise gpu-cpu)\n");
}

}  // namespace

int main(int argc, char** argv) {
    setenv("IKLLM_AMX", "0", 1);  // the CPU reference in the reference's numerics (kernels/matmul.h)
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--cpu-only") == 0) g_gpu = false;
        else if (argv[i][0] != '-' && quant::find_type_by_name(argv[i])) g_only.push_back(quant::find_type_by_name(argv[i])->name);
        else {
            std::fprintf(stderr, "usage: %s [--cpu-only] [weight type name ...]\n", argv[0]);
            return 2;
        }
    }
    if (g_gpu) {
        int n_dev = 0;
        const cudaError_t e = cudaGetDeviceCount(&n_dev);
        if (e != cudaSuccess || n_dev <= 0) {
            std::printf("cuda_ops_test: SKIPPED: no usable CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
                        e != cudaSuccess ? cudaGetErrorString(e) : "ok", n_dev);
            return 77;
        }
        cudaDeviceProp prop{};
        IKLLM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        std::printf("device 0: %s (sm_%d%d, %d SMs); CPU ISA %s\n", prop.name, prop.major, prop.minor,
                    prop.multiProcessorCount, cpu::isa_name(cpu::best_isa()));
    } else {
        std::printf("--cpu-only: CPU ops against the exact references, no GPU; CPU ISA %s\n",
                    cpu::isa_name(cpu::best_isa()));
    }
    const int n_threads = (int)std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    cpu::ThreadPool pool(n_threads);
    cpu::Scratch cs;
    Env env;
    if (g_gpu) {
        int sms = 1;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        env.e.sm_count = sms;
        test_basic(pool, env);
        test_rope(pool, env);
        test_kv_store(pool, env);
        test_attention(pool, cs, env);
        test_moe_route(pool, env);
        test_fused(pool, env);
    }
    test_weights(pool, cs, env);
    print_summary();
    std::printf("%s: %d cases, %d failed\n", g_fails ? "FAILED" : "ALL OK", g_cases, g_fails);
    return g_fails ? 1 : 0;
}
