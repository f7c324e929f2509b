// Tensor placement: rule parsing, ngl semantics, first match wins, reports and fallbacks.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/tensor_placement.h"
#include "quant/type_traits.h"

using namespace ikllm;

namespace {

std::vector<PlacementTensor> toy_model(int n_layer, bool tied = false) {
    std::vector<PlacementTensor> ts;
    auto add = [&](const std::string& n, uint32_t type = quant::T_F16) {
        ts.push_back({n, layer_of_tensor_name(n), type, 100});
    };
    add("token_embd.weight");
    add("rope_freqs.weight", quant::T_F32);
    for (int l = 0; l < n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", quant::T_F32);
        add(p + "attn_q.weight");
        add(p + "attn_k.weight");
        add(p + "ffn_gate_exps.weight");
        add(p + "ffn_down_exps.weight");
    }
    add("output_norm.weight", quant::T_F32);
    if (!tied) add("output.weight");
    return ts;
}

std::string dev(const std::vector<PlacementTensor>& ts, const PlacementResult& r, const std::string& name) {
    for (size_t i = 0; i < ts.size(); ++i)
        if (ts[i].name == name) return r.device_of[i];
    return "<missing>";
}

bool all_types(uint32_t) { return true; }

bool report_has(const PlacementResult& r, const std::string& needle) {
    for (const auto& l : r.report)
        if (l.find(needle) != std::string::npos) return true;
    return false;
}

Status status_of(const std::string& text, std::string* msg) {
    try {
        parse_placement_rules(text);
        return Status::ok;
    } catch (const Error& e) {
        *msg = e.what();
        return e.status;
    }
}

}  // namespace

TEST(PlacementRules, ParsesAndNormalises) {
    auto r = parse_placement_rules(" exps=cpu , attn=Cuda0;blk\\.1\\.=CUDA12 ;");
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].pattern, "exps");
    EXPECT_EQ(r[0].device, "CPU");
    EXPECT_EQ(r[1].pattern, "attn");
    EXPECT_EQ(r[1].device, "CUDA0");
    EXPECT_EQ(r[2].pattern, "blk\\.1\\.");
    EXPECT_EQ(r[2].device, "CUDA12");
    EXPECT_TRUE(parse_placement_rules("").empty());
    EXPECT_TRUE(parse_placement_rules("  ,; ").empty());
}

