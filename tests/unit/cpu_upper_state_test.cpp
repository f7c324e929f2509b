// Every SIMD kernel the generic (SSE-encoded) engine code calls returns with the upper halves of
// the vector registers clean (vzeroupper). When a kernel leaves them dirty, each later legacy-SSE
// instruction of the generic code (expf in SwiGLU, the softmax of attention, sampling) pays a state
// transition: on this project's Sapphire Rapids machines that cost 16 % of token generation.
// The check reads XINUSE (xgetbv with ecx = 1): bit 2 = upper halves of ymm0-15, bit 6 = upper
// halves of zmm0-15 (zmm16-31, bit 7, are invisible to SSE code and not checked).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/attn_amx.h"
#include "kernels/attn_kernels.h"
#include "kernels/matmul.h"
#include "kernels/vec_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

using namespace ikllm;
using cpu::Isa;

namespace {

#if defined(__x86_64__)
bool has_xinuse() {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d)) return false;
    return (a >> 2) & 1;  // XGETBV with ecx = 1
}
uint64_t xinuse() {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return ((uint64_t)hi << 32) | lo;
}
// Upper YMM / ZMM state, and the AMX tile configuration and data (the tile kernels release them:
// a live tile state would be saved and restored, 8 KiB, at every context switch).
constexpr uint64_t kDirtyUpper = (1u << 2) | (1u << 6) | (1u << 17) | (1u << 18);
// Start each call from a clean state (only reached when the CPU has AVX).
void clear_upper() { __asm__ volatile("vzeroupper"); }
#else
bool has_xinuse() { return false; }
uint64_t xinuse() { return 0; }
constexpr uint64_t kDirtyUpper = 0;
void clear_upper() {}
#endif

std::vector<Isa> simd_isas() {
    std::vector<Isa> out;
    if (cpu::detected_isa() == Isa::avx2 || cpu::detected_isa() == Isa::avx512) out.push_back(Isa::avx2);
    if (cpu::detected_isa() == Isa::avx512) out.push_back(Isa::avx512);
    return out;
}

class UpperState : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!has_xinuse() || simd_isas().empty()) GTEST_SKIP() << "no AVX or no XGETBV(1) on this CPU";
        clear_upper();
        if (xinuse() & kDirtyUpper) GTEST_SKIP() << "upper state dirty before any kernel ran";
    }
    // Runs `fn`, then reports whether it left the upper state dirty.
    template <typename F>
    bool leaves_dirty(F&& fn) {
        clear_upper();
        fn();
        return (xinuse() & kDirtyUpper) != 0;
    }
};

TEST_F(UpperState, MatmulKernelsAndTheirEncoders) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int64_t K = 512, rows = 64;
    int checked = 0;
    std::vector<std::string> dirty;
    std::vector<std::pair<const cpu::MatmulKernel*, std::string>> kernels;
    for (Isa isa : simd_isas())
        for (uint32_t type = 0; type < 1024; ++type)
            if (const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, isa)) kernels.push_back({k, cpu::isa_name(isa)});
    if (cpu::amx_usable())
        for (uint32_t type = 0; type < 1024; ++type)
            if (const cpu::MatmulKernel* k = cpu::find_amx_matmul(type)) kernels.push_back({k, "amx"});
    for (const auto& entry : kernels) {
        const cpu::MatmulKernel* k = entry.first;  // (no structured binding: captured below, clang 14)
        const std::string& isa_label = entry.second;
        const uint32_t type = k->weight_type;
        const quant::TypeTraits* tt = quant::find_type(type);
        if (!tt || K % tt->block_elems != 0 || rows % tt->interleave != 0) continue;
        const size_t wrb = quant::row_bytes(*tt, K);
        std::vector<uint8_t> w(wrb * rows);
        // Small random bytes: valid codes for every integer format, finite halves for the float ones.
        for (auto& b : w) b = (uint8_t)(byte(rng) & 0x3b);
        const std::string name = std::string(tt->name) + "/" + isa_label;
        for (int64_t T : {1, 2, 3, 5, 8, 17, 40, 64}) {
            std::vector<float> x((size_t)(K * T));
            for (auto& v : x) v = nd(rng);
            const size_t arb = k->act->row_bytes(K);
            std::vector<uint8_t> act(arb * (size_t)T);
            if (leaves_dirty([&] {
                    for (int64_t t = 0; t < T; ++t) k->act->encode_row(x.data() + K * t, act.data() + arb * t, K);
                }))
                dirty.push_back(name + " encoder");
            std::vector<float> y((size_t)(rows * T));
            if (leaves_dirty([&] { k->run(w.data(), wrb, K, 0, rows, act.data(), arb, T, y.data(), rows); }))
                dirty.push_back(name + " T=" + std::to_string(T));
            ++checked;
        }
    }
    EXPECT_GT(checked, 100);
    std::string list;
    for (const auto& d : dirty) list += d + "\n";
    EXPECT_TRUE(dirty.empty()) << dirty.size() << " calls left the upper state dirty:\n" << list;
}

