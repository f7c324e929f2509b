// AMX-BF16 prompt-batch kernels (amx_bf16.h + bf16_fill_avx512.h): one entry per weight type with
// a vector bf16 decoder. They are not in the main registry: find_batch_matmul() hands them out
// for batches of kAmxMinTokens tokens or more when the CPU and OS allow the tile unit.
#include "kernels/matmul.h"

#if (defined(__AMX_BF16__) || defined(__AMXBF16__)) && (defined(__AMX_TILE__) || defined(__AMXTILE__)) && defined(__AVX512BF16__)
// (GCC spells the macros __AMX_BF16__ / __AMX_TILE__, clang 14 __AMXBF16__ / __AMXTILE__)
#include "kernels/bf16_encode_avx512.h"
#include "kernels/bf16_fill_avx512.h"

namespace ikllm::cpu {
namespace {

template <class Fill>
void run(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const uint8_t* act, size_t arb,
         int64_t nt, float* y, int64_t ys) {
    amx::gemm<Fill>(w, wrb, ne0, r0, r1, act, arb, nt, y, ys);
}
template <class Fill>
void run_packed(const uint8_t* w, size_t wrb, int64_t ne0, int64_t r0, int64_t r1, const void* packed, int64_t nt,
                float* y, int64_t ys) {
    if (r1 > r0 && nt > 0) amx::gemm_block_packed<Fill>(w, wrb, ne0, r0, r1, static_cast<const uint16_t*>(packed), nt, y, ys);
}

// bf16 rows, bit-identical to the reference encoder (act_format_bf16).
void encode_bf16(const float* x, uint8_t* out, int64_t ne0) {
    simd512::bf16_encode_row(x, reinterpret_cast<uint16_t*>(out), ne0);
}
size_t bf16_row_bytes(int64_t ne0) { return (size_t)ne0 * 2; }
constexpr ActFormat kActBf16{quant::T_BF16, bf16_row_bytes, encode_bf16};

}  // namespace

KernelTable amx_kernels() {
    // min_tokens from quant_matmul_bench (4096 x 4096, 2 threads): the direct decoders (32-weight
    // types, Q4_K..Q6_K, the byte-shuffle / byte-permute ones of IQ4_XS/IQ4_K/IQ4_KS and Q2_K, Q3_K,
    // IQ2_K, IQ3_K, IQ5_K) break even with VNNI at about 16 tokens, the ConvSink ones (IQ6_K and the
    // remaining KS / KSS / KL types) at about 24-32.
#define AMX_ENTRY(id, Fill) {id, Isa::avx512, &kActBf16, run<Fill>, true, Fill::kMinTokens, run_packed<Fill>}
    using namespace quant;
    static const MatmulKernel entries[] = {
        AMX_ENTRY(T_Q4_0, amx::LegacyFill<Q4_0P>),   AMX_ENTRY(T_Q4_1, amx::LegacyFill<Q4_1P>),
        AMX_ENTRY(T_Q5_0, amx::LegacyFill<Q5_0P>),   AMX_ENTRY(T_Q5_1, amx::LegacyFill<Q5_1P>),
        AMX_ENTRY(T_Q8_0, amx::LegacyFill<Q8_0P>),   AMX_ENTRY(T_Q6_0, amx::LegacyFill<Q6_0P>),
        AMX_ENTRY(T_IQ4_NL, amx::LegacyFill<IQ4_NLP>), AMX_ENTRY(T_MXFP4, amx::LegacyFill<MXFP4P>),
        AMX_ENTRY(T_Q4_K, amx::Q45KFill<false>),     AMX_ENTRY(T_Q5_K, amx::Q45KFill<true>),
        AMX_ENTRY(T_Q6_K, amx::Q6KFill),
        AMX_ENTRY(T_Q2_K, amx::LutFill<amx::LutKind::q2k>),      AMX_ENTRY(T_Q3_K, amx::LutFill<amx::LutKind::q3k>),
        AMX_ENTRY(T_IQ4_XS, amx::Iq4Fill<amx::Iq4Kind::xs>),  AMX_ENTRY(T_IQ2_K, amx::LutFill<amx::LutKind::iq2k>),
        AMX_ENTRY(T_IQ3_K, amx::LutFill<amx::LutKind::iq3k>),    AMX_ENTRY(T_IQ4_K, amx::Iq4Fill<amx::Iq4Kind::k>),
        AMX_ENTRY(T_IQ5_K, amx::LutFill<amx::LutKind::iq5k>),    AMX_ENTRY(T_IQ6_K, amx::SinkFill<ZIq6K>),
        AMX_ENTRY(T_IQ4_KS, amx::Iq4Fill<amx::Iq4Kind::ks>),  AMX_ENTRY(T_IQ5_KS, amx::SinkFill<ZIq5Ks>),
        AMX_ENTRY(T_IQ2_KS, amx::SinkFill<SIq2Ks>),  AMX_ENTRY(T_IQ3_KS, amx::SinkFill<SIq3Ks>),
        AMX_ENTRY(T_IQ4_KSS, amx::SinkFill<SIq4Kss>), AMX_ENTRY(T_IQ2_KL, amx::SinkFill<SIq2Kl>),
    };
#undef AMX_ENTRY
    return {entries, sizeof(entries) / sizeof(entries[0])};
}

size_t amx_packed_bytes(int64_t ne0, int64_t nt) { return 2 * amx::packed_elems(ne0, nt); }

// Encode (bf16_rne, as encode_bf16) and pack in one pass: 16 rows x 32 floats -> one B tile.
void amx_pack_rows(const float* const* rows, int64_t ne0, int64_t nt, void* out) {
    const int64_t kc = ne0 / amx::kChunk;
    uint16_t* B = static_cast<uint16_t*>(out);
    for (int64_t g = 0; g < (nt + 15) / 16; ++g) {
        const int n = (int)std::min<int64_t>(16, nt - 16 * g);
        for (int64_t c = 0; c < kc; ++c) {
            __m512i r[16];
            for (int t = 0; t < 16; ++t) {
                if (t >= n) {
                    r[t] = _mm512_setzero_si512();
                    continue;
                }
                const float* x = rows[16 * g + t] + c * amx::kChunk;
                r[t] = _mm512_inserti64x4(_mm512_castsi256_si512(simd512::bf16_rne(_mm512_loadu_ps(x))),
                                          simd512::bf16_rne(_mm512_loadu_ps(x + 16)), 1);
            }
            amx::transpose16(r);
            uint16_t* tile = B + (g * kc + c) * amx::kTileElems;
            for (int p = 0; p < 16; ++p) _mm512_store_si512((void*)(tile + p * 32), r[p]);
        }
    }
}

}  // namespace ikllm::cpu

#else

namespace ikllm::cpu {
KernelTable amx_kernels() { return {nullptr, 0}; }
size_t amx_packed_bytes(int64_t, int64_t) { return 0; }
void amx_pack_rows(const float* const*, int64_t, int64_t, void*) {}
}  // namespace ikllm::cpu

#endif
