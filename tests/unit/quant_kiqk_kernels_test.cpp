// Matmul kernels of the K-quant and ik K/KS types (kernels/kquant_unpack.h): the scalar kernel
// against an independent double-precision model of the reference's numerics, and every SIMD
// kernel against scalar, on odd row counts, row sub-ranges, several row lengths and token
// counts. The model covers the three deviations from an exact dot product:
//  * activation format: Q8_2_X4 (one bf16 scale per 32) for Q4_K/Q5_K/Q6_K, Q8_K otherwise;
//  * "sat" types below 32 tokens: int16-saturating pair sums of (level + 128) * code. The float
//    model is checked on activations that cannot saturate; a constructed block checks the
//    saturated arithmetic itself; SIMD vs scalar runs on ordinary (saturating) data;
//  * 32 tokens or more: Q8_K types re-encoded to 8-bit codes with one fp16 scale per 256
//    (modelled from the dequantized weights: integer levels, or Q2_K's float values),
//    Q4_K / Q5_K with fp16-rounded per-32 scales.
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/act_q8_k.h"
#include "quant/families.h"
#include "quant/quant_tables.h"
#include "test_support.h"

using namespace ikllm;
using namespace ikllm::quant;
using namespace ikllm::cpu;

namespace {

struct TypeCase {
    uint32_t id;
    const char* name;
    int bytes, meta;
    std::vector<int> f16_fields;  // offsets of fp16 scales inside a block (randomised data gets sane values)
};

const std::vector<TypeCase>& cases() {
    static const std::vector<TypeCase> c = {
        {T_Q2_K, "q2_K", 84, 0, {80, 82}},     {T_Q3_K, "q3_K", 110, 0, {108}},   {T_Q4_K, "q4_K", 144, 0, {0, 2}},
        {T_Q5_K, "q5_K", 176, 0, {0, 2}},      {T_Q6_K, "q6_K", 210, 0, {208}},   {T_IQ4_XS, "iq4_xs", 136, 0, {0}},
        {T_IQ2_K, "iq2_k", 76, 0, {0}},        {T_IQ3_K, "iq3_k", 110, 0, {0}},   {T_IQ4_K, "iq4_k", 144, 0, {0}},
        {T_IQ5_K, "iq5_k", 176, 0, {0}},       {T_IQ6_K, "iq6_k", 212, 0, {0}},   {T_IQ2_KS, "iq2_ks", 70, 2, {}},
        {T_IQ3_KS, "iq3_ks", 102, 2, {}},      {T_IQ4_KS, "iq4_ks", 136, 4, {}},  {T_IQ4_KSS, "iq4_kss", 128, 4, {}},
        {T_IQ5_KS, "iq5_ks", 168, 4, {}},      {T_IQ2_KL, "iq2_kl", 86, 2, {}},
    };
    return c;
}

constexpr int64_t kConvTokens = 32;  // batches this large take the re-encoded path
constexpr int64_t kLanesTokens = 16;  // AVX2 Q4_K / Q5_K / Q6_K batches this large: eight tokens per register

bool is_q82(uint32_t id) { return id == T_Q4_K || id == T_Q5_K || id == T_Q6_K; }
bool is_sat(uint32_t id) {
    return id == T_IQ4_XS || id == T_IQ4_K || id == T_IQ5_K || id == T_IQ6_K || id == T_IQ4_KS || id == T_IQ4_KSS ||
           id == T_IQ5_KS;
}
bool is_conv8(uint32_t id) {  // Q8_K types re-encoded to 8 bits for large batches
    return !is_q82(id);
}
// dnew = max * d0 of the re-encoding (reference constants).
float conv_d0(uint32_t id) { return id == T_IQ2_K ? 1.0f / 120.0f : (id == T_IQ2_KS || id == T_IQ2_KL) ? 1.0f / 125.0f : 1.0f / 127.0f; }
bool is_conv45(uint32_t id) { return id == T_Q4_K || id == T_Q5_K; }
constexpr int64_t kConv6Tokens = 64;  // Q6_K batches this large are re-encoded to 8 bits per 32

const FamilyEntry* family_entry(uint32_t id) {
    for (FamilyTable t : {kquant_family(), iqk_family()})
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].id == id) return &t.entries[i];
    return nullptr;
}

