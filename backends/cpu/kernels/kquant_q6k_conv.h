// Q6_K for prompt batches of kQ6ConvMinTokens tokens or more: like the reference (which converts
// Q6_K to 8-row-interleaved Q8_0 from 64 tokens), each 32-weight chunk is re-encoded as 8-bit
// codes with one fp16 scale, then multiplied in the symmetric batch order of
// legacy_sym_accum.h (SymBatchAccum). That is what lets Q6_K use the 16-row panel GEMM.
//
// Re-encoding of chunk j (sub-blocks 2j, 2j+1 with int8 scales s): exact integers P = s * (q - 32)
// (|P| <= 4096), m = max |P|. If m <= 127 the codes are P and the scale is d (exact); else
// codes RNE(P * (127 / m)) (float32 product) and scale fp16(d * m / 127) (float32 ops, RNE).
// Rounding costs at most half a code step of 127 per chunk maximum, as the reference's repack.
//
// Sits in an anonymous namespace like kquant_unpack.h: every kernel file compiles its own copy.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/kquant_unpack.h"
#include "kernels/legacy_sym_accum.h"
#include "quant/act_q8_0.h"

namespace ikllm::cpu {
namespace {

inline constexpr int64_t kQ6ConvMinTokens = 64;

struct Q6Conv {
    int8_t q[256];
    float d[8];  // fp16-representable scale per 32
};

inline void q6k_convert(const uint8_t* b, Q6Conv& o) {
    KBlock k;
    KQ6K::unpack(b, 0.0f, k);  // v = q + 32 in 0..63, sc per 16, dw = d
    for (int j = 0; j < 8; ++j) {
        int P[32], m = 0;
        for (int i = 0; i < 32; ++i) {
            P[i] = (int)k.sc[(32 * j + i) / 16] * ((int)k.v[32 * j + i] - 32);
            m = std::max(m, std::abs(P[i]));
        }
        if (m <= 127) {
            for (int i = 0; i < 32; ++i) o.q[32 * j + i] = (int8_t)P[i];
            o.d[j] = k.dw;
            continue;
        }
        const float id = 127.0f / (float)m;
        for (int i = 0; i < 32; ++i) o.q[32 * j + i] = (int8_t)std::nearbyint((float)P[i] * id);
        o.d[j] = round_to_half(k.dw * (float)m / 127.0f);
    }
}

// Q6_K rows re-encoded a chunk at a time for the lane batch kernels (sym_lanes_avx2.h,
// sym_lanes_neon.h): prepare(ra, rb) converts rows [ra, rb), blocks(r) gives row r's blocks.
struct Q6ConvRows {
    const uint8_t* w;
    size_t wrb;
    int64_t nb256;             // Q6_K blocks per row
    std::vector<Q6Conv> conv;  // the prepared rows' blocks
    int64_t first = 0;
    void prepare(int64_t ra, int64_t rb) {
        conv.resize((size_t)((rb - ra) * nb256));
        for (int64_t r = ra; r < rb; ++r)
            for (int64_t b = 0; b < nb256; ++b)
                q6k_convert(w + (size_t)r * wrb + (size_t)b * 210, conv[(size_t)((r - ra) * nb256 + b)]);
        first = ra;
    }
    const Q6Conv* blocks(int64_t r) const { return conv.data() + (r - first) * nb256; }
};

// Portable batch path (scalar and AVX2 kernels): rows r0..r1 against nt Q8_2_X4 activation rows.
inline void q6k_conv_matmul_portable(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1,
                                     const uint8_t* act, size_t arb, int64_t nt, float* y, int64_t ys) {
    const int64_t nb = ne0 / 256;
    std::vector<Q6Conv> row((size_t)nb);
    for (int64_t r = r0; r < r1; ++r) {
        for (int64_t b = 0; b < nb; ++b) q6k_convert(w + (size_t)r * wrb + (size_t)b * 210, row[(size_t)b]);
        for (int64_t t = 0; t < nt; ++t) {
            const uint8_t* a = act + (size_t)t * arb;
            SymBatchAccum acc;
            for (int64_t ib = 0; ib < nb * 8; ++ib) {
                const Q6Conv& c = row[(size_t)(ib / 8)];
                const quant::Q8x4BlockRef ab = quant::q8_2_x4_block(a, ne0, ib);
                int32_t s = 0;
                for (int i = 0; i < 32; ++i) s += ((int32_t)c.q[32 * (ib % 8) + i] + kSymBatchOffset) * ab.qs[i];
                acc.add(c.d[ib % 8], bf16_to_f32(ab.d_bf16), ab.sum, s);
            }
            y[t * ys + r] = acc.result();
        }
    }
}

}  // namespace
}  // namespace ikllm::cpu