TEST(PlacementRules, RejectsBadItemsNamingThem) {
    std::string msg;
    EXPECT_EQ(status_of("exps", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("'exps'"), std::string::npos) << msg;
    EXPECT_EQ(status_of("a=CPU,=CUDA0", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("empty pattern"), std::string::npos) << msg;
    EXPECT_EQ(status_of("blk.(=CPU", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("invalid regex"), std::string::npos) << msg;
    EXPECT_NE(msg.find("blk.(=CPU"), std::string::npos) << msg;
    EXPECT_EQ(status_of("attn=GPU", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("unknown device 'GPU'"), std::string::npos) << msg;
    EXPECT_EQ(status_of("attn=CUDA", &msg), Status::invalid_argument);
    EXPECT_EQ(status_of("attn=CUDAx", &msg), Status::invalid_argument);
    EXPECT_EQ(status_of("attn=", &msg), Status::invalid_argument);
}

// std::regex compiles recursively: 20 000 nested groups overflowed the stack (a segfault) before
// the limits; now they are errors.
TEST(PlacementRules, DeepOrLongPatternsAreErrorsNotCrashes) {
    std::string msg;
    EXPECT_EQ(status_of(std::string(20000, '(') + "a" + std::string(20000, ')') + "=CPU", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("longer than 256"), std::string::npos) << msg;
    EXPECT_EQ(status_of(std::string(17, '(') + "a" + std::string(17, ')') + "=CPU", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("deeper than 16"), std::string::npos) << msg;
    EXPECT_EQ(status_of(std::string(16, '(') + "a" + std::string(16, ')') + "=CPU", &msg), Status::ok) << msg;
    EXPECT_EQ(status_of("\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(\\(a=CPU", &msg), Status::ok) << msg;  // escaped: no groups
    std::string many;
    for (int i = 0; i < 1025; ++i) many += "a" + std::to_string(i) + "=CPU,";
    EXPECT_EQ(status_of(many, &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("more than 1024"), std::string::npos) << msg;
}

TEST(PlacementRules, LayerOfName) {
    EXPECT_EQ(layer_of_tensor_name("blk.0.attn_q.weight"), 0);
    EXPECT_EQ(layer_of_tensor_name("blk.61.ffn_down_exps.weight"), 61);
    EXPECT_EQ(layer_of_tensor_name("token_embd.weight"), -1);
    EXPECT_EQ(layer_of_tensor_name("blk.x.attn"), -1);
    EXPECT_EQ(layer_of_tensor_name("blk.3"), -1);
}

TEST(PlacementRules, NglLastLayersAndOutputHead) {
    const auto ts = toy_model(4);
    auto r = place_tensors(ts, 4, 2, {}, "CUDA0", all_types);
    EXPECT_EQ(dev(ts, r, "blk.0.attn_q.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.1.ffn_gate_exps.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.2.attn_q.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.3.attn_norm.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "output.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "output_norm.weight"), "CPU");
    EXPECT_TRUE(r.report.empty());
    // n_gpu_layers == n_layer: every layer, not the head
    r = place_tensors(ts, 4, 4, {}, "CUDA0", all_types);
    EXPECT_EQ(dev(ts, r, "blk.0.attn_q.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "output.weight"), "CPU");
    // more than n_layer: the head too; token_embd and rope_freqs stay on the CPU
    r = place_tensors(ts, 4, 5, {}, "CUDA0", all_types);
    EXPECT_EQ(dev(ts, r, "output.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "output_norm.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "token_embd.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "rope_freqs.weight"), "CPU");
    r = place_tensors(ts, 4, 0, {}, "CUDA0", all_types);
    for (const auto& d : r.device_of) EXPECT_EQ(d, "CPU");
}

TEST(PlacementRules, RulesOverrideFirstMatchWins) {
    const auto ts = toy_model(4);
    auto rules = parse_placement_rules("blk\\.3\\.ffn_gate_exps=CUDA0,exps=CPU,token_embd=CUDA0,blk\\.3\\.ffn_=CUDA0");
    auto r = place_tensors(ts, 4, 5, rules, "CUDA0", all_types);
    // The first rule asks for blk.3's gate experts alone on the GPU; the up/down experts stay on
    // the CPU (second rule beats the fourth). One op reads all three: the group goes to the CPU.
    EXPECT_EQ(dev(ts, r, "blk.3.ffn_gate_exps.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.3.ffn_down_exps.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.0.ffn_gate_exps.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.0.attn_q.weight"), "CUDA0");         // ngl
    EXPECT_EQ(dev(ts, r, "token_embd.weight"), "CUDA0");           // rule
    // The fourth rule is shadowed by the second for every tensor it would match.
    EXPECT_TRUE(report_has(r, "rule 'blk\\.3\\.ffn_=CUDA0' matched no tensor"));
    EXPECT_TRUE(report_has(r, "kept on CPU together (one op reads them): blk.3.ffn_gate_exps.weight, "
                              "blk.3.ffn_down_exps.weight"));
    EXPECT_EQ(r.report.size(), 2u);
}

TEST(PlacementRules, UnmatchedRuleReported) {
    const auto ts = toy_model(2);
    auto r = place_tensors(ts, 2, 0, parse_placement_rules("foo=CPU"), "CUDA0", all_types);
    ASSERT_EQ(r.report.size(), 1u);
    EXPECT_EQ(r.report[0], "rule 'foo=CPU' matched no tensor");
}

TEST(PlacementRules, UnsupportedTypeFallsBackToCpu) {
    auto ts = toy_model(2);
    // iq2_xxs_r4's repack transforms values (scrambled signs: no exact way back to iq2_xxs): it
    // stays on the CPU.
    for (auto& t : ts)
        if (t.name == "blk.1.ffn_down_exps.weight") t.type = quant::T_IQ2_XXS_R4;
    auto r = place_tensors(ts, 2, 3, {}, "CUDA0", default_gpu_supports_type);
    EXPECT_EQ(dev(ts, r, "blk.1.ffn_down_exps.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.1.ffn_gate_exps.weight"), "CPU");  // one op reads all three experts
    EXPECT_EQ(dev(ts, r, "blk.1.attn_q.weight"), "CUDA0");
    EXPECT_TRUE(report_has(r, "blk.1.ffn_down_exps.weight: iq2_xxs_r4 has no CUDA0 kernel, kept on CPU"));
    EXPECT_EQ(r.report.size(), 2u);
    EXPECT_TRUE(default_gpu_supports_type(quant::T_Q4_K));
    EXPECT_FALSE(default_gpu_supports_type(quant::T_Q4_0_R8));
}

// Row-interleaved layouts whose repack is a bit permutation go to the GPU as their plain type
// (converted at load), with one report line per type.
TEST(PlacementRules, InterleavedTypesGoToTheGpuAsTheirPlainType) {
    auto ts = toy_model(2);
    for (auto& t : ts) {
        if (t.name == "blk.1.ffn_down_exps.weight" || t.name == "blk.0.ffn_down_exps.weight") t.type = quant::T_IQ4_K_R4;
        if (t.name == "blk.1.attn_q.weight") t.type = quant::T_Q8_0_R8;
    }
    auto r = place_tensors(ts, 2, 3, {}, "CUDA0", default_gpu_supports_type);
    EXPECT_EQ(dev(ts, r, "blk.1.ffn_down_exps.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.1.attn_q.weight"), "CUDA0");
    EXPECT_TRUE(report_has(r, "2 tensor(s) of iq4_k_r4 go to the GPU as iq4_k, converted at load")) << r.report.size();
    EXPECT_TRUE(report_has(r, "1 tensor(s) of q8_0_r8 go to the GPU as q8_0"));
    EXPECT_EQ(r.report.size(), 2u);
    // Kept on the CPU by a rule: nothing converted, nothing said.
    r = place_tensors(ts, 2, 3, parse_placement_rules("exps=CPU,attn_q=CPU"), "CUDA0", default_gpu_supports_type);
    EXPECT_TRUE(r.report.empty());
    EXPECT_EQ(gpu_weight_form(quant::T_F32, default_gpu_supports_type), (uint32_t)quant::T_F32);  // (id 0)
    EXPECT_EQ(gpu_weight_form(quant::T_Q4_K, default_gpu_supports_type), (uint32_t)quant::T_Q4_K);
    EXPECT_EQ(gpu_weight_form(quant::T_Q4_K_R4, default_gpu_supports_type), (uint32_t)quant::T_Q4_K);
    EXPECT_EQ(gpu_weight_form(quant::T_IQ4_KS_R4, default_gpu_supports_type), (uint32_t)quant::T_IQ4_KS);  // row scales too
    EXPECT_EQ(gpu_weight_form(quant::T_IQ2_XXS_R4, default_gpu_supports_type), kNoGpuForm);
    EXPECT_EQ(gpu_weight_form(quant::T_Q4_K_R4, [](uint32_t t) { return t != quant::T_Q4_K && t != quant::T_Q4_K_R4; }),
              kNoGpuForm);  // the base type has no GPU kernel either
}

TEST(PlacementRules, NoGpuKeepsEverythingOnCpuWithReport) {
    const auto ts = toy_model(2);
    auto r = place_tensors(ts, 2, 99, parse_placement_rules("attn=CUDA0,exps=CPU"), "", all_types);
    for (const auto& d : r.device_of) EXPECT_EQ(d, "CPU");
    EXPECT_TRUE(report_has(r, "n_gpu_layers = 99 asks for a GPU but none is available"));
    EXPECT_TRUE(report_has(r, "rule 'attn=CUDA0': no GPU is available"));
    EXPECT_EQ(r.report.size(), 2u);  // the CPU rule is fine
}

TEST(PlacementRules, OtherGpuNotAvailable) {
    const auto ts = toy_model(2);
    auto r = place_tensors(ts, 2, 0, parse_placement_rules("attn=CUDA1"), "CUDA0", all_types);
    for (const auto& d : r.device_of) EXPECT_EQ(d, "CPU");
    EXPECT_TRUE(report_has(r, "device CUDA1 is not available"));
}

// ---- several GPUs ------------------------------------------------------------------------------

namespace {
Status split_status(const std::string& text, std::string* msg) {
    try {
        parse_tensor_split(text);
        return Status::ok;
    } catch (const Error& e) {
        *msg = e.what();
        return e.status;
    }
}
}  // namespace

TEST(TensorSplit, ParsesShares) {
    EXPECT_TRUE(parse_tensor_split("").empty());
    EXPECT_TRUE(parse_tensor_split("  ").empty());
    EXPECT_EQ(parse_tensor_split("3,1"), (std::vector<double>{3, 1}));
    EXPECT_EQ(parse_tensor_split(" 0.5 ; 0 /2 "), (std::vector<double>{0.5, 0, 2}));
    std::string msg;
    for (const char* bad : {"a,1", "-1,2", "1,,2", "inf", "nan", "1e999", "2x"}) {
        EXPECT_EQ(split_status(bad, &msg), Status::invalid_argument) << bad;
        EXPECT_NE(msg.find("not a share"), std::string::npos) << msg;
    }
    EXPECT_EQ(split_status("0,0", &msg), Status::invalid_argument);
    EXPECT_NE(msg.find("every share is 0"), std::string::npos) << msg;
    std::string many;
    for (int i = 0; i < 65; ++i) many += "1,";
    many += "1";
    EXPECT_EQ(split_status(many, &msg), Status::invalid_argument);
}

TEST(TensorSplit, ContiguousRunsInProportion) {
    using V = std::vector<int>;
    EXPECT_EQ(split_layers(5, {1, 1}, 2), (V{0, 0, 0, 1, 1}));         // 2.5 rounds up
    EXPECT_EQ(split_layers(8, {3, 1}, 2), (V{0, 0, 0, 0, 0, 0, 1, 1}));
    EXPECT_EQ(split_layers(4, {0, 1}, 2), (V{1, 1, 1, 1}));            // a share of 0: no layers
    EXPECT_EQ(split_layers(4, {1, 0, 1}, 3), (V{0, 0, 2, 2}));
    EXPECT_EQ(split_layers(4, {}, 2), (V{0, 0, 1, 1}));                // no split: equal
    EXPECT_EQ(split_layers(4, {1}, 2), (V{0, 0, 0, 0}));               // missing shares are 0
    EXPECT_EQ(split_layers(6, {1, 1, 4}, 2), (V{0, 0, 0, 1, 1, 1}));   // extra shares ignored
    EXPECT_EQ(split_layers(3, {5, 7}, 1), (V{0, 0, 0}));
    EXPECT_TRUE(split_layers(0, {1, 1}, 2).empty());
    // Every layer gets a GPU and runs never go back, whatever the shares.
    for (int n = 1; n < 40; ++n) {
        const V v = split_layers(n, {0.3, 2, 0.01, 1}, 4);
        ASSERT_EQ((int)v.size(), n);
        for (int i = 1; i < n; ++i) EXPECT_LE(v[(size_t)i - 1], v[(size_t)i]);
    }
}

TEST(PlacementRules, LayersSplitOverSeveralGpus) {
    const auto ts = toy_model(4);
    GpuSet gpus{{"CUDA0", "CUDA1"}, {1, 1}};
    auto r = place_tensors(ts, 4, 5, {}, gpus, all_types);
    EXPECT_EQ(dev(ts, r, "blk.0.attn_q.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.1.ffn_down_exps.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.2.attn_q.weight"), "CUDA1");
    EXPECT_EQ(dev(ts, r, "blk.3.attn_norm.weight"), "CUDA1");
    EXPECT_EQ(dev(ts, r, "output.weight"), "CUDA1");  // with the last layer
    EXPECT_EQ(dev(ts, r, "output_norm.weight"), "CUDA1");
    EXPECT_EQ(dev(ts, r, "token_embd.weight"), "CPU");
    EXPECT_TRUE(r.report.empty());
    // ngl 3 of 4: layers 1..3 split 2 / 1 (1.5 rounds up).
    r = place_tensors(ts, 4, 3, {}, gpus, all_types);
    EXPECT_EQ(dev(ts, r, "blk.0.attn_q.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.1.attn_q.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.2.attn_q.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.3.attn_q.weight"), "CUDA1");
    EXPECT_EQ(dev(ts, r, "output.weight"), "CPU");
    // Rules name either GPU and win; experts to the CPU; an unknown GPU is reported.
    r = place_tensors(ts, 4, 5, parse_placement_rules("blk\\.0\\.attn_q=CUDA1,exps=CPU,blk\\.3\\.attn_k=CUDA2"), gpus,
                      all_types);
    EXPECT_EQ(dev(ts, r, "blk.0.attn_q.weight"), "CUDA1");
    EXPECT_EQ(dev(ts, r, "blk.0.attn_k.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.2.ffn_gate_exps.weight"), "CPU");
    EXPECT_EQ(dev(ts, r, "blk.3.attn_k.weight"), "CPU");
    EXPECT_TRUE(report_has(r, "device CUDA2 is not available (GPUs: CUDA0, CUDA1)"));
    // Shares for GPUs that are not there: reported, ignored.
    gpus.split = {1, 1, 1};
    r = place_tensors(ts, 4, 4, {}, gpus, all_types);
    EXPECT_TRUE(report_has(r, "tensor_split has 3 shares but 2 GPU(s)"));
    EXPECT_EQ(dev(ts, r, "blk.1.attn_q.weight"), "CUDA0");
    EXPECT_EQ(dev(ts, r, "blk.2.attn_q.weight"), "CUDA1");
    // All layers on the second GPU; the head follows them.
    gpus.split = {0, 1};
    r = place_tensors(ts, 4, 5, {}, gpus, all_types);
    for (size_t i = 0; i < ts.size(); ++i) {
        if (ts[i].layer >= 0 || ts[i].name.rfind("output", 0) == 0) {
            EXPECT_EQ(r.device_of[i], "CUDA1") << ts[i].name;
        }
    }
}
