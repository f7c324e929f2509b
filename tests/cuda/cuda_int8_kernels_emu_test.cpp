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
#include "quant/repack.h"
#include "quant/type_traits.h"
#include "quant/unpack_interleaved.h"

#include "emu_cuda.h"
#include "act_round_ref.h"
#include "cuda/mat_mma_int8_kernel.cuh"
#include "cuda/mat_vec_int8_kernel.cuh"

using namespace ikllm;
using namespace ikllm::cuda;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Case {
    int64_t K, N, T;
    bool invariant = false;  // a batch-invariant session: never the batch form
    // Weights converted from this row-interleaved type (MatArgs::exact: exact products in
    // every call), compared with the CPU's kernel of the interleaved form; else 0.
    uint32_t stored = 0;
};

// Activations rounded like act_round_kernel: codes [T][K] and one scale per 32 values.
void round_activations(int mode, const std::vector<float>& x, int64_t T, int64_t K, std::vector<int8_t>& q,
                       std::vector<float>& d32) {
    test::RoundedRows r = test::round_rows(mode, x, T, K);
    q = std::move(r.q);
    d32 = std::move(r.d32);
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
    bool k_sub_differs = false;
    template <class V>
    void mma(const MatArgs& a) {
        if (V::kSymAccum) kernel += "-sym";
        if (IsF16Scaled<V>::value) kernel += "-f16sc";
        const dim3 grid((unsigned)((a.N + mma8::kBM - 1) / mma8::kBM), (unsigned)((a.T + mma8::kBN - 1) / mma8::kBN),
                        (unsigned)a.Z);
        emu::launch(grid, mma8::kThreads, [&] { mma8::mat_mma_int8_kernel<V>(a); });
        // K steps of 64 (IKLLM_CUDA_MMA_KSUB=2) give the same bits: every written value compared.
        const int64_t ys = (int64_t)(a.y_t / sizeof(float));
        std::vector<float> y1((size_t)(ys * a.T));
        std::memcpy(y1.data(), a.y, y1.size() * sizeof(float));
        emu::launch(grid, mma8::kThreads, [&] { mma8::mat_mma_int8_kernel<V, 2>(a); });
        if (std::memcmp(y1.data(), a.y, y1.size() * sizeof(float)) != 0) k_sub_differs = true;
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
    const bool exact = cs.stored != 0;
    round_activations(act_round_for(tt.id, exact), x, T, K, xq, xd);

    const int64_t ys = N + 3;  // padding between token rows must stay NaN
    std::vector<float> y((size_t)(ys * T), kNaN);
    MatArgs a;
    a.type = tt.id;
    a.exact = exact;
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
    const bool batch_form = T >= kRefBatchTokens && !cs.invariant && !exact;
    const bool sat = C::kSat && !exact;
    std::string kernel = exact ? "exact " : "";
    // Views without a direct tensor-core form (Q2_K): run_batch_forms refuses below the batch
    // form, and launch_rounded takes the matrix-vector kernel as for the saturating types.
    if (T > mv::kVecMaxTokens && !C::kDirectMma && !batch_form) {
        EmuLauncher x{kernel, {}};
        if (mma8::run_batch_forms<C>(a, batch_form, x)) {
            std::printf("%s: a direct mma form ran\n", tt.name);
            return false;
        }
    }
    if (T > mv::kVecMaxTokens && !((sat || !C::kDirectMma) && !batch_form)) {
        kernel += "mma";
        EmuLauncher x{kernel, {}};
        if (!mma8::run_batch_forms<C>(a, batch_form, x)) {
            std::printf("%s: no batch form ran\n", tt.name);
            return false;
        }
        if (x.k_sub_differs) {
            std::printf("%s K=%lld T=%lld: K steps of 64 give other bits than steps of 32 -> FAIL\n", tt.name, (long long)K,
                        (long long)T);
            return false;
        }
    } else if (T == 1) {
        kernel += "vec T=1";
        emu::launch(dim3((unsigned)((N + 3) / 4), 1, 1), 32 * mv::kVecWarps, [&] {
            if (exact) mv::mat_vec_int8_kernel<C, 1, 4, false>(a);
            else mv::mat_vec_int8_kernel<C, 1, 4>(a);
        });
        // 4 chunks per thread in flight (IKLLM_CUDA_MV_UNROLL=4): the same bits, y and y_res.
        const std::vector<float> y2 = y, r2 = y_res;
        std::fill(y.begin(), y.end(), kNaN);
        std::fill(y_res.begin(), y_res.end(), kNaN);
        emu::launch(dim3((unsigned)((N + 3) / 4), 1, 1), 32 * mv::kVecWarps, [&] {
            if (exact) mv::mat_vec_int8_kernel<C, 1, 4, false, 4>(a);
            else mv::mat_vec_int8_kernel<C, 1, 4, C::kSat, 4>(a);
        });
        if (std::memcmp(y.data(), y2.data(), 4 * y.size()) != 0 || std::memcmp(y_res.data(), r2.data(), 4 * y_res.size()) != 0) {
            std::printf("%s K=%lld: the unroll-4 kernel gives other bits than unroll 2 -> FAIL\n", tt.name, (long long)K);
            return false;
        }
    } else {
        kernel += "vec";
        emu::launch(dim3((unsigned)((N + 1) / 2), (unsigned)((T + 7) / 8), 1), 32 * mv::kVecWarps, [&] {
            if (exact) mv::mat_vec_int8_kernel<C, mv::kVecMaxTokens, 2, false>(a);
            else mv::mat_vec_int8_kernel<C, mv::kVecMaxTokens, 2>(a);
        });
    }
    // The CPU backend's scalar kernel on the same weights and activations, called as op_matmul
    // does: the whole call in the batch form, blocks of <= 15 tokens in a batch-invariant one.
    // Converted weights: the interleaved form's kernel on the weights interleaved back.
    const cpu::MatmulKernel* k = cpu::find_matmul_exact(exact ? cs.stored : tt.id, cpu::Isa::scalar);
    std::vector<float> yc((size_t)(N * T), kNaN);
    std::vector<uint8_t> w_stored;
    const uint8_t* wc = w.data();
    if (exact) {
        w_stored.resize(w.size());
        if (!quant::convert_rows(tt.id, cs.stored, w.data(), w_stored.data(), K, N)) k = nullptr;
        wc = w_stored.data();
    }
    if (k) {
        const size_t arb = k->act->row_bytes(K);
        std::vector<uint8_t> act(arb * (size_t)T);
        for (int64_t t = 0; t < T; ++t) k->act->encode_row(x.data() + t * K, act.data() + t * arb, K);
        const int64_t tb = cs.invariant ? 15 : T;
        for (int64_t t0 = 0; t0 < T; t0 += tb)
            k->run(wc, rb, K, 0, N, act.data() + t0 * arb, arb, std::min(tb, T - t0), yc.data() + t0 * N, N);
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
            const float want = kernel.find("vec") == std::string::npos ? kNaN : y[t * ys + n] + res[t * N + n];
            const float got = y_res[t * ys + n];
            bad_res += std::isnan(want) ? !std::isnan(got) : std::memcmp(&want, &got, 4) != 0;
        }
    }
    const double rel = std::sqrt(err / (norm > 0 ? norm : 1)), crel = std::sqrt(cerr / (cnorm > 0 ? cnorm : 1));
    // Against the CPU always (its numerics are the reference's); against the exact product
    // where the view is multiplied exactly in this form.
    // (Not the KT types whose reference matmul scales by a factor: matmul_scale.)
    const bool vec = kernel.find("vec") != std::string::npos;
    const bool exact_form = C::matmul_scale(1.0f) == 1.0f && (vec ? !sat : kernel.find("mma") == kernel.size() - 3 &&
                                                                           kernel.find('+') == std::string::npos);
    // (float sums in other orders drift apart as the square root of their length: 1e-6 at K = 512)
    const double tol = 1e-6 * std::max(1.0, std::sqrt((double)K / 512));
    const bool ok = k && crel < tol && (!exact_form || rel < tol) && nan == 0 && bad_pad == 0 && bad_res == 0;
    std::printf("%-8s %-15s K=%lld N=%lld T=%lld%s: cpu %.2e, exact %.2e%s, unwritten %ld, padding written %ld, "
                "residual wrong %ld -> %s\n",
                tt.name, kernel.c_str(), (long long)K, (long long)N, (long long)T, cs.invariant ? " invariant" : "", crel,
                rel, exact_form ? "" : " (not judged)", nan, bad_pad, bad_res, ok ? "ok" : "FAIL");
    return ok;
}

