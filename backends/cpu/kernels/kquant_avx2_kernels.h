// Q4_K / Q5_K / Q6_K for the AVX2 kernel files (kquant_avx2.cpp, kquant_avxvnni.cpp). Q6_K prompt batches
// re-encoded to 8 bits per 32 (kquant_q6k_conv.h) through the 8-tokens-per-register batch kernel
// (sym_lanes_avx2.h), smaller ones direct (kquant_q82.h).
#pragma once
#include "kernels/matmul.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels/kquant_lanes.h"
#include "kernels/kquant_q6k_conv.h"
#include "kernels/kquant_q82.h"
#include "kernels/sym_lanes_avx2.h"

namespace ikllm::cpu {

namespace {
#if defined(__AVX2__) && defined(__FMA__)
// Q6_K rows re-encoded (q6k_convert) for the 8-tokens-per-register batch kernel.
struct Q6LaneRows : Q6ConvRows {
    struct Row {
        const Q6Conv* c;
        __m256i values(int64_t ib) const {
            return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c[ib / 8].q + 32 * (ib % 8)));
        }
        float scale(int64_t ib) const { return c[ib / 8].d[ib % 8]; }
    };
    Row row(int64_t r) const { return {blocks(r)}; }
};
#endif

// Q4_K / Q5_K: prompt batches eight tokens per register (kquant_lanes.h), smaller ones in tiles.
template <bool Five>
void q45k_matmul_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                      size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt >= kQ45KLanesMinTokens) {
#ifdef __AVXVNNI__
        return (Five ? q5k_lanes_matmul_avxvnni : q4k_lanes_matmul_avxvnni)(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
#else
        return (Five ? q5k_lanes_matmul_avx2 : q4k_lanes_matmul_avx2)(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
#endif
    }
    q82_matmul_or_rows1<Q45KAvx2<Five>, 4>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}

// Q6_K: prompt batches re-encoded to 8 bits per 32 (kquant_q6k_conv.h), from 16 tokens eight
// tokens per register in the direct mode (kquant_lanes.h), smaller ones in tiles.
void q6k_matmul_avx2(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act,
                     size_t arb, int64_t nt, float* y, int64_t ys) {
    if (nt >= kQ6ConvMinTokens) {
#if defined(__AVX2__) && defined(__FMA__)
        Q6LaneRows rows{{w, wrb, ne0 / 256, {}}};
        return lanes_matmul(rows, ne0, r0, r1, act, arb, nt, y, ys);
#else
        return q6k_conv_matmul_portable(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
#endif
    }
    if (nt >= kQ45KLanesMinTokens) {
#ifdef __AVXVNNI__
        return q6k_lanes_matmul_avxvnni(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
#else
        return q6k_lanes_matmul_avx2(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
#endif
    }
    q82_matmul_or_rows1<Q6KAvx2, 4>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
}  // namespace
}  // namespace ikllm::cpu
#endif