const MatmulKernel* kernel(uint32_t id, Isa isa) {
    KernelTable tabs[2];
    if (isa == Isa::scalar) { tabs[0] = kquant_kernels_scalar(); tabs[1] = iqk_kernels_scalar(); }
    else if (isa == Isa::avx2) { tabs[0] = kquant_kernels_avx2(); tabs[1] = iqk_kernels_avx2(); }
    else if (isa == Isa::neon) { tabs[0] = kquant_kernels_neon(); tabs[1] = iqk_kernels_neon(); }
    else { tabs[0] = kquant_kernels_avx512(); tabs[1] = iqk_kernels_avx512(); }
    for (const KernelTable& t : tabs)
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].weight_type == id) return &t.entries[i];
    return nullptr;
}

// The AVX-VNNI build of a type's AVX2 kernel, where this CPU runs it.
const MatmulKernel* avxvnni_kernel(uint32_t id) {
    if (!avxvnni_usable()) return nullptr;
    const KernelTable t = kquant_kernels_avxvnni();
    for (size_t i = 0; i < t.count; ++i)
        if (t.entries[i].weight_type == id) return &t.entries[i];
    return nullptr;
}

bool cpu_has(Isa isa) {
    if (isa == Isa::scalar) return true;
    if (isa == Isa::neon) return detected_isa() == Isa::neon;
#if !defined(__x86_64__)
    return false;
#else
    __builtin_cpu_init();
    if (isa == Isa::avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vbmi");
#endif
}

// x86 builds compile every x86 kernel set (checked whether or not this CPU runs it); NEON covers
// only some types (the others run the scalar kernels on ARM).
constexpr bool kX86Build =
#if defined(__x86_64__)
    true;
#else
    false;
#endif
bool kernel_expected(Isa isa) { return isa != Isa::neon && kX86Build; }

size_t row_size(const TypeCase& tc, int64_t ne0) { return tc.meta + (size_t)tc.bytes * (ne0 / 256); }

// Weight matrix: either quantized from Gaussian data, or random bytes with sane scales.
std::vector<uint8_t> make_weights(const TypeCase& tc, int64_t ne0, int64_t rows, bool random_bytes, std::mt19937& rng) {
    const size_t rb = row_size(tc, ne0);
    std::vector<uint8_t> w(rb * rows);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::uniform_real_distribution<float> ud(-0.01f, 0.01f);
    if (!random_bytes) {
        const FamilyEntry* e = family_entry(tc.id);
        std::vector<float> x(ne0);
        for (int64_t r = 0; r < rows; ++r) {
            for (auto& v : x) v = nd(rng);
            e->quantize(x.data(), w.data() + r * rb, ne0, nullptr);
        }
        return w;
    }
    for (auto& b : w) b = (uint8_t)(rng() & 255);
    // scales in [-0.01, 0.01], every 4th one tiny (fp16 subnormal range)
    auto scale = [&]() { return ud(rng) * (rng() % 4 == 0 ? 1e-3f : 1.0f); };
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* row = w.data() + r * rb;
        if (tc.meta == 2) { const uint16_t h = f32_to_f16(scale()); std::memcpy(row, &h, 2); }
        if (tc.meta == 4) { const float f = scale(); std::memcpy(row, &f, 4); }
        for (int64_t b = 0; b < ne0 / 256; ++b)
            for (int off : tc.f16_fields) {
                const uint16_t h = f32_to_f16(scale());
                std::memcpy(row + tc.meta + b * tc.bytes + off, &h, 2);
            }
    }
    return w;
}

