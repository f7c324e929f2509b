// Host check (no GPU) of the per-element math of the CUDA non-matrix ops (backends/cuda/op_math.cuh)
// against the CPU backend: f16/bf16 conversions and q8_0 rows against src/core/fp16.h and
// quant::kv_encode_row / kv_decode_row (bit exact), RoPE against a transcription of
// cpu::rope_cache (float, as backends/cpu/op_basic.cpp computes it) and a double-precision
// evaluation of architectures.md §3, SwiGLU / sigmoid against the float formulas.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "cuda/act_round_cache.h"
#include "cuda/op_math.cuh"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

using namespace ikllm;
namespace m = ikllm::cuda::math;

namespace {

int g_fail = 0;
#define EXPECT(cond, ...)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            if (g_fail < 40) {                              \
                std::printf("FAIL %s:%d: ", __FILE__, __LINE__); \
                std::printf(__VA_ARGS__);                   \
                std::printf("\n");                          \
            }                                               \
            ++g_fail;                                       \
        }                                                   \
    } while (0)

float bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint32_t ubits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

void test_half_bf16() {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float a = m::f16_to_f32((uint16_t)h), b = f16_to_f32((uint16_t)h);
        EXPECT(ubits(a) == ubits(b), "f16_to_f32 %04x", h);
        const float c = m::bf16_to_f32((uint16_t)h), d = bf16_to_f32((uint16_t)h);
        EXPECT(ubits(c) == ubits(d), "bf16_to_f32 %04x", h);
    }
    std::mt19937 rng(1);
    std::vector<uint32_t> pats;
    for (int i = 0; i < 2000000; ++i) pats.push_back(rng());
    // edges: around f16 rounding boundaries, subnormals, overflow, inf, nan
    const uint32_t edges[] = {0u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0x477ff000u,
                              0x477fefffu, 0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u, 0x32ffffffu,
                              0x3f800000u, 0x3f801000u, 0x3f803000u, 0x3f800fffu, 0x00000001u, 0x7f7fffffu};
    for (uint32_t e : edges) {
        for (int d = -3; d <= 3; ++d) pats.push_back(e + (uint32_t)d);
    }
    for (uint32_t e = 0x33000000u; e < 0x38800000u; e += 0x1000u - 1) pats.push_back(e);  // subnormal range
    for (uint32_t x : pats) {
        const float f = bits(x);
        EXPECT(m::f32_to_f16(f) == f32_to_f16(f), "f32_to_f16 %08x", x);
        EXPECT(m::f32_to_bf16(f) == f32_to_bf16(f), "f32_to_bf16 %08x", x);
    }
}

void test_q8_0() {
    std::mt19937 rng(2);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int rep = 0; rep < 20000; ++rep) {
        float x[32];
        const int kind = rep % 5;
        const float sc = std::pow(10.0f, (float)(rep % 13) - 6.0f);
        for (int i = 0; i < 32; ++i) {
            if (kind == 0) x[i] = nd(rng) * sc;
            else if (kind == 1) x[i] = 0.0f;                                   // all zero
            else if (kind == 2) x[i] = (float)((int)(rng() % 255) - 127) * 0.5f;  // exact halves: ties
            else if (kind == 3) x[i] = (i == 0 ? 127.0f : (float)((int)(rng() % 255) - 127)) * sc;
            else x[i] = (rng() % 4 == 0) ? 0.0f : nd(rng) * 1e-6f;
        }
        uint8_t a[34], b[34];
        m::q8_0_encode_block(x, a);
        quant::kv_encode_row(quant::T_Q8_0, x, b, 32);
        EXPECT(std::memcmp(a, b, 34) == 0, "q8_0 encode rep %d", rep);
        float ya[32], yb[32];
        quant::kv_decode_row(quant::T_Q8_0, b, yb, 32);
        for (int i = 0; i < 32; ++i) ya[i] = m::q8_0_decode(b, i);
        EXPECT(std::memcmp(ya, yb, sizeof ya) == 0, "q8_0 decode rep %d", rep);
    }
    // decode of element e of a multi-block row
    std::vector<float> row(576);
    for (auto& v : row) v = nd(rng);
    std::vector<uint8_t> enc(quant::kv_row_bytes(quant::T_Q8_0, 576));
    quant::kv_encode_row(quant::T_Q8_0, row.data(), enc.data(), 576);
    std::vector<float> dec(576);
    quant::kv_decode_row(quant::T_Q8_0, enc.data(), dec.data(), 576);
    for (int e = 0; e < 576; ++e) EXPECT(ubits(m::q8_0_decode(enc.data(), e)) == ubits(dec[e]), "q8_0 row elem %d", e);
    // f16 / bf16 rows through the codec
    std::vector<uint16_t> h(576);
    quant::kv_encode_row(quant::T_F16, row.data(), h.data(), 576);
    for (int e = 0; e < 576; ++e) EXPECT(h[e] == m::f32_to_f16(row[e]), "f16 row %d", e);
    quant::kv_encode_row(quant::T_BF16, row.data(), h.data(), 576);
    for (int e = 0; e < 576; ++e) EXPECT(h[e] == m::f32_to_bf16(row[e]), "bf16 row %d", e);
}

