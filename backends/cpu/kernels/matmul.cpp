// Kernel registry: run-time ISA detection, lookup of the best kernel per weight type, the shared
// activation formats, and the generic fallback (dequantize a tile of weight rows to float32,
// then run the F32 kernel of the same ISA) for every decodable type without its own kernel.
#include "kernels/matmul.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/fp16.h"
#include "quant/act_q8_0.h"
#include "quant/type_traits.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define IKLLM_KERNELS_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace ikllm::cpu {
namespace {

using namespace ikllm::quant;

// ---- ISA detection -----------------------------------------------------------------------------

#ifdef IKLLM_KERNELS_X86
uint64_t read_xcr0() {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

Isa detect_x86() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::scalar;
    const bool osxsave = c & (1u << 27), avx = c & (1u << 28), fma = c & (1u << 12), f16c = c & (1u << 29);
    if (!osxsave || !avx) return Isa::scalar;
    const uint64_t xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6) return Isa::scalar;  // SSE + AVX state saved by the OS
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return Isa::scalar;
    const bool avx2 = b & (1u << 5), bmi2 = b & (1u << 8);
    if (!(avx2 && bmi2 && fma && f16c)) return Isa::scalar;
    // The avx512 kernel files are built with F, BW, VL, DQ, VNNI, BF16 and VBMI: require all.
    const bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
    const bool vbmi = c & (1u << 1), vnni = c & (1u << 11);
    unsigned a1 = 0, b1, c1, d1;
    const bool bf16 = __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 5));
    const bool os512 = (xcr0 & 0xE6) == 0xE6;  // opmask + upper ZMM state
    if (f && dq && bw && vl && vbmi && vnni && bf16 && os512) return Isa::avx512;
    return Isa::avx2;
}

// AVX-VNNI (the VEX-encoded dpbusd of 256-bit registers): CPUID.(7,1):EAX bit 4, with AVX2.
bool detect_avxvnni() {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return (a & (1u << 4)) != 0;
}

// AMX-TILE + AMX-BF16 in CPUID, and the tile data state granted to this process: Linux enables
// it per process on request (ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18).
bool detect_amx() {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
    if (!amx_bf16 || !amx_tile) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
    if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return false;
    return (read_xcr0() & (3ull << 17)) == (3ull << 17);
#else
    return false;
#endif
}
#endif

Isa detect() {
#ifdef IKLLM_KERNELS_X86
    return detect_x86();
#elif defined(__aarch64__) && defined(__linux__)
    // The NEON kernel files need the dot-product instructions (Armv8.2 DotProd).
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) ? Isa::neon : Isa::scalar;
#elif defined(__aarch64__) && defined(__APPLE__)
    int dot = 0;
    size_t len = sizeof(dot);
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &dot, &len, nullptr, 0) == 0 && dot ? Isa::neon : Isa::scalar;
#else
    return Isa::scalar;
#endif
}

// Order for "at most": x86 scalar < avx2 < avx512; neon stands alone above scalar.
bool isa_le(Isa a, Isa cap) {
    if (cap == Isa::neon) return a == Isa::neon || a == Isa::scalar;
    if (a == Isa::neon) return false;
    return (int)a <= (int)cap;
}

Isa cap_isa(Isa want, Isa have) {
    if (isa_le(want, have)) return want;
    if (have == Isa::neon || want == Isa::neon) return Isa::scalar;
    return have;
}

// ---- shared activation formats -----------------------------------------------------------------

size_t f32_row_bytes(int64_t ne0) { return (size_t)ne0 * 4; }
void f32_encode(const float* x, uint8_t* out, int64_t ne0) { std::memcpy(out, x, (size_t)ne0 * 4); }
size_t bf16_row_bytes(int64_t ne0) { return (size_t)ne0 * 2; }
void bf16_encode(const float* x, uint8_t* out, int64_t ne0) {
    for (int64_t i = 0; i < ne0; ++i) {
        const uint16_t h = f32_to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
    }
}