// IQ6_K as its matmul kernels read it: the integer levels iq6nl (quant-formats.md §7.6 caveat).
void dequant_iq6_k_integer(const uint8_t* src, float* dst, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, src += 212, dst += 256) {
        uint16_t dh, extra;
        std::memcpy(&dh, src, 2);
        std::memcpy(&extra, src + 2, 2);
        const double d = f16_to_f32(dh);
        for (int w = 0; w < 256; ++w) {
            const int c = w / 64, r = w % 64;
            const int low4 = (src[20 + 32 * c + r % 32] >> (4 * (r / 32))) & 15;
            const int high2 = (src[148 + 32 * (c / 2) + r % 32] >> (4 * (c % 2) + 2 * (r / 32))) & 3;
            const int s = w / 16;
            dst[w] = (float)(d * (int8_t)src[4 + s] * tables::kIq6nl[(low4 | high2 << 4) + 64 * ((extra >> s) & 1)]);
        }
    }
}

void dequant_row(const TypeCase& tc, const uint8_t* row, float* out, int64_t ne0) {
    if (tc.id == T_IQ6_K) dequant_iq6_k_integer(row, out, ne0);
    else family_entry(tc.id)->dequant(row, out, ne0);
}

float rd_f16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return f16_to_f32(h); }
float f16_round(float f) { return f16_to_f32(f32_to_f16(f)); }

// Decoded activations of one token: codes and the scale of every code.
struct Act {
    std::vector<int> q;
    std::vector<float> d;
    std::vector<int> sum32;  // Q8_2_X4 only: stored sum of every 32 codes
};
Act decode_act(uint32_t fmt, const uint8_t* a, int64_t ne0) {
    Act r;
    r.q.resize(ne0);
    r.d.resize(ne0);
    if (fmt == T_Q8_K) {
        for (int64_t b = 0; b < ne0 / 256; ++b) {
            float d;
            std::memcpy(&d, a + b * kQ8KBlockBytes, 4);
            for (int j = 0; j < 256; ++j) {
                r.q[b * 256 + j] = (int8_t)a[b * kQ8KBlockBytes + kQ8KOffQs + j];
                r.d[b * 256 + j] = d;
            }
        }
    } else {
        for (int64_t ib = 0; ib < ne0 / 32; ++ib) {
            const Q8x4BlockRef blk = q8_2_x4_block(a, ne0, ib);
            r.sum32.push_back(blk.sum);
            for (int j = 0; j < 32; ++j) {
                r.q[ib * 32 + j] = blk.qs[j];
                r.d[ib * 32 + j] = bf16_to_f32(blk.d_bf16);
            }
        }
    }
    return r;
}

// Scale of 256-block b of a row: the block's fp16 d, or the row scale.
float block_d(const TypeCase& tc, const uint8_t* row, int64_t b) {
    if (tc.meta == 4) { float f; std::memcpy(&f, row, 4); return f; }
    if (tc.meta == 2) return rd_f16(row);
    return rd_f16(row + b * tc.bytes + tc.f16_fields[0]);
}

struct Ref {
    double value, mag;
};

// Exact-arithmetic model (direct path, no saturation): dequantized weights x decoded activations.
Ref ref_direct(const std::vector<float>& w, const Act& a) {
    Ref r{0, 0};
    for (size_t j = 0; j < w.size(); ++j) {
        const double p = (double)w[j] * ((double)a.d[j] * a.q[j]);
        r.value += p;
        r.mag += std::fabs(p);
    }
    return r;
}