// Transcription of cpu::rope_cache (backends/cpu/op_basic.cpp): float math, glibc cosf/sinf.
void cpu_rope_cache(float* cos_out, float* sin_out, float pos, const RopeParams& p) {
    const int32_t half = p.n_dims / 2;
    const float theta_scale = std::pow(p.freq_base, -2.0f / (float)p.n_dims);
    float low = 0, high = 0;
    if (p.ext_factor != 0.0f) {
        auto corr_dim = [&](float beta) {
            return (float)p.n_dims * std::log((float)p.n_ctx_orig / (beta * 2.0f * (float)M_PI)) /
                   (2.0f * std::log(p.freq_base));
        };
        low = std::max(0.0f, std::floor(corr_dim(p.beta_fast)));
        high = std::min((float)p.n_dims - 1, std::ceil(corr_dim(p.beta_slow)));
    }
    float theta = pos;
    for (int32_t j = 0; j < half; ++j) {
        const float ff = p.freq_factors ? p.freq_factors[j] : 1.0f;
        const float theta_extrap = theta / ff;
        const float theta_interp = p.freq_scale * theta_extrap;
        float th = theta_interp;
        float mg = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float y = ((float)j - low) / std::max(0.001f, high - low);
            const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, y));
            const float mix = ramp * p.ext_factor;
            th = theta_interp * (1 - mix) + theta_extrap * mix;
            mg *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        cos_out[j] = std::cos(th) * mg;
        sin_out[j] = std::sin(th) * mg;
        theta *= theta_scale;
    }
}

// Double-precision evaluation of architectures.md §3 given the float angles theta_j.
void double_rope(double* co, double* si, const float* theta, const RopeParams& p) {
    const int half = p.n_dims / 2;
    double low = 0, high = 0;
    if (p.ext_factor != 0.0f) {
        auto corr_dim = [&](double beta) {
            return p.n_dims * std::log(p.n_ctx_orig / (beta * 2.0 * M_PI)) / (2.0 * std::log((double)p.freq_base));
        };
        low = std::max(0.0, std::floor(corr_dim(p.beta_fast)));
        high = std::min((double)p.n_dims - 1, std::ceil(corr_dim(p.beta_slow)));
    }
    for (int j = 0; j < half; ++j) {
        const double ff = p.freq_factors ? p.freq_factors[j] : 1.0;
        const double te = theta[j] / ff, ti = p.freq_scale * te;
        double th = ti, mg = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const double y = (j - low) / std::max(0.001, high - low);
            const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));
            const double mix = ramp * p.ext_factor;
            th = ti * (1 - mix) + te * mix;
            mg *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
        }
        co[j] = std::cos(th) * mg;
        si[j] = std::sin(th) * mg;
    }
}