TEST_F(UpperState, AttentionKernels) {
    std::vector<std::string> dirty;
    const int64_t n = 576;
    std::vector<float> a(4 * n, 0.5f), b(n, 0.25f), y(4 * n, 1.f), out(4), p(4 * 8, 0.1f), v(8 * n, 0.3f), rs(4, 1.f);
    std::vector<uint8_t> cache(4 * n * 4, 0);
    for (Isa isa : simd_isas()) {
        const cpu::AttnKernels& k = cpu::attn_kernels(isa);
        if (k.isa != isa) continue;
        const std::string name = cpu::isa_name(isa);
        const float* rows4[4] = {a.data(), a.data() + n, a.data() + 2 * n, a.data() + 3 * n};
        if (leaves_dirty([&] { out[0] = k.dot(a.data(), b.data(), n); })) dirty.push_back(name + " dot");
        std::vector<float> sc(4 * 8);
        if (leaves_dirty([&] { k.scores(rows4, 4, v.data(), 8, n, 0.5f, sc.data(), 8); })) dirty.push_back(name + " scores");
        if (leaves_dirty([&] { k.scale_axpy(y.data(), 0.5f, 0.25f, a.data(), n); })) dirty.push_back(name + " scale_axpy");
        for (int nq : {1, 2, 3, 4})
            if (leaves_dirty([&] { k.pv_tile(y.data(), n, rs.data(), p.data(), 8, nq, v.data(), n, 8, n); }))
                dirty.push_back(name + " pv_tile nq=" + std::to_string(nq));
        for (uint32_t type : {quant::T_F32, quant::T_F16, quant::T_BF16, quant::T_Q8_0})
            if (leaves_dirty([&] { k.load_row(type, cache.data(), y.data(), n); }))
                dirty.push_back(name + " load_row " + quant::find_type(type)->name);
        const uint8_t* rows2[2] = {cache.data(), cache.data()};
        for (uint32_t type : {quant::T_F16, quant::T_Q8_0})
            for (int64_t len : {(int64_t)64, n})
                if (leaves_dirty([&] { k.load_rows(type, rows2, 2, y.data(), len); }))
                    dirty.push_back(name + " load_rows " + quant::find_type(type)->name);
    }
    // The tile-unit attention (pack and attend; tiles released, upper halves clean).
    if (const cpu::AmxAttention* A = cpu::amx_attention()) {
        const int64_t dk = 576, dv = 512, keys = 64;
        std::vector<float> kr(keys * dk, 0.25f), q(4 * dk, 0.5f), o(4 * dv);
        std::vector<uint16_t> kp(A->key_elems(keys, dk)), vp(A->value_elems(keys, dv));
        if (leaves_dirty([&] { A->pack_keys(kr.data(), 32, dk, kp.data()); })) dirty.push_back("amx pack_keys");
        if (leaves_dirty([&] { A->pack_keys(kr.data(), 32, dk, kp.data() + A->key_elems(32, dk)); })) dirty.push_back("amx pack_keys");
        if (leaves_dirty([&] { A->pack_values(kr.data(), 32, dv, vp.data()); })) dirty.push_back("amx pack_values");
        if (leaves_dirty([&] { A->pack_values(kr.data(), 32, dv, vp.data() + A->value_elems(32, dv)); })) dirty.push_back("amx pack_values");
        const float* qr[4] = {q.data(), q.data() + dk, q.data() + 2 * dk, q.data() + 3 * dk};
        float* orow[4] = {o.data(), o.data() + dv, o.data() + 2 * dv, o.data() + 3 * dv};
        const int64_t nv[4] = {1, 33, 64, 0};
        if (leaves_dirty([&] { A->attend(qr, nv, 4, 0.1f, kp.data(), vp.data(), dk, dv, orow); })) dirty.push_back("amx attend");
    }
    std::string list;
    for (const auto& d : dirty) list += d + "\n";
    EXPECT_TRUE(dirty.empty()) << list;
}

TEST_F(UpperState, ElementWiseKernels) {
    std::vector<float> g(37, 0.5f), u(37, 2.f), y(37);
    for (Isa isa : simd_isas()) {
        const cpu::VecKernels& k = cpu::vec_kernels(isa);
        EXPECT_FALSE(leaves_dirty([&] { k.silu_mul(g.data(), u.data(), y.data(), 37); })) << cpu::isa_name(isa);
        EXPECT_FALSE(leaves_dirty([&] { y[0] = k.exp_shift_sum(g.data(), 37, 1.f); })) << cpu::isa_name(isa);
    }
}

}  // namespace
