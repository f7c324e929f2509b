// Activation encoders of the interleaved types' kernels: every ISA's kernel must write exactly
// the bytes of its activation format's reference encoder (quant-formats.md §15), since the SIMD
// kernels publish their own (faster) encoders for Q8_K, Q8_K32 and Q8_2_X4.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/act_q8_k.h"
#include "quant/type_traits.h"

using namespace ikllm;
using namespace ikllm::quant;
using ikllm::cpu::Isa;

namespace {

using Encoder = void (*)(const float*, uint8_t*, int64_t);

Encoder reference_encoder(uint32_t act_id) {
    switch (act_id) {
        case T_Q8_K: return encode_q8_k_row;
        case T_Q8_K32: return encode_q8_k32_row;
        case T_Q8_2_X4: return act_q8_2_x4_encode_row;
        default: return nullptr;
    }
}

// Gaussian rows with an all-zero block, exact .5 ties at id = 1, huge and subnormal values.
std::vector<float> test_row(int64_t n) {
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x((size_t)n);
    for (auto& v : x) v = nd(rng);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
    for (int j = 0; j < 256; ++j) x[512 + j] = (float)(j % 20) - 9.5f;
    x[512 + 77] = 127.0f;
    for (int j = 0; j < 32; ++j) x[768 + j] = 1e-39f * (float)(j - 16);
    for (int j = 0; j < 256; ++j) x[1024 + j] *= 3e4f;
    return x;
}

}  // namespace

TEST(QuantGtiAct, EveryKernelEncoderMatchesReference) {
    std::vector<Isa> isas;
    if (cpu::detected_isa() == Isa::avx2 || cpu::detected_isa() == Isa::avx512) isas.push_back(Isa::avx2);
    if (cpu::detected_isa() == Isa::avx512) isas.push_back(Isa::avx512);
    const std::vector<float> x = test_row(1536);
    size_t ntypes = 0;
    const TypeTraits* all = all_types(&ntypes);
    int checked = 0;
    for (Isa isa : isas)
        for (size_t i = 0; i < ntypes; ++i) {
            if (all[i].interleave <= 1) continue;
            const cpu::MatmulKernel* k = cpu::find_matmul_exact(all[i].id, isa);
            if (!k) continue;
            const Encoder ref = reference_encoder(k->act->id);
            if (!ref) continue;
            for (int64_t n : {256, 1536, 96, 224}) {
                if ((k->act->id != T_Q8_2_X4 && n % 256) || n % all[i].block_elems) continue;
                SCOPED_TRACE(std::string(all[i].name) + " " + cpu::isa_name(isa) + " n=" + std::to_string(n));
                std::vector<uint8_t> want(k->act->row_bytes(n)), got(want.size(), 0xAB);
                ref(x.data() + (n < 256 ? 40 : 0), want.data(), n);
                k->act->encode_row(x.data() + (n < 256 ? 40 : 0), got.data(), n);
                ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size()));
                ++checked;
            }
        }
    if (!isas.empty()) {
        EXPECT_GT(checked, 0);
    }
}