void test_rope_case(const RopeParams& p, const char* name) {
    const int half = p.n_dims / 2;
    const m::RopeConsts c = m::rope_consts(p);
    std::vector<float> th(half), ca(half), sa(half), cb(half), sb(half);
    std::vector<double> cd(half), sd(half);
    const int positions[] = {0, 1, 2, 7, 100, 511, 4095, 32767, 131071};
    int n_ulp1 = 0, n_total = 0;
    for (int pos : positions) {
        m::rope_thetas((float)pos, c, th.data());
        for (int j = 0; j < half; ++j) {
            // each thread's own angle (rope_kernel) is the recurrence's, bit for bit
            const float own = m::rope_theta((float)pos, c, j);
            EXPECT(std::memcmp(&own, &th[j], 4) == 0, "%s pos %d j %d: rope_theta %.9g vs recurrence %.9g", name, pos, j,
                   own, th[j]);
            const float ff = p.freq_factors ? p.freq_factors[j] : 1.0f;
            m::rope_cos_sin(th[j], j, ff, c, &ca[j], &sa[j]);
        }
        cpu_rope_cache(cb.data(), sb.data(), (float)pos, p);
        double_rope(cd.data(), sd.data(), th.data(), p);
        for (int j = 0; j < half; ++j) {
            // vs the CPU's float computation: equal up to the last bit of cosf/sinf
            const float tol = 2.5e-7f * std::fabs(p.attn_factor) * 2.0f;
            EXPECT(std::fabs(ca[j] - cb[j]) <= tol && std::fabs(sa[j] - sb[j]) <= tol,
                   "%s pos %d j %d: cos %.9g vs cpu %.9g, sin %.9g vs cpu %.9g", name, pos, j, ca[j], cb[j], sa[j], sb[j]);
            n_ulp1 += (ca[j] != cb[j]) + (sa[j] != sb[j]);
            n_total += 2;
            // vs double precision of the documented formula (same float angles theta_j): 1e-5 plus the
            // float rounding of the YaRN angle mix (a few ulp of the angle, which grows with the position)
            const double ang = std::fabs((double)th[j] / (p.freq_factors ? p.freq_factors[j] : 1.0f));
            const double tol_d = 1e-5 + 5e-7 * ang * std::fabs((double)c.mag);
            EXPECT(std::fabs(ca[j] - cd[j]) <= tol_d && std::fabs(sa[j] - sd[j]) <= tol_d,
                   "%s pos %d j %d vs double: %.9g %.9g / %.9g %.9g", name, pos, j, ca[j], cd[j], sa[j], sd[j]);
        }
    }
    std::printf("rope %-28s low %.0f high %.0f mag %.6f: %d/%d values differ from the CPU's in the last bit\n", name,
                c.low, c.high, c.mag, n_ulp1, n_total);
    // rotation and pair layout
    std::vector<float> x(p.n_dims + 4), y;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> ud(-2.0f, 2.0f);
    for (auto& v : x) v = ud(rng);
    y = x;
    m::rope_thetas(37.0f, c, th.data());
    for (int j = 0; j < half; ++j) {
        const float ff = p.freq_factors ? p.freq_factors[j] : 1.0f;
        m::rope_cos_sin(th[j], j, ff, c, &ca[j], &sa[j]);
        int32_t i0, i1;
        m::rope_pair(c, j, &i0, &i1);
        m::rope_rotate(y[i0], y[i1], ca[j], sa[j]);
    }
    for (int j = 0; j < half; ++j) {
        const int i0 = p.mode == RopeMode::neox ? j : 2 * j, i1 = p.mode == RopeMode::neox ? j + half : 2 * j + 1;
        const float e0 = x[i0] * ca[j] - x[i1] * sa[j], e1 = x[i0] * sa[j] + x[i1] * ca[j];
        EXPECT(y[i0] == e0 && y[i1] == e1, "%s rotate j %d", name, j);
    }
    for (size_t i = p.n_dims; i < x.size(); ++i) EXPECT(y[i] == x[i], "%s tail %zu", name, i);
}

