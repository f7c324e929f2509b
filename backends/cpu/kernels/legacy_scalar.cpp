// Portable reference kernels for the 32-weight block types against Q8_2_X4 activations
// (quant-formats.md §15). Per block: exact integer dot of the weight values with the 8-bit
// activation codes, then acc += (dw*da)*isum; types with an additive offset m also add
// (m*da)*sum(a). The SIMD kernels are tested against these.
// The symmetric types (kOffset > 0) follow the reference's float order instead, see
// legacy_sym_accum.h: their results are rounded like the reference's, not exactly.
#include <cmath>
#include <vector>

#include "kernels/legacy_sym_accum.h"

#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/legacy_blocks.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {
namespace {

namespace lq = quant::legacy;

// One decoded weight block: signed values (or unsigned codes for affine types), scale, offset.
struct Decoded {
    int8_t v[32];
    float d, m;
};

struct Q4_0 {
    static constexpr int kOffset = 8;
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ4_0Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        uint8_t q[32];
        lq::q4_codes(b + 2, q);
        for (int i = 0; i < 32; ++i) o.v[i] = (int8_t)(q[i] - 8);
        o.d = lq::rdf16(b);
        o.m = 0;
    }
};
struct Q4_1 {
    static constexpr int kBytes = lq::kQ4_1Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        lq::q4_codes(b + 4, reinterpret_cast<uint8_t*>(o.v));
        o.d = lq::rdf16(b);
        o.m = lq::rdf16(b + 2);
    }
};
struct Q5_0 {
    static constexpr int kOffset = 16;
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ5_0Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        uint8_t q[32];
        lq::q5_codes(b + 2, b + 6, q);
        for (int i = 0; i < 32; ++i) o.v[i] = (int8_t)(q[i] - 16);
        o.d = lq::rdf16(b);
        o.m = 0;
    }
};
struct Q5_1 {
    static constexpr int kBytes = lq::kQ5_1Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        lq::q5_codes(b + 4, b + 8, reinterpret_cast<uint8_t*>(o.v));
        o.d = lq::rdf16(b);
        o.m = lq::rdf16(b + 2);
    }
};
struct Q8_0 {
    static constexpr int kOffset = 127;
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ8_0Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        for (int i = 0; i < 32; ++i) o.v[i] = (int8_t)b[2 + i];
        o.d = lq::rdf16(b);
        o.m = 0;
    }
};
struct Q6_0 {
    static constexpr int kOffset = 32;
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kQ6_0Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        uint8_t q[32];
        lq::q6_codes(b + 2, b + 10, q);
        for (int i = 0; i < 32; ++i) o.v[i] = (int8_t)(q[i] - 32);
        o.d = lq::rdf16(b);
        o.m = 0;
    }
};
struct IQ4_NL {
    static constexpr int kOffset = 128;
    static constexpr bool kE8M0 = false;
    static constexpr int kBytes = lq::kIq4NlBytes;
    static void decode(const uint8_t* b, Decoded& o) {
        uint8_t q[32];
        lq::q4_codes(b + 2, q);
        for (int i = 0; i < 32; ++i) o.v[i] = lq::kIq4nlValues[q[i]];
        o.d = lq::rdf16(b);
        o.m = 0;
    }
};
struct MXFP4 {
    static constexpr int kOffset = 12;
    static constexpr bool kE8M0 = true;
    static constexpr int kBytes = lq::kMxfp4Bytes;
    static void decode(const uint8_t* b, Decoded& o) {
        uint8_t q[32];
        lq::q4_codes(b + 1, q);
        for (int i = 0; i < 32; ++i) o.v[i] = lq::kMxfp4Values[q[i]];
        o.d = lq::e8m0_half(b[0]);
        o.m = 0;
    }
};