// Q8_K types, >= 32 tokens: integers P = w / d (Q2_K: the float values w), re-encoded as the
// reference's Q8_K_R8 repack.
Ref ref_conv8(const TypeCase& tc, const uint8_t* row, const std::vector<float>& w, const Act& a) {
    Ref r{0, 0};
    const float d0 = conv_d0(tc.id);
    for (size_t b = 0; b < w.size() / 256; ++b) {
        float d = block_d(tc, row, (int64_t)b);
        float P[256], mx = 0;
        for (int j = 0; j < 256; ++j) {
            if (tc.id == T_Q2_K) P[j] = w[256 * b + j];
            else P[j] = d == 0.0f ? 0 : (float)std::lround((double)w[256 * b + j] / d);
            mx = std::max(mx, std::fabs(P[j]));
        }
        float dnew = mx * d0;
        bool scale = true;
        if (tc.id == T_Q2_K) d = 1.0f;  // the scale is dnew itself
        else if (dnew < 1.0f) { dnew = 1.0f; scale = false; }
        const float inv = dnew > 0.0f ? 1.0f / dnew : 0.0f;
        const double d8 = f16_round(d * dnew);
        int64_t isum = 0;
        for (int j = 0; j < 256; ++j) {
            const int q = scale ? (int)std::nearbyint(P[j] * inv) : (int)P[j];
            isum += (int64_t)q * a.q[256 * b + j];
            r.mag += std::fabs((double)w[256 * b + j] * a.d[256 * b + j] * a.q[256 * b + j]);
        }
        r.value += d8 * a.d[256 * b] * (double)isum;
    }
    return r;
}

// Q6_K, >= 64 tokens: per 32 weights the integers P = w / d re-encoded to 8 bits when max |P|
// exceeds 127 (codes RNE(P * 127/max), scale fp16(d * max / 127)), else kept with scale d.
Ref ref_conv6(const uint8_t* row, const std::vector<float>& w, const Act& a) {
    Ref r{0, 0};
    for (size_t c = 0; c < w.size() / 32; ++c) {
        const float d = rd_f16(row + (c / 8) * 210 + 208);
        int P[32], m = 0;
        for (int i = 0; i < 32; ++i) {
            P[i] = d == 0.0f ? 0 : (int)std::lround((double)w[32 * c + i] / d);
            m = std::max(m, std::abs(P[i]));
        }
        double D = d;
        int64_t isum = 0;
        for (int i = 0; i < 32; ++i) {
            const int q = m <= 127 ? P[i] : (int)std::nearbyint((float)P[i] * (127.0f / (float)m));
            isum += (int64_t)q * a.q[32 * c + i];
            r.mag += std::fabs((double)w[32 * c + i] * a.d[32 * c + i] * a.q[32 * c + i]);
        }
        if (m > 127) D = f16_round(d * (float)m / 127.0f);
        r.value += D * a.d[32 * c] * (double)isum;
    }
    return r;
}