// Operands of the batched matrix-vector cases below: `mats` weight matrices [N, K] back to back
// (w_z apart) and T activation rows rounded for tt, with a's weight and code fields set.
template <class D>
struct Batched {
    std::vector<uint8_t> w;
    std::vector<float> deq, x;
    std::vector<int8_t> xq;
    std::vector<float> xd;
    MatArgs a;
    Batched(const quant::TypeTraits& tt, int64_t mats, int64_t N, int64_t K, int64_t T, std::mt19937& rng) {
        std::normal_distribution<float> nd(0.f, 1.f);
        random_weights<D>(tt, mats * N, K, rng, w, deq);
        x.resize((size_t)(T * K));
        for (auto& v : x) v = nd(rng);
        round_activations(act_round_for(tt.id), x, T, K, xq, xd);
        const size_t rb = quant::row_bytes(tt, K);
        a.type = tt.id;
        a.w = w.data();
        a.w_row = rb;
        a.w_z = rb * N;
        a.K = K;
        a.N = N;
        a.xq = xq.data();
        a.xq_d = xd.data();
    }
};

// Routed experts through the matrix-vector kernel: pair z = (token z / k, choice z % k) reads
// activation row z / k (x_div) and expert ids[z] (w_ids); id -1 leaves its output alone.
template <class C>
bool run_experts(const quant::TypeTraits& tt, std::mt19937& rng) {
    using D = typename C::D;
    constexpr int64_t K = 256, N = 6, E = 3, k = 2, T = 3;
    const int32_t ids[T * k] = {2, 0, -1, 1, 1, 2};
    const size_t rb = quant::row_bytes(tt, K);
    Batched<D> b(tt, E, N, K, T, rng);  // rows [T][K]: block z / k, one token each
    const std::vector<uint8_t>& w = b.w;
    const std::vector<float>& deq = b.deq;
    const std::vector<float>& x = b.x;
    const std::vector<int8_t>& xq = b.xq;
    const std::vector<float>& xd = b.xd;
    std::vector<float> y((size_t)(T * k * N), kNaN);
    MatArgs& a = b.a;
    a.T = 1;
    a.Z = T * k;
    a.x_div = k;
    a.w_ids = ids;
    a.ids_k = k;
    a.ids_t = k;
    a.w_count = E;
    a.y = y.data();
    a.y_z = sizeof(float) * N;
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
        Batched<D> b(tt, 2, N, K, T, rng);  // gate rows, then up rows
        std::vector<float> y((size_t)(2 * N * T), kNaN);
        MatArgs& a = b.a;
        a.T = T;
        a.Z = 2;
        a.x_div = 2;
        a.y = y.data();
        a.y_t = sizeof(float) * N;
        a.y_z = sizeof(float) * N * T;
        if (T == 1)
            emu::launch(dim3((unsigned)((N + 3) / 4), 1, 2), 32 * mv::kVecWarps, [&] { mv::mat_vec_int8_kernel<C, 1, 4>(a); });
        else
            emu::launch(dim3((unsigned)((N + 1) / 2), 1, 2), 32 * mv::kVecWarps,
                        [&] { mv::mat_vec_int8_kernel<C, mv::kVecMaxTokens, 2>(a); });
        const cpu::MatmulKernel* ck = cpu::find_matmul_exact(tt.id, cpu::Isa::scalar);
        if (!ck) return false;
        const size_t arb = ck->act->row_bytes(K);
        std::vector<uint8_t> act(arb * (size_t)T);
        for (int64_t t = 0; t < T; ++t) ck->act->encode_row(b.x.data() + t * K, act.data() + t * arb, K);
        double cerr = 0, cnorm = 0;
        long nan = 0;
        std::vector<float> yc((size_t)(N * T));
        for (int z = 0; z < 2; ++z) {
            ck->run(b.w.data() + (size_t)z * N * rb, rb, K, 0, N, act.data(), arb, T, yc.data(), N);
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
    // (K = 4352: 544 chunks of 8, over four per thread of the single-token kernel, so its unroll-4
    // form holds several chunks per thread, with a remainder)
    const Case cases[] = {{512, 13, 1}, {4352, 6, 1}, {512, 9, 5}, {512, 16, 20}, {512, 140, 70}, {512, 8, 40, true}};
    // Row counts of whole interleaved row groups (4 or 8 rows).
    const Case exact_cases[] = {{512, 16, 1}, {4352, 8, 1}, {512, 8, 5}, {512, 16, 20}, {512, 136, 70}};
    bool ok = true;
    int tested = 0, exact_tested = 0;
    size_t count = 0;
    const quant::TypeTraits* all = quant::all_types(&count);
    for (size_t i = 0; i < count; ++i)
        tested += dispatch_int8_type(all[i].id, [&](auto c) {
            for (const Case& cs : cases) ok &= run_case<decltype(c)>(all[i], cs, rng);
            // K an odd number of 32-value steps (the tensor-core kernel's last K step half
            // full), for types whose blocks allow it.
            for (const Case& cs : {Case{352, 140, 70}})
                if (cs.K % all[i].block_elems == 0) ok &= run_case<decltype(c)>(all[i], cs, rng);
            // Row-interleaved forms of this type that the GPU multiplies exactly once converted.
            for (size_t j = 0; j < count; ++j) {
                const uint32_t stored = all[j].id;
                if (quant::repack_base(stored) != all[i].id || !exact_interleaved_form(stored)) continue;
                for (const Case& cs : exact_cases) {
                    Case e = cs;
                    e.stored = stored;
                    ok &= run_case<decltype(c)>(all[i], e, rng);
                }
                ++exact_tested;
            }
            ok &= run_experts<decltype(c)>(all[i], rng);
            ok &= run_gate_up<decltype(c)>(all[i], rng);
        });
    // Every interleaved type of exact_interleaved_form has a view of its base (12 types).
    ok &= exact_tested == 12;
    std::printf("%d types, %d converted interleaved forms -> %s\n", tested, exact_tested,
                ok && tested == (int)std::size(kInt8ViewTypes) ? "ok" : "FAIL");
    return ok && tested == (int)std::size(kInt8ViewTypes) ? 0 : 1;
}