// Symmetric types: unsigned codes u = v + kOffset and the reference's accumulation order.
template <class P>
void run_sym(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
             int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32, ng = nb / 4;
    const bool batch = nt >= kSymBatchTokens;
    std::vector<Decoded> row((size_t)nb);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + (size_t)r * wrb;
        for (int64_t ib = 0; ib < nb; ++ib) P::decode(wr + ib * P::kBytes, row[(size_t)ib]);
        for (int64_t t = 0; t < nt; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            if (batch) {  // one lane per row, whole-block sums with offset 127
                SymBatchAccum acc;
                for (int64_t ib = 0; ib < nb; ++ib) {
                    const Decoded& b = row[(size_t)ib];
                    const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(a, ne0, ib);
                    int32_t s = 0;
                    for (int i = 0; i < 32; ++i) s += ((int32_t)b.v[i] + kSymBatchOffset) * ab.qs[i];
                    acc.add(sym_batch_scale(b.d, P::kE8M0), bf16_to_f32(ab.d_bf16), ab.sum, s);
                }
                y[t * ys + r] = acc.result();
                continue;
            }
            SymTileAccum acc;
            for (int64_t ib = 0; ib < nb; ++ib) {
                const Decoded& b = row[(size_t)ib];
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(a, ne0, ib);
                int32_t quad[8] = {};
                for (int i = 0; i < 32; ++i) quad[i / 4] += ((int32_t)b.v[i] + P::kOffset) * ab.qs[i];
                const float da = bf16_to_f32(ab.d_bf16);
                if (ib < 4 * ng)
                    acc.add_group_block((int)(ib % 4), b.d, (float)P::kOffset, da, ab.sum,
                                        quad[0] + quad[1] + quad[2] + quad[3], quad[4] + quad[5] + quad[6] + quad[7]);
                else
                    acc.add_single_block(b.d, (float)P::kOffset, da, ab.sum, quad);
            }
            y[t * ys + r] = acc.result();
        }
    }
}

// Affine types keep unsigned codes in Decoded::v; reinterpret them before the dot product.
template <class P>
void run_affine(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
                int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 32;
    std::vector<Decoded> row((size_t)nb);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + (size_t)r * wrb;
        for (int64_t ib = 0; ib < nb; ++ib) P::decode(wr + ib * P::kBytes, row[(size_t)ib]);
        for (int64_t t = 0; t < nt; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            float acc = 0.0f;
            for (int64_t ib = 0; ib < nb; ++ib) {
                const Decoded& b = row[(size_t)ib];
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(a, ne0, ib);
                int32_t isum = 0;
                for (int i = 0; i < 32; ++i) isum += (int32_t)(uint8_t)b.v[i] * ab.qs[i];
                const float da = bf16_to_f32(ab.d_bf16);
                acc += (b.d * da) * (float)isum;
                acc += (b.m * da) * (float)ab.sum;
            }
            y[t * ys + r] = acc;
        }
    }
}

}  // namespace

KernelTable legacy_kernels_scalar() {
    static const MatmulKernel kKernels[] = {
        {quant::T_Q4_0, Isa::scalar, act_format_q8_2_x4(), run_sym<Q4_0>},
        {quant::T_Q4_1, Isa::scalar, act_format_q8_2_x4(), run_affine<Q4_1>},
        {quant::T_Q5_0, Isa::scalar, act_format_q8_2_x4(), run_sym<Q5_0>},
        {quant::T_Q5_1, Isa::scalar, act_format_q8_2_x4(), run_affine<Q5_1>},
        {quant::T_Q8_0, Isa::scalar, act_format_q8_2_x4(), run_sym<Q8_0>},
        {quant::T_Q6_0, Isa::scalar, act_format_q8_2_x4(), run_sym<Q6_0>},
        {quant::T_IQ4_NL, Isa::scalar, act_format_q8_2_x4(), run_sym<IQ4_NL>},
        {quant::T_MXFP4, Isa::scalar, act_format_q8_2_x4(), run_sym<MXFP4>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