// Q4_K / Q5_K, >= 32 tokens: per-32 scales d*sc and -dmin*m rounded to fp16.
Ref ref_conv45(const uint8_t* row, int bytes, const std::vector<float>& w, const Act& a) {
    Ref r{0, 0};
    for (size_t b = 0; b < w.size() / 256; ++b) {
        const uint8_t* x = row + b * bytes;
        const float d = rd_f16(x), dmin = rd_f16(x + 2);
        const uint8_t* S = x + 4;
        for (int j = 0; j < 8; ++j) {
            int sc, m;
            if (j < 4) { sc = S[j] & 63; m = S[j + 4] & 63; }
            else { sc = (S[j + 4] & 15) | ((S[j - 4] >> 6) << 4); m = (S[j + 4] >> 4) | ((S[j] >> 6) << 4); }
            const double D = f16_round(d * (float)sc), M = f16_round(-dmin * (float)m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            int64_t dot = 0;
            for (int i = 0; i < 32; ++i) {
                const int k = 256 * (int)b + 32 * j + i;
                const int q = d1 == 0.0f ? 0 : (int)std::lround(((double)w[k] + m1) / d1);
                dot += (int64_t)q * a.q[k];
                r.mag += std::fabs((double)w[k] * a.d[k] * a.q[k]);
            }
            r.value += (double)a.d[256 * b + 32 * j] * (D * (double)dot + M * a.sum32[8 * b + j]);
        }
    }
    return r;
}

struct Problem {
    int64_t ne0, rows, nt, r0, r1, y_stride;
    std::vector<uint8_t> w, act;
    size_t act_rb;
};

std::vector<float> run(const MatmulKernel* k, const TypeCase& tc, const Problem& p) {
    std::vector<float> y(p.nt * p.y_stride, -12345.0f);
    k->run(p.w.data(), row_size(tc, p.ne0), p.ne0, p.r0, p.r1, p.act.data(), p.act_rb, p.nt, y.data(), p.y_stride);
    return y;
}

// Activations of token t; `nosat`: odd positions tiny, so (l0+128)a0 + (l1+128)a1 cannot
// exceed int16 (|a1| <= 1 next to |a0| <= 127).
void fill_act(const MatmulKernel* ks, Problem& p, bool nosat, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(p.ne0);
    p.act_rb = ks->act->row_bytes(p.ne0);
    p.act.assign(p.act_rb * p.nt, 0);
    for (int64_t t = 0; t < p.nt; ++t) {
        for (int64_t j = 0; j < p.ne0; ++j) x[j] = nd(rng) * (t % 3 == 0 ? 10.0f : 0.1f) * (nosat && (j & 1) ? 1e-3f : 1.0f);
        ks->act->encode_row(x.data(), p.act.data() + t * p.act_rb, p.ne0);
    }
}

void check_type(const TypeCase& tc, bool random_bytes) {
    std::mt19937 rng(1234u + tc.id + (random_bytes ? 7 : 0));
    const MatmulKernel* ks = kernel(tc.id, Isa::scalar);
    ASSERT_NE(ks, nullptr) << tc.name;
    const uint32_t fmt = is_q82(tc.id) ? T_Q8_2_X4 : T_Q8_K;
    ASSERT_EQ(ks->act->id, fmt);
    // sanitized: also in sanitizer builds (which skip the others: the same code paths again).
    struct Shape { int64_t ne0, rows, nt; bool sanitized; };
    const Shape shapes[] = {{256, 7, 1, true},   {512, 13, 3, true}, {1536, 5, 8, true},  {256, 9, 17, true},
                            {4096, 3, 1, false}, {768, 11, 70, true}, {2048, 6, 5, false}, {512, 6, 32, true},
                            {256, 5, 31, true},  {1024, 4, 40, false}, {512, 13, 67, false}, {512, 53, 37, false},
                            // single tokens: row counts around the rows-side-by-side groups, and a row longer
                            // than the single-token path's precomputed activation floats (q82_rows1, kquant_q82.h)
                            {768, 12, 1, true}, {2048, 10, 1, false}, {16640, 3, 1, true}};
    for (const Shape& s : shapes) {
        if (ikllm::test::kSanitized && !s.sanitized) continue;
        Problem p;
        p.ne0 = s.ne0;
        p.rows = s.rows;
        p.nt = s.nt;
        p.r0 = s.rows > 4 ? 1 : 0;
        p.r1 = s.rows > 4 ? s.rows - 1 : s.rows;
        p.y_stride = s.rows + 3;
        p.w = make_weights(tc, s.ne0, s.rows, random_bytes, rng);
        const size_t rb = row_size(tc, s.ne0);
        const bool big = s.nt >= kConvTokens;
        std::vector<std::vector<float>> wrows(s.rows, std::vector<float>(s.ne0));
        for (int64_t r = 0; r < s.rows; ++r) dequant_row(tc, p.w.data() + r * rb, wrows[r].data(), s.ne0);
        // Two passes: the model check (activations that cannot saturate for sat types below the
        // re-encoding threshold), then SIMD against scalar on ordinary activations.
        const int passes = is_sat(tc.id) && !big ? 2 : 1;
        for (int pass = 0; pass < passes; ++pass) {
            fill_act(ks, p, pass == 0 && passes == 2, rng);
            const std::vector<float> ys = run(ks, tc, p);
            if (pass == 0) {
                for (int64_t t = 0; t < s.nt; ++t) {
                    const Act a = decode_act(fmt, p.act.data() + t * p.act_rb, s.ne0);
                    for (int64_t r = 0; r < s.rows; ++r) {
                        const float got = ys[t * p.y_stride + r];
                        if (r < p.r0 || r >= p.r1) {
                            EXPECT_EQ(got, -12345.0f) << tc.name << ": row outside [r0,r1) written";
                            continue;
                        }
                        const uint8_t* row = p.w.data() + r * rb;
                        const Ref ref = s.nt >= kConv6Tokens && tc.id == T_Q6_K ? ref_conv6(row, wrows[r], a)
                                        : big && is_conv8(tc.id)    ? ref_conv8(tc, row, wrows[r], a)
                                        : big && is_conv45(tc.id) ? ref_conv45(row, tc.bytes, wrows[r], a)
                                                                  : ref_direct(wrows[r], a);
                        ASSERT_NEAR(got, ref.value, 2e-5 * ref.mag + 1e-30)
                            << tc.name << " scalar ne0=" << s.ne0 << " r=" << r << " t=" << t << " nt=" << s.nt;
                    }
                }
            }
            // Magnitudes of the exact products, the tolerance's scale (once for both ISAs).
            std::vector<double> mags((size_t)(s.nt * s.rows), 0.0);
            if (cpu_has(Isa::avx2))
                for (int64_t t = 0; t < s.nt; ++t) {
                    const Act a = decode_act(fmt, p.act.data() + t * p.act_rb, s.ne0);
                    for (int64_t r = p.r0; r < p.r1; ++r) mags[(size_t)(t * s.rows + r)] = ref_direct(wrows[r], a).mag;
                }
            std::vector<float> y_avx2;
            for (Isa isa : {Isa::avx2, Isa::avx512, Isa::neon}) {
                const MatmulKernel* kv = kernel(tc.id, isa);
                if (kernel_expected(isa)) {
                    ASSERT_NE(kv, nullptr) << tc.name << " " << isa_name(isa);
                }
                if (!kv || !cpu_has(isa)) continue;
                ASSERT_EQ(kv->act->id, fmt);
                const std::vector<float> yv = run(kv, tc, p);
                // The AVX-VNNI build of the AVX2 kernel (kquant_avxvnni.cpp): the same integers, the same bits.
                if (const MatmulKernel* kn = isa == Isa::avx2 ? avxvnni_kernel(tc.id) : nullptr) {
                    const std::vector<float> yn = run(kn, tc, p);
                    for (size_t i = 0; i < yv.size(); ++i)
                        ASSERT_EQ(f32_to_bits(yn[i]), f32_to_bits(yv[i])) << tc.name << " AVX-VNNI vs AVX2 at " << i;
                }
                // Q6_K batches: both re-encode the rows the same way (the AVX-512 one in vectors)
                // and sum in one order, so a single re-encoded code that differs shows here.
                if (tc.id == T_Q6_K && s.nt >= kConv6Tokens) {
                    if (isa == Isa::avx2) {
                        y_avx2 = yv;
                    } else if (!y_avx2.empty()) {
                        for (size_t i = 0; i < yv.size(); ++i)
                            ASSERT_EQ(yv[i], y_avx2[i]) << "q6_K batch: AVX-512 and AVX2 bits differ at " << i;
                    }
                }
                for (int64_t t = 0; t < s.nt; ++t) {
                    for (int64_t r = 0; r < s.rows; ++r) {
                        const float sa = ys[t * p.y_stride + r], sb = yv[t * p.y_stride + r];
                        if (r < p.r0 || r >= p.r1) { EXPECT_EQ(sb, -12345.0f); continue; }
                        // NEON: the scalar kernel's float operations (kquant_neon.cpp)
                        if (isa == Isa::neon) {
                            ASSERT_EQ(f32_to_bits(sb), f32_to_bits(sa)) << tc.name << " neon ne0=" << s.ne0 << " r=" << r
                                                                        << " t=" << t << " nt=" << s.nt;
                            continue;
                        }
                        // Q4_K / Q5_K batches (Q6_K below its re-encoding) on AVX2: eight tokens per
                        // register, each lane in the scalar kernel's operations (kquant_lanes_avx2.h):
                        // the same bits.
                        if (isa == Isa::avx2 && s.nt >= kLanesTokens &&
                            (is_conv45(tc.id) || (tc.id == T_Q6_K && s.nt < kConv6Tokens))) {
                            ASSERT_EQ(f32_to_bits(sb), f32_to_bits(sa)) << tc.name << " avx2 lanes ne0=" << s.ne0
                                                                        << " r=" << r << " t=" << t << " nt=" << s.nt;
                            continue;
                        }
                        const double mag = mags[(size_t)(t * s.rows + r)];
                        ASSERT_NEAR(sb, sa, 1e-5 * mag + 1e-30) << tc.name << " " << isa_name(isa) << " ne0=" << s.ne0
                                                                << " r=" << r << " t=" << t << " nt=" << s.nt;
                    }
                }
            }
        }
    }
}

// Every kernel's activation encoder writes the bytes of its format's reference encoder.
TEST(KiqkKernelsAct, EncodersMatchReference) {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t ne0 = 1024;
    std::vector<float> x(ne0);
    for (auto& v : x) v = nd(rng);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // all-zero blocks
    // block 2: amax 127 -> id 1, exact ties x.5 must round to even
    for (int j = 0; j < 256; ++j) x[512 + j] = (float)(j % 20) - 9.5f;
    x[512 + 77] = 127.0f;
    for (int j = 0; j < 32; ++j) x[768 + j] = 1e-39f * (float)(j - 16);  // subnormal amax
    std::vector<uint8_t> ref_k(q8_k_row_bytes(ne0)), ref_2(act_q8_2_x4_row_bytes(ne0)), got;
    encode_q8_k_row(x.data(), ref_k.data(), ne0);
    act_q8_2_x4_encode_row(x.data(), ref_2.data(), ne0);
    EXPECT_EQ((int8_t)ref_k[2 * 296 + 8 + 0], -10);  // -9.5 -> -10 (even)
    EXPECT_EQ((int8_t)ref_k[2 * 296 + 8 + 1], -8);   // -8.5 -> -8
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
        if (!cpu_has(isa)) continue;
        for (const TypeCase& tc : cases()) {
            const MatmulKernel* k = kernel(tc.id, isa);
            if (!k && isa == Isa::neon) continue;
            ASSERT_NE(k, nullptr);
            const std::vector<uint8_t>& ref = is_q82(tc.id) ? ref_2 : ref_k;
            ASSERT_EQ(k->act->id, is_q82(tc.id) ? (uint32_t)T_Q8_2_X4 : (uint32_t)T_Q8_K);
            ASSERT_EQ(k->act->row_bytes(ne0), ref.size());
            got.assign(ref.size(), 0xAB);
            k->act->encode_row(x.data(), got.data(), ne0);
            ASSERT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size())) << tc.name << " " << isa_name(isa);
            // rows with leftover 32-blocks (Q8_2_X4 groups of four)
            if (is_q82(tc.id)) {
                for (int64_t n : {32, 96, 160, 224}) {
                    std::vector<uint8_t> r2(act_q8_2_x4_row_bytes(n)), g2(r2.size(), 0xCD);
                    act_q8_2_x4_encode_row(x.data() + 200, r2.data(), n);
                    k->act->encode_row(x.data() + 200, g2.data(), n);
                    ASSERT_EQ(0, std::memcmp(g2.data(), r2.data(), r2.size())) << tc.name << " n=" << n;
                }
            }
        }
    }
}

