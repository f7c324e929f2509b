// IQ2_K_R4 / IQ3_K_R4 / IQ5_K_R4 kernels at the edges of their integer ranges: blocks filled with
// constant byte patterns (every code, scale, sign and value-set bit at its minimum or maximum,
// e.g. IQ5_K value -126 or +123 everywhere) against activations of all +127 or all -127 codes,
// where an int16 stage of the SIMD dot products would saturate first. Every ISA's kernel must
// equal the double-precision product of the dequantized weights and the decoded activations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "kernels/matmul.h"
#include "quant/interleaved_act.h"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::quant;
using ikllm::cpu::Isa;

TEST(QuantGtiIqkR4, ExtremeCodesAndActivationsStayExact) {
    const int64_t ne0 = 512, nrows = 8, nt = 2;
    std::vector<Isa> isas = {Isa::scalar};
    if (cpu::detected_isa() == Isa::avx2 || cpu::detected_isa() == Isa::avx512) isas.push_back(Isa::avx2);
    if (cpu::detected_isa() == Isa::avx512) isas.push_back(Isa::avx512);
    for (uint32_t type : {(uint32_t)T_IQ2_K_R4, (uint32_t)T_IQ3_K_R4, (uint32_t)T_IQ5_K_R4}) {
        const TypeTraits* t = find_type(type);
        ASSERT_TRUE(t && t->dequant);
        const size_t rb = row_bytes(*t, ne0);
        const int64_t N = t->interleave;
        for (uint8_t pattern : {(uint8_t)0x00, (uint8_t)0xFF, (uint8_t)0x55, (uint8_t)0xAA}) {
            // constant bytes, then finite fp16 row scales (the first 8 bytes of each block)
            std::vector<uint8_t> w(rb * (size_t)nrows, pattern);
            const uint16_t h = f32_to_f16(0.001f);
            for (int64_t g = 0; g < nrows / N; ++g)
                for (int64_t b = 0; b < ne0 / t->block_elems; ++b)
                    for (int k = 0; k < 4; ++k) std::memcpy(w.data() + rb * (size_t)(g * N) + t->block_bytes * N * b + 2 * k, &h, 2);
            std::vector<float> wf((size_t)(nrows * ne0));
            for (int64_t g = 0; g < nrows / N; ++g) t->dequant(w.data() + rb * (size_t)(g * N), wf.data() + g * N * ne0, ne0);
            for (Isa isa : isas) {
                const cpu::MatmulKernel* k = cpu::find_matmul_exact(type, isa);
                ASSERT_NE(k, nullptr);
                ASSERT_EQ(k->act->id, (uint32_t)T_Q8_K);
                const size_t arb = k->act->row_bytes(ne0);
                std::vector<float> x((size_t)(nt * ne0));
                for (int64_t c = 0; c < ne0; ++c) {
                    x[c] = 1.0f;         // token 0: all codes +127
                    x[ne0 + c] = -1.0f;  // token 1: all codes -127
                }
                std::vector<uint8_t> act(arb * nt);
                std::vector<float> xf((size_t)(nt * ne0));
                for (int64_t i = 0; i < nt; ++i) {
                    k->act->encode_row(x.data() + i * ne0, act.data() + arb * i, ne0);
                    decode_q8_k_row(act.data() + arb * i, xf.data() + i * ne0, ne0);
                }
                std::vector<float> y((size_t)(nt * nrows));
                k->run(w.data(), rb, ne0, 0, nrows, act.data(), arb, nt, y.data(), nrows);
                for (int64_t i = 0; i < nt; ++i)
                    for (int64_t r = 0; r < nrows; ++r) {
                        double ref = 0, mag = 0;
                        for (int64_t c = 0; c < ne0; ++c) {
                            const double p = (double)wf[r * ne0 + c] * xf[i * ne0 + c];
                            ref += p;
                            mag += std::fabs(p);
                        }
                        ASSERT_NEAR(y[i * nrows + r], ref, 1e-5 * mag + 1e-30)
                            << t->name << " isa=" << cpu::isa_name(isa) << " pattern=" << (int)pattern << " row " << r
                            << " token " << i;
                    }
            }
        }
    }
}