void test_rope() {
    RopeParams p;
    p.mode = RopeMode::norm;
    p.n_dims = 128;
    p.freq_base = 10000.f;
    test_rope_case(p, "llama plain");
    p.mode = RopeMode::neox;
    p.freq_base = 1000000.f;
    test_rope_case(p, "qwen neox");
    p.freq_scale = 0.25f;
    test_rope_case(p, "linear x4");
    // Qwen3 YaRN: n_dims 128, n_ctx_orig 32768, base 1e6 -> low 23, high 40
    p.freq_scale = 0.25f;
    p.ext_factor = 1.0f;
    p.n_ctx_orig = 32768;
    test_rope_case(p, "qwen3 yarn");
    {
        const m::RopeConsts c = m::rope_consts(p);
        EXPECT(c.low == 23.0f && c.high == 40.0f, "qwen3 yarn low/high %g %g", c.low, c.high);
    }
    // DeepSeek: n_dims 64, n_ctx_orig 4096, base 10000 -> low 10, high 23
    RopeParams d;
    d.mode = RopeMode::norm;
    d.n_dims = 64;
    d.freq_base = 10000.f;
    d.freq_scale = 1.0f / 40.0f;
    d.ext_factor = 1.0f;
    d.attn_factor = 0.7f;
    d.n_ctx_orig = 4096;
    test_rope_case(d, "deepseek yarn");
    {
        const m::RopeConsts c = m::rope_consts(d);
        EXPECT(c.low == 10.0f && c.high == 23.0f, "deepseek low/high %g %g", c.low, c.high);
    }
    // llama3 frequency factors
    std::vector<float> ff(64);
    for (int j = 0; j < 64; ++j) ff[j] = j < 20 ? 1.0f : (j < 40 ? 1.0f + (j - 20) * 0.35f : 8.0f);
    RopeParams l;
    l.mode = RopeMode::norm;
    l.n_dims = 128;
    l.freq_base = 500000.f;
    l.freq_factors = ff.data();
    test_rope_case(l, "llama3 freq_factors");
}

void test_activations() {
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> ud(-30.0f, 30.0f);
    for (int i = 0; i < 100000; ++i) {
        const float g = ud(rng), u = ud(rng);
        const float a = m::silu_mul(g, u), b = g / (1.0f + std::exp(-g)) * u;
        EXPECT(std::fabs(a - b) <= 1e-6f * std::fabs(b) + 1e-30f, "silu %g %g: %.9g vs %.9g", g, u, a, b);
        const float s = m::sigmoid(g), t = 1.0f / (1.0f + std::exp(-g));
        EXPECT(std::fabs(s - t) <= 1e-6f * t, "sigmoid %g", g);
        const float e = m::exp_f(g * 0.1f), f = std::exp(g * 0.1f);
        EXPECT(std::fabs(e - f) <= 2.5e-7f * f, "exp %g", g);
    }
}

}  // namespace

// The executor's shared rounded activations (act_round_cache.h): a copy is found only for the
// same rows and rounding, and any write overlapping the rows it was made from drops it.
void test_act_round_cache() {
    std::vector<float> rows(4 * 64);
    float fake_copy[1];
    ikllm::cuda::ActRoundKey k;
    k.x = rows.data();
    k.x_t = 64 * sizeof(float);
    k.T = 4;
    k.K = 48;  // rows 0..3, the last one's 48 floats
    k.mode = 1;
    ikllm::cuda::ActRoundCache c;
    EXPECT(!c.find(k), "empty cache found a copy");
    c.store(k, {fake_copy, nullptr, nullptr});
    EXPECT(c.find(k) && c.find(k)->x == fake_copy, "stored copy not found");
    for (int field = 0; field < 6; ++field) {
        ikllm::cuda::ActRoundKey o = k;
        if (field == 0) o.x = rows.data() + 1;
        if (field == 1) o.x_t += 4;
        if (field == 2) o.T = 3;
        if (field == 3) o.mode = 2;
        if (field == 4) o.f16 = true;
        if (field == 5) o.codes = true;
        EXPECT(!c.find(o), "key field %d ignored", field);
    }
    const uintptr_t lo = reinterpret_cast<uintptr_t>(rows.data());
    const uintptr_t end = lo + 3 * 64 * 4 + 48 * 4;  // one past the last float read
    c.written(end, end + 64);  // just after
    c.written(lo - 64, lo);    // just before
    EXPECT(c.valid(), "writes beside the rows dropped the copy");
    c.written(end - 4, end);  // the last float read
    EXPECT(!c.valid() && !c.find(k), "a write into the rows kept the copy");
    c.store(k, {fake_copy, nullptr, nullptr});
    c.written(lo - 8, lo + 4);
    EXPECT(!c.valid(), "a write over the first row kept the copy");
    c.store(k, {fake_copy, nullptr, nullptr});
    c.clear();
    EXPECT(!c.find(k), "clear kept the copy");
}

int main() {
    test_act_round_cache();
    test_half_bf16();
    test_q8_0();
    test_rope();
    test_activations();
    if (g_fail) {
        std::printf("cuda_op_math_host_test: %d failures\n", g_fail);
        return 1;
    }
    std::printf("cuda_op_math_host_test: ok\n");
    return 0;
}