constexpr ActFormat kActF32{T_F32, f32_row_bytes, f32_encode};
constexpr ActFormat kActBf16{T_BF16, bf16_row_bytes, bf16_encode};
constexpr ActFormat kActQ8_0{T_Q8_0, act_q8_0_row_bytes, act_q8_0_encode_row};
constexpr ActFormat kActQ8_2X4{T_Q8_2_X4, act_q8_2_x4_row_bytes, act_q8_2_x4_encode_row};

// ---- registry ------------------------------------------------------------------------------------

const std::vector<MatmulKernel>& registry() {
    static const std::vector<MatmulKernel> all = [] {
        std::vector<MatmulKernel> v;
        // First match wins (find_matmul_exact): the AVX-VNNI builds of AVX2 kernels go first.
        if (avxvnni_usable())
            for (const KernelTable& t : {legacy_kernels_avxvnni(), kquant_kernels_avxvnni()})
                for (size_t i = 0; i < t.count; ++i) v.push_back(t.entries[i]);
        const KernelTable tables[] = {
            float_kernels_scalar(),   float_kernels_avx2(),   float_kernels_avx512(),
            legacy_kernels_scalar(),  legacy_kernels_avx2(),  legacy_kernels_avx512(),
            kquant_kernels_scalar(),  kquant_kernels_avx2(),  kquant_kernels_avx512(),
            iqk_kernels_scalar(),     iqk_kernels_avx2(),     iqk_kernels_avx512(),
            grid_kernels_scalar(),    grid_kernels_avx2(),    grid_kernels_avx512(),
            trellis_kernels_scalar(), trellis_kernels_avx2(), trellis_kernels_avx512(),
            ternary_kernels_scalar(), ternary_kernels_avx2(), ternary_kernels_avx512(),
            interleaved_kernels_scalar(), interleaved_kernels_avx2(), interleaved_kernels_avx512(),
            float_kernels_neon(),     legacy_kernels_neon(),  kquant_kernels_neon(),  iqk_kernels_neon(),
            grid_kernels_neon(),      trellis_kernels_neon(),
        };
        for (const KernelTable& t : tables)
            for (size_t i = 0; i < t.count; ++i) v.push_back(t.entries[i]);
        return v;
    }();
    return all;
}

// ---- generic fallback ----------------------------------------------------------------------------

// Every GGUF type id; a fallback kernel exists per (id, ISA) and is offered for decodable ids.
constexpr uint32_t kAllIds[] = {
    T_F32, T_F16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q8_1, T_Q2_K, T_Q3_K, T_Q4_K, T_Q5_K,
    T_Q6_K, T_Q8_K, T_IQ2_XXS, T_IQ2_XS, T_IQ3_XXS, T_IQ1_S, T_IQ4_NL, T_IQ3_S, T_IQ2_S, T_IQ4_XS,
    T_I8, T_I16, T_I32, T_I64, T_F64, T_IQ1_M, T_BF16, T_Q4_0_4X4, T_Q4_0_4X8, T_Q4_0_8X8, T_I2_S,
    T_MXFP4, T_Q1_0_G128, T_Q8_0_X4, T_Q8_1_X4, T_Q8_2_X4, T_Q6_0, T_IQ1_BN, T_IQ2_BN, T_Q8_K64,
    T_IQ2_K, T_IQ3_K, T_IQ4_K, T_IQ5_K, T_IQ6_K, T_IQ4_KS, T_IQ2_KS, T_IQ4_KSS, T_Q8_K16, T_Q8_K32,
    T_Q8_KR8, T_Q8_K128, T_Q8_KV, T_IQ5_KS, T_IQ2_KT, T_IQ3_KT, T_IQ4_KT, T_IQ3_KS, T_IQ2_KL,
    T_IQ1_KT, T_Q4_0_R8, T_Q5_0_R4, T_Q8_0_R8, T_Q2_K_R4, T_Q3_K_R4, T_Q4_K_R4, T_Q5_K_R4,
    T_Q6_K_R4, T_IQ2_XXS_R4, T_IQ2_XS_R4, T_IQ3_XXS_R4, T_IQ1_S_R4, T_IQ4_NL_R4, T_IQ3_S_R4,
    T_IQ2_S_R4, T_IQ4_XS_R8, T_IQ1_M_R4, T_BF16_R16, T_Q6_0_R4, T_IQ2_BN_R4, T_IQ2_K_R4,
    T_IQ3_K_R4, T_IQ4_K_R4, T_IQ5_K_R4, T_IQ4_KS_R4, T_IQ5_KS_R4, T_MXFP4_R8, T_Q8_K_R16,
    T_Q8_KV_R8, T_Q8_K_R8, T_Q2_K_R8, T_Q3_K_R8, T_Q4_K_R8, T_Q5_K_R8, T_Q6_K_R8, T_IQ4_XS_X8, T_IQ2_K_R8, T_IQ3_K_R8, T_IQ4_K_R8,
    T_IQ4_KS_R8, T_IQ2_KS_R8, T_IQ5_KS_R8, T_IQ3_KS_R8, T_IQ2_KL_R8,
};
constexpr size_t kNumIds = sizeof(kAllIds) / sizeof(kAllIds[0]);

