// Portable kernels of the trellis types IQ1_KT..IQ4_KT against Q8_2_X4 activations
// (quant-formats.md §10, §15), the numerical reference of the SIMD kernels: each 256-weight
// block is generated into 256 integer values with one scale per 32 weights (trellis_kt.h), and
// every 32-weight dot with the activation codes is exact before it is scaled. Calls of
// kKtBatchMinTokens tokens or more sum in the order of the symmetric 32-weight types' batches
// (SymBatchAccum), as the reference's Q8_0_R8 repack does from kKtConvMinTokens on.
#include "kernels/interleaved_common.h"
#include "kernels/legacy_sym_accum.h"
#include "kernels/trellis_kt.h"
#include "quant/grid_util.h"
#include "quant/interleaved_values.h"
#include "quant/trellis_gen.h"
#include "quant/act_q8_0.h"

#include <vector>

namespace ikllm::cpu {
namespace {

using namespace quant;

struct KtBlock {
    int v[256];
    float s[8];
};

void decode_iq1_kt(const uint8_t* b, float d, KtBlock& o) {
    for (int ib = 0; ib < 8; ++ib) {
        o.s[ib] = kt_scale<T_IQ1_KT>(d, vals::kIq4nl[b[ib] & 15]);
        for (int g = 0; g < 4; ++g) {
            const uint32_t c = b[8 + 4 * ib + g] | nib(b[40 + 4 * (ib % 4) + g], ib / 4) << 8 | bit(b[ib], 4 + g) << 12;
            kt_generate(c, kKtOffset, 8, o.v + 32 * ib + 8 * g);
        }
    }
}

void decode_iq2_kt(const uint8_t* b, float d, KtBlock& o) {
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ2_KT>(d, vals::kIq4nl[nib(b[ib % 4], ib / 4)]);
    for (int i = 0; i < 32; ++i) kt_generate(rd_u16(b + 4 + 2 * i), kKtOffset, 8, o.v + 8 * i);
}

void decode_iq3_kt(const uint8_t* b, float d, KtBlock& o) {
    for (int ib = 0; ib < 8; ++ib) o.s[ib] = kt_scale<T_IQ3_KT>(d, nib(b[ib % 4], ib / 4));
    for (int i = 0; i < 32; ++i) kt_generate(rd_u16(b + 4 + 2 * i), kKtOffset, 8, o.v + 8 * i);
    for (int w = 0; w < 256; ++w) {
        const int a = o.v[w] < 0 ? -o.v[w] : o.v[w];
        o.v[w] = bit(b[68 + w % 32], w / 32) ? -a : a;
    }
}

void decode_iq4_kt(const uint8_t* b, float d, KtBlock& o) {
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t S = rd_u32(b + 4 * ib);
        o.s[ib] = kt_scale<T_IQ4_KT>(d, (int)((S & 255) >> 1) - 64);
        const uint32_t offset = (S & 1) ? kKtOffsetIq4Odd : kKtOffset;
        for (int g = 0; g < 8; ++g) {
            const int jj = 8 * ib + g;
            const uint32_t c = b[32 + jj] | nib(b[96 + jj % 32], jj / 32) << 8 | bits(S, 8 + 3 * g, 3) << 12;
            kt_generate(c, offset, 4, o.v + 32 * ib + 4 * g);
        }
    }
}

template <void (*Decode)(const uint8_t*, float, KtBlock&)>
void run_kt(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
            int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    const size_t bb = (wrb - 4) / (size_t)nb;  // block bytes after the row's float32 scale
    KtBlock blk;
    if (nt >= kKtBatchMinTokens) {
        const bool conv = nt >= kKtConvMinTokens;
        std::vector<KtBlock> row_blocks((size_t)nb);
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t* row = w + (size_t)r * wrb;
            for (int64_t b = 0; b < nb; ++b) {
                Decode(row + 4 + (size_t)b * bb, rd_f32(row), row_blocks[(size_t)b]);
                if (conv)
                    for (float& sc : row_blocks[(size_t)b].s) sc = gti_round_half(sc);  // large-batch repacking
            }
            for (int64_t t = 0; t < nt; ++t) {
                const uint8_t* a = act + (size_t)t * arb;
                SymBatchAccum acc;
                for (int64_t ib = 0; ib < nb * 8; ++ib) {
                    const KtBlock& kb = row_blocks[(size_t)(ib / 8)];
                    const Q8x4BlockRef ab = q8_2_x4_block(a, ne0, ib);
                    int32_t dot = 0;  // sum of (v + 127) * a
                    for (int j = 0; j < 32; ++j) dot += (kb.v[32 * (ib % 8) + j] + kSymBatchOffset) * ab.qs[j];
                    acc.add(kb.s[ib % 8], bf16_to_f32(ab.d_bf16), ab.sum, dot);
                }
                y[t * ys + r] = acc.result();
            }
        }
        return;
    }
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w + (size_t)r * wrb;
        const float d = rd_f32(row);
        for (int64_t t = 0; t < nt; ++t) y[t * ys + r] = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
            Decode(row + 4 + (size_t)b * bb, d, blk);
            for (int64_t t = 0; t < nt; ++t) {
                const uint8_t* a = act + (size_t)t * arb + 288 * (size_t)b;  // two 144-byte groups
                float acc = 0.0f;
                for (int ib = 0; ib < 8; ++ib) {
                    const uint8_t* G = a + 144 * (ib / 4);
                    const int8_t* q = (const int8_t*)(G + 16 + 32 * (ib % 4));
                    int32_t dot = 0;
                    for (int j = 0; j < 32; ++j) dot += blk.v[32 * ib + j] * q[j];
                    acc += (blk.s[ib] * rd_bf16(G + 2 * (ib % 4))) * (float)dot;
                }
                y[t * ys + r] += acc;
            }
        }
    }
}

}  // namespace

KernelTable trellis_kernels_scalar() {
    static const MatmulKernel kKernels[] = {
        {T_IQ1_KT, Isa::scalar, act_format_q8_2_x4(), run_kt<decode_iq1_kt>},
        {T_IQ2_KT, Isa::scalar, act_format_q8_2_x4(), run_kt<decode_iq2_kt>},
        {T_IQ3_KT, Isa::scalar, act_format_q8_2_x4(), run_kt<decode_iq3_kt>},
        {T_IQ4_KT, Isa::scalar, act_format_q8_2_x4(), run_kt<decode_iq4_kt>},
    };
    return {kKernels, sizeof(kKernels) / sizeof(kKernels[0])};
}

}  // namespace ikllm::cpu