// The saturating arithmetic of the sat types, on a block built to saturate: IQ4_XS with every
// level 113 (+128 = 241) and scale +31, against activation codes all 127: each pair gives
// 2 * 241 * 127 = 61214 -> 32767, so a 16-weight sub-block sums to 8 * 32767 - 128 * 16 * 127.
TEST(KiqkKernelsSat, Iq4XsSaturatesLikeTheReference) {
    const int64_t ne0 = 256;
    std::vector<uint8_t> w(136, 0);
    const uint16_t one = f32_to_f16(1.0f);
    std::memcpy(w.data(), &one, 2);
    const uint16_t sh = 0xFFFF;  // high 2 bits of every scale: 3 -> scale 63 - 32 = 31
    std::memcpy(w.data() + 2, &sh, 2);
    for (int i = 0; i < 4; ++i) w[4 + i] = 0xFF;    // low 4 bits 15
    for (int i = 0; i < 128; ++i) w[8 + i] = 0xFF;  // every code 15 -> level 113
    std::vector<float> x(ne0, 1.0f), y(1);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
        if (!cpu_has(isa)) continue;
        const MatmulKernel* k = kernel(T_IQ4_XS, isa);
        std::vector<uint8_t> a(k->act->row_bytes(ne0));
        k->act->encode_row(x.data(), a.data(), ne0);
        float da;
        std::memcpy(&da, a.data(), 4);
        const int64_t per16 = 8 * 32767 - 128 * 16 * 127;
        const double expect = (double)da * 1.0 * (16.0 * 31.0 * (double)per16);
        k->run(w.data(), 136, ne0, 0, 1, a.data(), a.size(), 1, y.data(), 1);
        EXPECT_NEAR(y[0], expect, 1e-5 * std::fabs(expect)) << isa_name(isa);
        // the exact value would be 256 * 31 * 113 * 127 * da: far away
        EXPECT_GT(std::fabs(y[0] - (double)da * 256.0 * 31 * 113 * 127), 1.0);
    }
}