// Decode up to ~256 KiB of weight rows at a time (whole row groups), then multiply as F32.
void generic_tile(uint32_t type, Isa isa, const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0,
                  int64_t r1, const uint8_t* act, size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride) {
    const TypeTraits* tt = find_type(type);
    const MatmulKernel* f32 = find_matmul_exact(T_F32, isa);
    if (!f32) f32 = find_matmul_exact(T_F32, Isa::scalar);
    if (!tt || !tt->dequant || !f32 || r1 <= r0) return;
    const int64_t il = tt->interleave > 0 ? tt->interleave : 1;
    int64_t tile = std::max<int64_t>(il, (int64_t)(65536 / std::max<int64_t>(ne0, 1)) / il * il);
    tile = std::min<int64_t>(tile, ((r1 - r0) + il - 1) / il * il);
    std::vector<float> buf((size_t)(tile * ne0));
    for (int64_t rb = r0; rb < r1; rb += tile) {
        const int64_t re = std::min(r1, rb + tile);
        for (int64_t g = rb; g < re; g += il) tt->dequant(w + (size_t)g * w_row_bytes, buf.data() + (g - rb) * ne0, ne0);
        f32->run(reinterpret_cast<const uint8_t*>(buf.data()), (size_t)ne0 * 4, ne0, 0, re - rb, act, act_row_bytes, nt,
                 y + rb, y_stride);
    }
}

template <size_t I, int IsaV>
void fallback_run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                  int64_t nt, float* y, int64_t ys) {
    generic_tile(kAllIds[I], (Isa)IsaV, w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

constexpr int kNumIsas = 4;  // indexed by (int)Isa

template <size_t... I>
std::vector<MatmulKernel> make_fallbacks(std::index_sequence<I...>) {
    std::vector<MatmulKernel> v;
    v.reserve(kNumIds * kNumIsas);
    auto add = [&](uint32_t id, MatmulFn s, MatmulFn a2, MatmulFn a5, MatmulFn ne) {
        v.push_back({id, Isa::scalar, &kActF32, s});
        v.push_back({id, Isa::avx2, &kActF32, a2});
        v.push_back({id, Isa::avx512, &kActF32, a5});
        v.push_back({id, Isa::neon, &kActF32, ne});
    };
    (add(kAllIds[I], &fallback_run<I, 0>, &fallback_run<I, 1>, &fallback_run<I, 2>, &fallback_run<I, 3>), ...);
    return v;
}

const MatmulKernel* fallback(uint32_t type, Isa isa) {
    static const std::vector<MatmulKernel> all = make_fallbacks(std::make_index_sequence<kNumIds>{});
    const TypeTraits* tt = find_type(type);
    if (!tt || !tt->dequant) return nullptr;
    for (const MatmulKernel& k : all)
        if (k.weight_type == type && k.isa == isa) return &k;
    return nullptr;
}

}  // namespace

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
        case Isa::neon: return "neon";
    }
    return "unknown";
}

