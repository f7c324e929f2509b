// Portable matmul kernels for Q2_K..Q6_K (see kquant_unpack.h): Q2_K and Q3_K against Q8_K
// activations, Q4_K, Q5_K and Q6_K against Q8_2_X4 as in the reference (quant-formats.md §15).
// Every K-quant has a kernel here; the AVX2/AVX-512 files cover all of them as well.
#include "kernels/kquant_unpack.h"
#include <cstdlib>

namespace ikllm::cpu {

const ActFormat* act_format_q8_k_kiqk() {
    static constexpr ActFormat f{quant::T_Q8_K, quant::q8_k_row_bytes, quant::encode_q8_k_row};
    return &f;
}

KernelTable exp_kernels();
KernelTable exp2_kernels();
KernelTable exp3_kernels();
KernelTable exp4_kernels();
KernelTable kquant_kernels_scalar() {
    if (getenv("IKLLM_E4")) {
        static const MatmulKernel entries6[] = {
            {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
            {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
            exp2_kernels().entries[0], exp2_kernels().entries[1],
            {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
            exp3_kernels().entries[0], exp3_kernels().entries[1], exp3_kernels().entries[2], exp3_kernels().entries[3],
            exp4_kernels().entries[0], exp4_kernels().entries[1], exp4_kernels().entries[2],
        };
        return {entries6, 12};
    }
    if (getenv("IKLLM_E3")) {
        static const MatmulKernel entries5[] = {
            {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
            {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
            exp2_kernels().entries[0], exp2_kernels().entries[1],
            {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
            exp3_kernels().entries[0], exp3_kernels().entries[1], exp3_kernels().entries[2], exp3_kernels().entries[3],
        };
        return {entries5, 9};
    }
    if (getenv("IKLLM_E2")) {
        static const MatmulKernel entries4[] = {
            {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
            {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
            exp2_kernels().entries[0], exp2_kernels().entries[1],
            {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
        };
        return {entries4, 5};
    }
    if (getenv("IKLLM_EXP_RULE")) {
        static const MatmulKernel entries3[] = {
            {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
            {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
            exp_kernels().entries[0], exp_kernels().entries[1],
            {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
        };
        return {entries3, 5};
    }
    static const bool exp_q8k = getenv("IKLLM_EXP_Q45K_Q8K") != nullptr;  // EXPERIMENT
    if (exp_q8k) {
    static const MatmulKernel entries2[] = {
        {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
        {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
        {KQ4K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ4K>},
        {KQ5K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ5K>},
        {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
    };
    return {entries2, 5};
    }
    static const MatmulKernel entries[] = {
        {KQ2K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ2K>},
        {KQ3K::id, Isa::scalar, act_format_q8_k_kiqk(), scalar_matmul<KQ3K>},
        {KQ4K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ4K>},
        {KQ5K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ5K>},
        {KQ6K::id, Isa::scalar, act_format_q8_2_x4(), scalar_matmul_q82<KQ6K>},
    };
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

}  // namespace ikllm::cpu

// ---------------- EXPERIMENT (temporary) ----------------
#include <cmath>
#include <vector>
#include "core/fp16.h"
namespace ikllm::cpu {
namespace {
int exp_rule() {
    static const int r = [] {
        const char* e = getenv("IKLLM_EXP_RULE");
        if (!e) return 0;
        if (!strcmp(e, "q82")) return 1;
        if (!strcmp(e, "q81")) return 2;
        if (!strcmp(e, "q80")) return 3;
        if (!strcmp(e, "q8k")) return 4;
        return 0;
    }();
    return r;
}
float rne(float v) { return std::nearbyint(v); }
void exp_quant_row(const float* x, float* xa, int64_t ne0, int rule) {
    const int bs = rule == 4 ? 256 : 32;
    for (int64_t b = 0; b < ne0 / bs; ++b) {
        const float* xb = x + b * bs;
        float amax = 0;
        for (int i = 0; i < bs; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
        float d, id;
        if (rule == 1) { d = bf16_to_f32(f32_to_bf16(amax / 127.0f)); id = d > 0 ? 1.0f / d : 0; }
        else if (rule == 2) { float d0 = amax / 127.0f; id = d0 > 0 ? 1.0f / d0 : 0; d = f16_to_f32(f32_to_f16(d0)); }
        else if (rule == 3) { d = f16_to_f32(f32_to_f16(amax / 127.0f)); id = amax != 0 ? 127.0f / amax : 0; }
        else if (rule == 4) { d = amax / 127.0f; id = amax != 0 ? 127.0f / amax : 0; }
        else { for (int i = 0; i < bs; ++i) xa[b * bs + i] = xb[i]; continue; }
        for (int i = 0; i < bs; ++i) xa[b * bs + i] = d * rne(xb[i] * id);
    }
}
template <uint32_t TID>
void exp_kernel(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                int64_t nt, float* y, int64_t ys) {
    const quant::TypeTraits* tt = quant::find_type(TID);
    std::vector<float> wf(ne0), xa(ne0 * nt);
    for (int64_t t = 0; t < nt; ++t) exp_quant_row((const float*)(act + t * arb), xa.data() + t * ne0, ne0, exp_rule());
    for (int64_t r = r0; r < r1; ++r) {
        tt->dequant(w + r * wrb, wf.data(), ne0);
        static const int wr = getenv("IKLLM_EXP_WRULE") ? atoi(getenv("IKLLM_EXP_WRULE")) : 0;
        if (wr == 1 || wr == 2 || wr == 4) {
            const int bs = wr == 2 ? 256 : 32;
            for (int64_t b = 0; b < ne0 / bs; ++b) {
                float amax = 0;
                for (int i = 0; i < bs; ++i) amax = std::fmax(amax, std::fabs(wf[b * bs + i]));
                float d = amax / 127.0f; if (wr != 4) d = f16_to_f32(f32_to_f16(d));
                const float id = d > 0 ? 1.0f / d : 0;
                for (int i = 0; i < bs; ++i) wf[b * bs + i] = d * rne(wf[b * bs + i] * id);
            }
        } else if (wr == 3) {
            for (int64_t b = 0; b < ne0 / 32; ++b) {
                float mn = wf[b * 32], mx = wf[b * 32];
                for (int i = 0; i < 32; ++i) { mn = std::fmin(mn, wf[b * 32 + i]); mx = std::fmax(mx, wf[b * 32 + i]); }
                const float d = (mx - mn) / 255.0f, id = d > 0 ? 1.0f / d : 0;
                for (int i = 0; i < 32; ++i) wf[b * 32 + i] = mn + d * rne((wf[b * 32 + i] - mn) * id);
            }
        }
        for (int64_t t = 0; t < nt; ++t) {
            double s = 0;
            for (int64_t j = 0; j < ne0; ++j) s += (double)wf[j] * xa[t * ne0 + j];
            y[t * ys + r] = (float)s;
        }
    }
}
}  // namespace
KernelTable exp_kernels() {
    static const MatmulKernel e[] = {
        {quant::T_Q4_K, Isa::scalar, act_format_f32(), exp_kernel<quant::T_Q4_K>},
        {quant::T_Q5_K, Isa::scalar, act_format_f32(), exp_kernel<quant::T_Q5_K>},
    };
    return {e, 2};
}
}  // namespace ikllm::cpu
// EXPERIMENT 2: Q4_K/Q5_K with float activations quantized inside by a selectable rule.
namespace ikllm::cpu {
namespace {
struct ActBlk { float d; int s; float sfp; int8_t q[32]; };
void act_rule(const float* x, ActBlk& b, int rule) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    float d0 = amax / 127.0f, id;
    if (rule == 1) { const float d = bf16_to_f32(f32_to_bf16(d0)); id = d > 0 ? 1.0f / d : 0; b.d = d; }
    else { id = d0 > 0 ? 1.0f / d0 : 0; b.d = f16_to_f32(f32_to_f16(d0)); }
    b.s = 0;
    for (int i = 0; i < 32; ++i) { b.q[i] = (int8_t)std::nearbyint(x[i] * id); b.s += b.q[i]; }
    b.sfp = rule == 1 ? (float)b.s * b.d : f16_to_f32(f32_to_f16(d0 * (float)b.s));
}
template <class K>
void exp2_kernel(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                 int64_t nt, float* y, int64_t ys) {
    static const int big_act = getenv("IKLLM_E2_BIGACT") ? atoi(getenv("IKLLM_E2_BIGACT")) : 1;
    static const int big_w = getenv("IKLLM_E2_BIGW") ? atoi(getenv("IKLLM_E2_BIGW")) : 1;
    const bool big = nt >= 32;
    const int rule = big ? big_act : 1;
    const int64_t nb32 = ne0 / 32;
    std::vector<ActBlk> ab(nb32 * nt);
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t j = 0; j < nb32; ++j) act_rule((const float*)(act + t * arb) + 32 * j, ab[t * nb32 + j], rule);
    KBlock kb;
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t t = 0; t < nt; ++t) y[t * ys + r] = 0;
        for (int64_t b = 0; b < ne0 / 256; ++b) {
            K::unpack(w + r * wrb + b * K::bytes, 0, kb);
            for (int j = 0; j < 8; ++j) {
                float D = kb.dw * (float)kb.sc[2 * j], M = kb.dc * (float)kb.corr[2 * j];
                if (big && big_w >= 1) { D = f16_to_f32(f32_to_f16(D)); M = f16_to_f32(f32_to_f16(M)); }
                for (int64_t t = 0; t < nt; ++t) {
                    const ActBlk& a = ab[t * nb32 + 8 * b + j];
                    int dot = 0;
                    for (int i = 0; i < 32; ++i) dot += kb.v[32 * j + i] * a.q[i];
                    float v;
                    if (big && big_w == 2) v = D * a.d * (float)dot + M * a.sfp;
                    else if (big && big_w == 3) v = f16_to_f32(f32_to_f16(D * a.d)) * (float)dot + M * a.sfp;
                    else v = a.d * (D * (float)dot + M * (float)a.s);
                    y[t * ys + r] += v;
                }
            }
        }
    }
}
}  // namespace
KernelTable exp2_kernels() {
    static const MatmulKernel e[] = {
        {quant::T_Q4_K, Isa::scalar, act_format_f32(), exp2_kernel<KQ4K>},
        {quant::T_Q5_K, Isa::scalar, act_format_f32(), exp2_kernel<KQ5K>},
    };
    return {e, 2};
}
}  // namespace ikllm::cpu
// EXPERIMENT 3: KT types via dequant * factor, activations quantized q82 inside.
namespace ikllm::cpu {
namespace {
template <uint32_t TID>
void exp3_kernel(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                 int64_t nt, float* y, int64_t ys) {
    static const float F = getenv("IKLLM_E3_F") ? (float)atof(getenv("IKLLM_E3_F")) : 1.0f;
    const quant::TypeTraits* tt = quant::find_type(TID);
    std::vector<float> wf(ne0), xa(ne0 * nt);
    for (int64_t t = 0; t < nt; ++t) exp_quant_row((const float*)(act + t * arb), xa.data() + t * ne0, ne0, 1);
    for (int64_t r = r0; r < r1; ++r) {
        tt->dequant(w + r * wrb, wf.data(), ne0);
        for (int64_t t = 0; t < nt; ++t) {
            double s = 0;
            for (int64_t j = 0; j < ne0; ++j) s += (double)wf[j] * xa[t * ne0 + j];
            y[t * ys + r] = (float)(s * F);
        }
    }
}
}  // namespace
KernelTable exp3_kernels() {
    static const MatmulKernel e[] = {
        {quant::T_IQ2_KT, Isa::scalar, act_format_f32(), exp3_kernel<quant::T_IQ2_KT>},
        {quant::T_IQ3_KT, Isa::scalar, act_format_f32(), exp3_kernel<quant::T_IQ3_KT>},
        {quant::T_IQ4_KT, Isa::scalar, act_format_f32(), exp3_kernel<quant::T_IQ4_KT>},
        {quant::T_IQ1_KT, Isa::scalar, act_format_f32(), exp3_kernel<quant::T_IQ1_KT>},
    };
    return {e, 4};
}
}  // namespace ikllm::cpu
// EXPERIMENT 4: Q8_K types: nt>=32 -> per-32 requant ("Q8_0_R8") with q82 activations.
namespace ikllm::cpu {
namespace {
template <class K>
void exp4_kernel(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                 int64_t nt, float* y, int64_t ys) {
    static const int mode = getenv("IKLLM_E4_MODE") ? atoi(getenv("IKLLM_E4_MODE")) : 0;
    if (nt < 32) {
        std::vector<uint8_t> q(quant::q8_k_row_bytes(ne0) * nt);
        const size_t qrb = quant::q8_k_row_bytes(ne0);
        for (int64_t t = 0; t < nt; ++t) quant::encode_q8_k_row((const float*)(act + t * arb), q.data() + t * qrb, ne0);
        scalar_matmul<K>(w, wrb, ne0, r0, r1, q.data(), qrb, nt, y, ys);
        return;
    }
    const int64_t nb32 = ne0 / 32;
    std::vector<ActBlk> ab(nb32 * nt);
    for (int64_t t = 0; t < nt; ++t)
        for (int64_t j = 0; j < nb32; ++j) act_rule((const float*)(act + t * arb) + 32 * j, ab[t * nb32 + j], 1);
    KBlock kb;
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t t = 0; t < nt; ++t) y[t * ys + r] = 0;
        const float rowd = K::row_scale(w + r * wrb);
        for (int64_t b = 0; b < ne0 / 256; ++b) {
            K::unpack(w + r * wrb + K::meta + b * K::bytes, rowd, kb);
            for (int j = 0; j < 8; ++j) {
                int P[32], mx = 0;
                for (int i = 0; i < 32; ++i) {
                    const int s = (32 * j + i) / 16;
                    P[i] = kb.sc[s] * kb.v[32 * j + i] + kb.corr[s];
                    mx = std::max(mx, std::abs(P[i]));
                }
                float dnew = (float)mx / 127.0f;
                bool scale = true;
                if (mode == 0 && dnew < 1.0f) { dnew = 1.0f; scale = false; }
                const float inv = dnew > 0 ? 1.0f / dnew : 0.0f;
                int q[32];
                for (int i = 0; i < 32; ++i) q[i] = scale ? (int)std::nearbyint((float)P[i] * inv) : P[i];
                const float D = f16_to_f32(f32_to_f16(kb.dw * dnew));
                for (int64_t t = 0; t < nt; ++t) {
                    const ActBlk& a = ab[t * nb32 + 8 * b + j];
                    int dot = 0;
                    for (int i = 0; i < 32; ++i) dot += q[i] * a.q[i];
                    y[t * ys + r] += D * a.d * (float)dot;
                }
            }
        }
    }
}
}  // namespace
KernelTable exp4_kernels() {
    static const MatmulKernel e[] = {
        {quant::T_IQ2_K, Isa::scalar, act_format_f32(), exp4_kernel<KIq2K>},
        {quant::T_IQ2_KS, Isa::scalar, act_format_f32(), exp4_kernel<KIq2Ks>},
        {quant::T_IQ2_KL, Isa::scalar, act_format_f32(), exp4_kernel<KIq2Kl>},
    };
    return {e, 3};
}
}  // namespace ikllm::cpu
