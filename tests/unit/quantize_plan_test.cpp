// Type choice of `ikllm quantize` (src/quantize/quant_plan): preset mixes, --pure, rules,
// fallbacks for row length and interleave, and the importance-matrix requirements.
#include <gtest/gtest.h>

#include "core/error.h"
#include "quant/type_traits.h"
#include "quantize/quant_plan.h"

using namespace ikllm;
using namespace ikllm::quantize;

namespace {

TensorDesc t2(const std::string& name, int64_t ne0, int64_t ne1) {
    TensorDesc d;
    d.name = name;
    d.type = quant::T_F32;
    d.n_dims = 2;
    d.ne[0] = ne0;
    d.ne[1] = ne1;
    return d;
}
TensorDesc t1(const std::string& name, int64_t ne0) {
    TensorDesc d = t2(name, ne0, 1);
    d.n_dims = 1;
    return d;
}

// A llama-shaped model with n layers.
std::vector<TensorDesc> model(int n, int64_t E = 256, int64_t F = 512) {
    std::vector<TensorDesc> v{t2("token_embd.weight", E, 1000), t1("output_norm.weight", E),
                              t2("output.weight", E, 1000)};
    for (int i = 0; i < n; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        v.push_back(t1(p + "attn_norm.weight", E));
        for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output"}) v.push_back(t2(p + w + ".weight", E, E));
        v.push_back(t2(p + "ffn_gate.weight", E, F));
        v.push_back(t2(p + "ffn_up.weight", E, F));
        v.push_back(t2(p + "ffn_down.weight", F, E));
        v.push_back(t2(p + "ffn_gate_inp.weight", E, 8));  // a router: must stay F32
    }
    return v;
}

uint32_t type_of(const std::vector<TensorDesc>& ts, const std::vector<TensorChoice>& cs, const std::string& name) {
    for (size_t i = 0; i < ts.size(); ++i)
        if (ts[i].name == name) return cs[i].type;
    ADD_FAILURE() << "no tensor " << name;
    return 0;
}

std::vector<TensorChoice> run(const std::vector<TensorDesc>& ts, const std::string& target, PlanParams p = {}) {
    p.target = target;
    return plan(ts, 16, p, resolve_preset(target));
}

TEST(QuantPlan, Q4KMMixBumpsMoreBitsLayers) {
    const auto ts = model(16);
    const auto cs = run(ts, "q4_k_m");  // case-insensitive
    EXPECT_EQ(type_of(ts, cs, "output.weight"), quant::T_Q6_K);
    EXPECT_EQ(type_of(ts, cs, "token_embd.weight"), quant::T_Q4_K);
    EXPECT_EQ(type_of(ts, cs, "output_norm.weight"), quant::T_F32);
    EXPECT_EQ(type_of(ts, cs, "blk.3.ffn_gate_inp.weight"), quant::T_F32);
    // more-bits layers for n=16: i < 2, i >= 14, (i - 2) % 3 == 2 -> 0,1,4,7,10,13,14,15
    for (int i = 0; i < 16; ++i) {
        const bool more = i < 2 || i >= 14 || (i - 2) % 3 == 2;
        const std::string p = "blk." + std::to_string(i) + ".";
        EXPECT_EQ(type_of(ts, cs, p + "attn_v.weight"), more ? quant::T_Q6_K : quant::T_Q4_K) << i;
        EXPECT_EQ(type_of(ts, cs, p + "ffn_down.weight"), more ? quant::T_Q6_K : quant::T_Q4_K) << i;
        EXPECT_EQ(type_of(ts, cs, p + "attn_q.weight"), quant::T_Q4_K);
    }
}

TEST(QuantPlan, PureUsesOneTypeForEveryMatrix) {
    const auto ts = model(4);
    PlanParams p;
    p.pure = true;
    const auto cs = run(ts, "IQ4_K", p);
    for (size_t i = 0; i < ts.size(); ++i) {
        const bool keep = ts[i].n_dims < 2 || ts[i].name.find("ffn_gate_inp") != std::string::npos;
        EXPECT_EQ(cs[i].type, keep ? quant::T_F32 : quant::T_IQ4_K) << ts[i].name;
        EXPECT_EQ(cs[i].quantize, !keep);
    }
}

TEST(QuantPlan, RulesFirstMatchWinsAndMustMatch) {
    const auto ts = model(2);
    PlanParams p;
    p.rules.push_back(parse_rule("ffn_down=q8_0"));
    p.rules.push_back(parse_rule("blk\\.1\\..*=Q5_K"));
    const auto cs = run(ts, "Q4_0", p);
    EXPECT_EQ(type_of(ts, cs, "blk.1.ffn_down.weight"), quant::T_Q8_0);  // first rule wins
    EXPECT_EQ(type_of(ts, cs, "blk.1.attn_q.weight"), quant::T_Q5_K);
    EXPECT_EQ(type_of(ts, cs, "blk.0.attn_q.weight"), quant::T_Q4_0);

    PlanParams bad;
    bad.rules.push_back(parse_rule("no_such_tensor=q8_0"));
    EXPECT_THROW(run(ts, "Q4_0", bad), Error);
    EXPECT_THROW(parse_rule("attn_q"), Error);
    EXPECT_THROW(parse_rule("attn_q=not_a_type"), Error);
    EXPECT_THROW(parse_rule("(=q8_0"), Error);
}

TEST(QuantPlan, RowLengthAndInterleaveFallbacks) {
    std::vector<TensorDesc> ts{t2("blk.0.attn_q.weight", 96, 64), t2("blk.0.attn_k.weight", 200, 64),
                               t2("blk.0.attn_v.weight", 256, 6), t2("blk.0.ffn_up.weight", 256, 8)};
    PlanParams p;
    p.pure = true;
    auto cs = plan(ts, 1, p, resolve_preset("Q4_K"));
    EXPECT_EQ(cs[0].type, quant::T_IQ4_NL);  // 96 columns: not a multiple of 256, a 32-block type of ~4.5 bits
    EXPECT_FALSE(cs[0].note.empty());
    EXPECT_EQ(cs[1].type, quant::T_F16);  // 200: not even a multiple of 32
    EXPECT_EQ(cs[2].type, quant::T_Q4_K);
    p.target = "IQ4_K_R4";
    cs = plan(ts, 1, p, resolve_preset("IQ4_K_R4"));
    EXPECT_EQ(cs[2].type, quant::T_IQ4_K);     // 6 rows do not fill 4-row groups
    EXPECT_EQ(cs[3].type, quant::T_IQ4_K_R4);
    EXPECT_FALSE(cs[2].note.empty());
}

TEST(QuantPlan, LowBitTypesNeedAnImportanceMatrix) {
    const auto ts = model(2);
    EXPECT_THROW(run(ts, "IQ2_XXS"), Error);
    EXPECT_THROW(run(ts, "IQ2_KT"), Error);  // per-tensor rule (IQ2_KT is not a preset-level refusal)
    PlanParams p;
    p.have_imatrix = true;
    EXPECT_NO_THROW(run(ts, "IQ2_XXS", p));
    PlanParams q;
    q.ignore_imatrix_rules = true;
    EXPECT_NO_THROW(run(ts, "IQ2_KT", q));
    EXPECT_NO_THROW(run(ts, "IQ4_K"));
}

TEST(QuantPlan, PresetsAndRepackedForms) {
    EXPECT_EQ(resolve_preset("Q4_K_M").file_type, 15u);
    EXPECT_EQ(resolve_preset("iq4_k").main_type, quant::T_IQ4_K);
    const Preset r = resolve_preset("IQ2_K_R4");
    EXPECT_TRUE(r.repacked);
    EXPECT_EQ(r.main_type, quant::T_IQ2_K_R4);
    EXPECT_EQ(r.file_type, 338u);
    EXPECT_EQ(resolve_preset("IQ2_M_R4").main_type, quant::T_IQ2_S_R4);
    EXPECT_THROW(resolve_preset("Q4_K_XL"), Error);
    EXPECT_THROW(resolve_preset("q8_1"), Error);  // activation-only format

    const auto ts = model(2);
    PlanParams p;
    p.repack = true;
    const auto cs = run(ts, "Q4_0", p);
    EXPECT_EQ(type_of(ts, cs, "blk.0.attn_q.weight"), quant::T_Q4_0_R8);
    EXPECT_EQ(type_of(ts, cs, "token_embd.weight"), quant::T_Q4_0);  // looked up row by row: stays plain
}

}  // namespace