Isa detected_isa() {
    static const Isa isa = detect();
    return isa;
}

Isa best_isa() {
    static const Isa isa = [] {
        const Isa hw = detected_isa();
        const char* env = std::getenv("IKLLM_ISA");
        if (!env || !*env) return hw;
        for (Isa cand : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon})
            if (std::strcmp(env, isa_name(cand)) == 0) return cap_isa(cand, hw);
        return hw;  // unknown value: ignore
    }();
    return isa;
}

const ActFormat* act_format_f32() { return &kActF32; }
const ActFormat* act_format_bf16() { return &kActBf16; }
const ActFormat* act_format_q8_0() { return &kActQ8_0; }
const ActFormat* act_format_q8_2_x4() { return &kActQ8_2X4; }

const MatmulKernel* find_matmul_exact(uint32_t weight_type, Isa isa) {
    for (const MatmulKernel& k : registry())
        if (k.weight_type == weight_type && k.isa == isa) return &k;
    return nullptr;
}

bool avxvnni_usable() {
    static const bool ok = [] {
        const char* env = std::getenv("IKLLM_AVXVNNI");
        if (env && std::strcmp(env, "0") == 0) return false;
        if (legacy_kernels_avxvnni().count == 0) return false;
        const Isa hw = detected_isa();
        if (hw != Isa::avx2 && hw != Isa::avx512) return false;
#ifdef IKLLM_KERNELS_X86
        return detect_avxvnni();
#else
        return false;
#endif
    }();
    return ok;
}

bool amx_usable() {
    static const bool ok = [] {
        const char* env = std::getenv("IKLLM_AMX");
        if (env && std::strcmp(env, "0") == 0) return false;
        if (amx_kernels().count == 0 || detected_isa() != Isa::avx512) return false;
#ifdef IKLLM_KERNELS_X86
        return detect_amx();
#else
        return false;
#endif
    }();
    return ok;
}

const MatmulKernel* find_amx_matmul(uint32_t weight_type) {
    const KernelTable t = amx_kernels();
    for (size_t i = 0; i < t.count; ++i)
        if (t.entries[i].weight_type == weight_type) return &t.entries[i];
    return nullptr;
}

const MatmulKernel* find_batch_matmul(uint32_t weight_type, Isa max_isa, int64_t nt) {
    if (nt >= kAmxMinTokens && max_isa == Isa::avx512 && amx_usable())
        if (const MatmulKernel* k = find_amx_matmul(weight_type)) return k;
    return find_matmul(weight_type, max_isa);
}

const MatmulKernel* find_matmul(uint32_t weight_type, Isa max_isa) {
    const Isa cap = cap_isa(max_isa, detected_isa());  // never hand out a kernel the CPU lacks
    // Diagnostic: IKLLM_MATMUL=dequant runs every type through the f32 dequantize-tile path, which
    // separates weight-decoding errors from activation-quantization differences.
    static const bool force_dequant = [] {
        const char* e = std::getenv("IKLLM_MATMUL");
        return e && std::strcmp(e, "dequant") == 0;
    }();
    if (force_dequant && weight_type != quant::T_F32)
        if (const MatmulKernel* k = fallback(weight_type, cap)) return k;
    static constexpr Isa kOrder[] = {Isa::neon, Isa::avx512, Isa::avx2, Isa::scalar};
    for (Isa isa : kOrder)
        if (isa_le(isa, cap))
            if (const MatmulKernel* k = find_matmul_exact(weight_type, isa)) return k;
    return fallback(weight_type, cap);
}

}  // namespace ikllm::cpu