// Batch invariance of the small-batch kernels: every token of a call below the re-encoding
// threshold gets the bits it gets alone (the single-token path has its own code, the same float
// operations in the same order).
TEST(KiqkKernelsBatch, TokenAloneGivesItsBitsInASmallBatch) {
    std::mt19937 rng(77);
    for (const TypeCase& tc : cases())
        for (int64_t ne0 : {256, 768, 2048, 16640}) {
            if (ikllm::test::kSanitized && ne0 == 2048) continue;
            const std::vector<uint8_t> w = make_weights(tc, ne0, 11, false, rng);  // (the quantizer is the slow part)
            for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon}) {
                const MatmulKernel* k = kernel(tc.id, isa);
                if (!k || !cpu_has(isa)) continue;
                Problem p;
                p.ne0 = ne0;
                p.rows = 11;
                p.nt = 5;
                p.r0 = 0;
                p.r1 = p.rows;
                p.y_stride = p.rows;
                p.w = w;
                fill_act(k, p, false, rng);
                const std::vector<float> batch = run(k, tc, p);
                for (int64_t t = 0; t < p.nt; ++t) {
                    Problem one = p;
                    one.nt = 1;
                    one.act.assign(p.act.begin() + t * p.act_rb, p.act.begin() + (t + 1) * p.act_rb);
                    const std::vector<float> alone = run(k, tc, one);
                    for (int64_t r = 0; r < p.rows; ++r)
                        ASSERT_EQ(f32_to_bits(alone[r]), f32_to_bits(batch[t * p.y_stride + r]))
                            << tc.name << " " << isa_name(isa) << " ne0=" << ne0 << " token " << t << " row " << r;
                }
            }
        }
}

class KiqkKernels : public ::testing::TestWithParam<size_t> {};

TEST_P(KiqkKernels, QuantizedWeights) { check_type(cases()[GetParam()], false); }
TEST_P(KiqkKernels, RandomBitPatterns) { check_type(cases()[GetParam()], true); }

INSTANTIATE_TEST_SUITE_P(AllTypes, KiqkKernels, ::testing::Range<size_t>(0, 17),
                         [](const ::testing::TestParamInfo<size_t>& i) { return std::string(cases()[i.param].name); });

}  // namespace
