// Host run (tests/cuda/emu_cuda.h) of the kernels behind the CUDA executor's fused launches:
//   rms_norm that also writes the next product's rounded copy, and the swiglu of gate/up that
//     does the same: their own outputs bit for bit those of the plain kernels, the copy (values,
//     int8 codes, scales) bit for bit the host rounding of those outputs (act_round_ref.h);
//   rope of two tensors in one launch and the K + V stores in one launch: bit for bit the two
//     launches apart.
// The rules for when the executor fuses are in cuda_fusion_host_test; on a GPU cuda_ops_test
// compares the same forms ("fused" rows). Exit code 1 on any mismatch.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "emu_cuda.h"
#include "act_round_ref.h"
#include "cuda/ops_basic_kernels.cuh"
#include "cuda/swiglu_kernels.cuh"

using namespace ikllm;
using namespace ikllm::cuda;

namespace {

std::mt19937 rng(4242);
float nrm() { return std::normal_distribution<float>(0.f, 1.f)(rng); }
bool g_ok = true;

template <class T>
size_t differ(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return std::max(a.size(), b.size());
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
    return n;
}

void report(const std::string& what, size_t bad, size_t total) {
    std::printf("%-64s %zu of %zu differ -> %s\n", what.c_str(), bad, total, bad ? "FAIL" : "ok");
    g_ok = g_ok && bad == 0;
}

View view(void* data, int64_t ne0, int64_t ne1, int64_t ne2, int64_t nb1) {
    View v;
    v.data = static_cast<uint8_t*>(data);
    v.ne0 = ne0; v.ne1 = ne1; v.ne2 = ne2; v.ne3 = 1;
    v.nb1 = nb1; v.nb2 = nb1 * ne1; v.nb3 = v.nb2 * ne2;
    return v;
}

// The copy a fused kernel wrote against the host rounding of the rows it rounded.
void check_copy(const std::string& what, int mode, bool f16, const std::vector<float>& rows, int64_t T, int64_t K,
                const std::vector<float>& cx, const std::vector<int8_t>& cq, const std::vector<float>& cd) {
    std::vector<float> in = rows;
    if (f16)
        for (float& v : in) v = ikllm::f16_to_f32(ikllm::f32_to_f16(v));
    if (mode == act_round_none) {
        report(what + ": f16-rounded copy", differ(cx, in), in.size());
        return;
    }
    const test::RoundedRows r = test::round_rows(mode, in, T, K);
    report(what + ": rounded values", differ(cx, r.x), r.x.size());
    report(what + ": int8 codes", differ(cq, r.q), r.q.size());
    report(what + ": scales", differ(cd, r.d32), r.d32.size());
}

void rms_norm_rounding() {
    struct C { int64_t K, T; int threads, mode; bool f16; };
    const C cases[] = {{512, 3, 256, act_round_q8_32, false}, {4096, 2, 1024, act_round_q8_256, false},
                       {4096, 1, 1024, act_round_q8_32, false}, {352, 5, 256, act_round_none, true}};
    for (const C& c : cases) {
        const std::string what = "rms_norm + rounding K=" + std::to_string(c.K) + " T=" + std::to_string(c.T) +
                                 " mode " + std::to_string(c.mode) + (c.f16 ? " f16" : "");
        std::vector<float> x((size_t)(c.K * c.T)), g((size_t)c.K), y1(x.size()), y2(x.size());
        for (float& v : x) v = nrm() * 3;
        for (float& v : g) v = nrm();
        std::vector<float> cx(x.size(), -1.f), cd(x.size() / 32, -1.f);
        std::vector<int8_t> cq(x.size(), 99);
        const bool codes = c.mode != act_round_none;
        const View X = view(x.data(), c.K, c.T, 1, 4 * c.K);
        emu::launch(dim3((unsigned)c.T), c.threads,
                    [&] { rms_norm_kernel(X, view(y1.data(), c.K, c.T, 1, 4 * c.K), g.data(), 1e-5f, ActRoundOut{}); });
        ActRoundOut ro;
        ro.mode = c.mode;
        ro.f16 = c.f16;
        ro.x = cx.data();
        ro.q = codes ? cq.data() : nullptr;
        ro.d = codes ? cd.data() : nullptr;
        emu::launch(dim3((unsigned)c.T), c.threads,
                    [&] { rms_norm_kernel(X, view(y2.data(), c.K, c.T, 1, 4 * c.K), g.data(), 1e-5f, ro); });
        report(what + ": normalised rows", differ(y2, y1), y1.size());
        check_copy(what, c.mode, c.f16, y1, c.T, c.K, cx, codes ? cq : std::vector<int8_t>{}, codes ? cd : std::vector<float>{});
    }
}

void swiglu_rounding() {
    struct C { int64_t N, T; int mode; };
    const C cases[] = {{512, 2, act_round_q8_32}, {352, 3, act_round_q8_256}, {1024, 1, act_round_q8_256}};
    for (const C& c : cases) {
        const std::string what = "swiglu + rounding N=" + std::to_string(c.N) + " T=" + std::to_string(c.T) + " mode " +
                                 std::to_string(c.mode);
        std::vector<float> g((size_t)(c.N * c.T)), u(g.size()), y1(g.size()), y2(g.size());
        for (float& v : g) v = nrm() * 2;
        for (float& v : u) v = nrm();
        std::vector<float> cx(g.size(), -1.f), cd(g.size() / 32, -1.f);
        std::vector<int8_t> cq(g.size(), 99);
        emu::launch(dim3((unsigned)((c.N * c.T + 255) / 256)), 256,
                    [&] { swiglu_rows_kernel(g.data(), u.data(), c.N, c.T, y1.data(), 4 * c.N, false); });
        ActRoundOut ro;
        ro.mode = c.mode;
        ro.x = cx.data();
        ro.q = cq.data();
        ro.d = cd.data();
        const int64_t warps = c.T * ((c.N + 255) / 256);
        emu::launch(dim3((unsigned)((warps * 32 + 127) / 128)), 128,
                    [&] { swiglu_round_kernel(g.data(), u.data(), c.N, c.T, y2.data(), 4 * c.N, ro); });
        report(what + ": swiglu rows", differ(y2, y1), y1.size());
        check_copy(what, c.mode, false, y1, c.T, c.N, cx, cq, cd);
    }
}

// rope of q and k in one launch (grid rows: q's head groups, then k's) == two launches.
void rope_pair() {
    for (int64_t T : {1, 3, 40}) {
        const int64_t d = 64, Hq = 6, Hk = 2;
        std::vector<float> q((size_t)(d * Hq * T)), k((size_t)(d * Hk * T)), ff(32);
        for (float& v : q) v = nrm();
        for (float& v : k) v = nrm();
        for (int j = 0; j < 32; ++j) ff[j] = 1.0f + 0.15f * j;
        std::vector<int32_t> pos((size_t)T);
        for (int64_t t = 0; t < T; ++t) pos[t] = (int32_t)(t * 211 + 5);
        RopeParams p;
        p.mode = RopeMode::neox;
        p.n_dims = (int32_t)d;
        p.freq_base = 1e6f;
        p.freq_scale = 0.25f;
        p.ext_factor = 1;
        p.n_ctx_orig = 32768;
        const math::RopeConsts c = math::rope_consts(p);
        const size_t shared = sizeof(float) * 2 * (size_t)c.half;
        auto job = [&](std::vector<float>& x, int64_t H, int32_t first) {
            RopeJob j;
            j.x = view(x.data(), d, H, T, 4 * d);
            j.heads_per_block = (int32_t)(T < 32 ? std::min<int64_t>(H, 4) : H);
            j.first = first;
            return j;
        };
        auto groups = [](const RopeJob& j) { return (int32_t)((j.x.ne1 + j.heads_per_block - 1) / j.heads_per_block); };
        std::vector<float> q1 = q, k1 = k, q2 = q, k2 = k;
        for (auto* x : {&q1, &k1}) {  // apart: every grid row is the tensor's own
            const int64_t H = x == &q1 ? Hq : Hk;
            RopeJob a = job(*x, H, 0), none = a;
            none.first = groups(a);
            emu::launch(dim3((unsigned)T, (unsigned)groups(a)), 256, [&] { rope_kernel(a, none, pos.data(), c, ff.data()); },
                        shared);
        }
        const RopeJob a = job(q2, Hq, 0), b = job(k2, Hk, groups(a));
        emu::launch(dim3((unsigned)T, (unsigned)(b.first + groups(b))), 256,
                    [&] { rope_kernel(a, b, pos.data(), c, ff.data()); }, shared);
        report("rope q + k in one launch T=" + std::to_string(T), differ(q2, q1) + differ(k2, k1), q1.size() + k1.size());
        // The kernel itself against a host loop over the same per-pair math (op_math.cuh: the
        // CPU's recurrence angles, cos/sin and rotation), neox pairs (j, j + d/2).
        std::vector<float> want = q, th((size_t)c.half);
        for (int64_t t = 0; t < T; ++t) {
            math::rope_thetas((float)pos[t], c, th.data());
            for (int64_t h = 0; h < Hq; ++h)
                for (int32_t j = 0; j < c.half; ++j) {
                    float co, si;
                    math::rope_cos_sin(th[j], j, ff[j], c, &co, &si);
                    int32_t i0, i1;
                    math::rope_pair(c, j, &i0, &i1);
                    float* row = want.data() + (t * Hq + h) * d;
                    math::rope_rotate(row[i0], row[i1], co, si);
                }
        }
        report("rope T=" + std::to_string(T) + " against the host's rotation", differ(q1, want), want.size());
    }
}

// K and V stores in one launch == two launches (f16 and q8_0 caches, a negative cell skipped).
void kv_store_pair() {
    const int64_t wk = 256, wv = 128, T = 4, cells = 9;
    const std::vector<int32_t> cl = {3, -1, 8, 0};
    for (uint32_t type : {quant::T_F16, quant::T_Q8_0}) {
        std::vector<float> sk((size_t)(wk * T)), sv((size_t)(wv * T));
        for (float& v : sk) v = nrm() * 3;
        for (float& v : sv) v = nrm() * 3;
        const int64_t rk = type == quant::T_F16 ? 2 * wk : 34 * wk / 32, rv = type == quant::T_F16 ? 2 * wv : 34 * wv / 32;
        std::vector<uint8_t> ck1((size_t)(rk * cells), 0), cv1((size_t)(rv * cells), 0), ck2 = ck1, cv2 = cv1;
        auto job = [&](std::vector<float>& s, int64_t w, std::vector<uint8_t>& cache, int64_t row) {
            KvJob j;
            j.s = view(s.data(), w, T, 1, 4 * w);
            j.d = view(cache.data(), w, cells, 1, row);
            j.width = w;
            return j;
        };
        auto run = [&](const KvJob& a, const KvJob& b) {
            if (type == quant::T_Q8_0) {
                const int64_t total = T * ((a.width + b.width) / 32);
                emu::launch(dim3((unsigned)((total + 127) / 128)), 128, [&] { kv_store_q8_0_kernel(a, b, cl.data(), T); });
            } else {
                const int64_t total = T * (a.width + b.width);
                emu::launch(dim3((unsigned)((total + 255) / 256)), 256,
                            [&] { kv_store_elem_kernel(a, b, type, cl.data(), T); });
            }
        };
        run(job(sk, wk, ck1, rk), KvJob{});
        run(job(sv, wv, cv1, rv), KvJob{});
        run(job(sk, wk, ck2, rk), job(sv, wv, cv2, rv));
        const std::string name = type == quant::T_F16 ? "f16" : "q8_0";
        report("K + V stores in one launch, " + name, differ(ck2, ck1) + differ(cv2, cv1), ck1.size() + cv1.size());
        size_t stored = 0;
        for (uint8_t b : ck1) stored += b != 0;
        report("K + V stores, " + name + ": cells written at all", stored == 0, 1);
    }
}

}  // namespace

int main() {
    rms_norm_rounding();
    swiglu_rounding();
    rope_pair();
    kv_store_pair();
    std::printf("%s\n", g_ok ? "cuda_fused_kernels_emu_test: ok" : "cuda_fused_kernels_emu_test: FAIL");
    return g_ok ? 0 : 1;
}
