// Sessions on the MoE / MLA reference models: every KV-cache type stays close to an f32 cache,
// a position shift of the latent cache (only its RoPE part rotates) equals decoding at the
// shifted positions, long YaRN positions give the same logits in a batch and token by token,
// smart expert reduction with K = all experts, f = 0 changes nothing, and the expanded MLA form
// of big batches agrees with the absorbed one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "api/api_internal.h"
#include "ikllm.h"
#include "kernels/matmul.h"
#include "quant/act_q8_0.h"
#include "quant/type_traits.h"
#include "kernel_test_util.h"
#include "test_support.h"

namespace {

struct M {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    explicit M(const std::string& stem, const char* dir = "/models/") {
        ikllm_lib_create(0, &lib);
        const std::string p = ikllm::test::refdata_dir() + dir + stem + ".gguf";
        EXPECT_EQ(ikllm_model_load(lib, p.c_str(), nullptr, nullptr, nullptr, nullptr, &model), IKLLM_OK)
            << ikllm_last_error();
    }
    ~M() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

struct SessionSettings {
    const char* kv = "f16";
    const char* ser = "";
    int n_ctx = 64;
    int mla_expand_min_batch = 128;  // the option's default
    int batch_invariant = 0;
    double attn_scratch_mib = 0;
};

ikllm_session* make_session(ikllm_model* m, const SessionSettings& ss) {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    ikllm_options_set_int(o, "n_ctx", ss.n_ctx);
    ikllm_options_set_int(o, "n_threads", 2);
    EXPECT_EQ(ikllm_options_set_string(o, "kv_type", ss.kv), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_string(o, "ser", ss.ser), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(ikllm_options_set_int(o, "mla_expand_min_batch", ss.mla_expand_min_batch), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(ikllm_options_set_int(o, "batch_invariant", ss.batch_invariant), IKLLM_OK);
    EXPECT_EQ(ikllm_options_set_float(o, "attn_scratch_mib", ss.attn_scratch_mib), IKLLM_OK);
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(m, o, &s), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(o);
    return s;
}

ikllm_session* session(ikllm_model* m, const char* kv = "f16", const char* ser = "") {
    SessionSettings ss;
    ss.kv = kv;
    ss.ser = ser;
    return make_session(m, ss);
}

std::vector<float> decode(ikllm_session* s, const std::vector<int32_t>& toks, int32_t pos0) {
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < toks.size(); ++i) pos[i] = pos0 + (int32_t)i;
    EXPECT_EQ(ikllm_session_decode(s, toks.data(), pos.data(), nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK)
        << ikllm_last_error();
    const float* l = nullptr;
    int32_t n = 0;
    EXPECT_EQ(ikllm_session_logits(s, -1, &l, &n), IKLLM_OK);
    return std::vector<float>(l, l + n);
}

double rms_rel(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return std::sqrt(num / den);
}

const std::vector<int32_t> kToks{1, 450, 1496, 1354, 1701, 432, 1204, 975, 278, 1366, 1203, 1889};  // vocab is 2000

TEST(MoeMlaSession, KvCacheTypesStayCloseToF32) {
    IKLLM_REQUIRE_REFDATA();
    for (const char* stem : {"deepseek2-tiny-f16", "qwen3moe-tiny-f16"}) {
        M m(stem);
        ikllm_session* s32 = session(m.model, "f32");
        const std::vector<float> ref = decode(s32, kToks, 0);
        ikllm_session_free(s32);
        const std::pair<const char*, double> kinds[] = {{"f16", 2e-3}, {"bf16", 1e-2}, {"q8_0", 3e-2}};
        for (auto [kv, tol] : kinds) {
            ikllm_session* s = session(m.model, kv);
            EXPECT_LT(rms_rel(decode(s, kToks, 0), ref), tol) << stem << " " << kv;
            ikllm_session_free(s);
        }
    }
}

TEST(MoeMlaSession, ShiftingTheLatentCacheEqualsDecodingThere) {
    IKLLM_REQUIRE_REFDATA();
    M m("deepseek2-tiny-f16");
    for (const char* kv : {"f32", "q8_0"}) {
        const std::vector<int32_t> head(kToks.begin(), kToks.end() - 1), last{kToks.back()};
        ikllm_session* a = session(m.model, kv);
        decode(a, head, 0);
        ASSERT_EQ(ikllm_session_seq_shift(a, 0, 0, -1, 100), IKLLM_OK) << ikllm_last_error();
        const std::vector<float> shifted = decode(a, last, 100 + (int32_t)head.size());
        ikllm_session* b = session(m.model, kv);
        decode(b, head, 100);
        const std::vector<float> direct = decode(b, last, 100 + (int32_t)head.size());
        EXPECT_LT(rms_rel(shifted, direct), std::string(kv) == "f32" ? 1e-4 : 2e-2) << kv;
        ikllm_session_free(a);
        ikllm_session_free(b);
    }
}

TEST(MoeMlaSession, LongYarnPositionsBatchEqualsStepwise) {
    IKLLM_REQUIRE_REFDATA();
    M m("deepseek2-tiny-f16");
    const int32_t p0 = 160000;  // near the 163840 training context, far beyond the original 4096
    ikllm_session* a = session(m.model, "f32");
    const std::vector<float> batch = decode(a, kToks, p0);
    ikllm_session* b = session(m.model, "f32");
    std::vector<float> step;
    for (size_t i = 0; i < kToks.size(); ++i) step = decode(b, {kToks[i]}, p0 + (int32_t)i);
    for (float v : batch) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LT(rms_rel(step, batch), 1e-4);
    ikllm_session_free(a);
    ikllm_session_free(b);
}

// The attention scratch bound (reference -amb) only changes how queries are split into tasks:
// a bound of 1 KiB forces one query per task, and every logit stays bit-identical.
TEST(MoeMlaSession, AttentionScratchBoundKeepsLogitsIdentical) {
    IKLLM_REQUIRE_REFDATA();
    for (const char* stem : {"deepseek2-tiny-f16", "qwen3moe-tiny-f16"}) {
        M m(stem);
        ikllm_session* plain = session(m.model);
        ikllm_options* o = nullptr;
        ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
        ikllm_options_set_int(o, "n_ctx", 64);
        ikllm_options_set_int(o, "n_threads", 2);
        ASSERT_EQ(ikllm_options_set_float(o, "attn_scratch_mib", 1.0 / 1024), IKLLM_OK) << ikllm_last_error();
        EXPECT_EQ(ikllm_options_set_float(o, "attn_scratch_mib", -1), IKLLM_ERR_INVALID_ARGUMENT);
        ikllm_session* bounded = nullptr;
        ASSERT_EQ(ikllm_session_create(m.model, o, &bounded), IKLLM_OK) << ikllm_last_error();
        ikllm_options_free(o);
        const std::vector<int32_t> head(kToks.begin(), kToks.end() - 3), tail(kToks.end() - 3, kToks.end());
        for (const auto* part : {&head, &tail}) {
            const int32_t pos0 = part == &head ? 0 : (int32_t)head.size();
            const std::vector<float> a = decode(plain, *part, pos0), b = decode(bounded, *part, pos0);
            ASSERT_EQ(a.size(), b.size());
            for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << stem << " logit " << i;
        }
        ikllm_session_free(plain);
        ikllm_session_free(bounded);
    }
}

TEST(MoeMlaSession, ExpertReductionOptions) {
    IKLLM_REQUIRE_REFDATA();
    M m("qwen3moe-tiny-f16");  // 8 experts, 2 used
    ikllm_session* plain = session(m.model);
    const std::vector<float> ref = decode(plain, kToks, 0);
    ikllm_session* same = session(m.model, "f16", "2,0");
    EXPECT_LT(rms_rel(decode(same, kToks, 0), ref), 1e-6);  // keeps both experts: identical
    ikllm_session* one = session(m.model, "f16", "1,0");
    const double d = rms_rel(decode(one, kToks, 0), ref);
    EXPECT_GT(d, 1e-4);  // one expert per token: a real change, but still the same model
    EXPECT_LT(d, 0.5);
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &o);
    EXPECT_EQ(ikllm_options_set_string(o, "ser", "0,0.5"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_options_set_string(o, "ser", "4,2"), IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ikllm_options_set_string(o, "kv_type", "q4_0"), IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_options_free(o);
    ikllm_session_free(plain);
    ikllm_session_free(same);
    ikllm_session_free(one);
}


// Expanded MLA (batches of >= mla_expand_min_batch tokens: latents expanded through attn_kv_b,
// ordinary attention over H heads) against the absorbed form on a 150-token prompt: the same
// function, different rounding. Batch-invariant sessions, an attention scratch bound too small
// for the expansion and batches below the threshold run the absorbed form: bit-identical to
// mla_expand_min_batch 0. (refdata_logits_mla_expanded checks the expanded
// form against the reference's logits.)
ikllm_session* mla_session(ikllm_model* m, const char* kv, int expand_min, int invariant = 0, double scratch_mib = 0) {
    SessionSettings ss;
    ss.kv = kv;
    ss.n_ctx = 256;
    ss.mla_expand_min_batch = expand_min;
    ss.batch_invariant = invariant;
    ss.attn_scratch_mib = scratch_mib;
    return make_session(m, ss);
}

TEST(MoeMlaSession, ExpandedMlaAgreesWithAbsorbed) {
    IKLLM_REQUIRE_REFDATA();
    std::vector<int32_t> prompt{1};
    for (uint32_t i = 1, x = 12345; i < 150; ++i) {
        x = x * 1103515245u + 12345u;
        prompt.push_back(3 + (int32_t)((x >> 16) % 1990));
    }
    const std::vector<int32_t> next{450, 1496};
    const auto run = [&](ikllm_session* s) {
        std::vector<float> a = decode(s, prompt, 0), b = decode(s, next, (int32_t)prompt.size());
        a.insert(a.end(), b.begin(), b.end());  // the prompt's last logits, then an absorbed step over its cache
        ikllm_session_free(s);
        return a;
    };
    for (const char* stem : {"deepseek2-tiny-f16", "deepseek2-lite-tiny-f16"}) {
        M m(stem);
        for (const char* kv : {"f16", "q8_0"}) {
            SCOPED_TRACE(std::string(stem) + " " + kv);
            const std::vector<float> absorbed = run(mla_session(m.model, kv, 0));
            const std::vector<float> expanded = run(mla_session(m.model, kv, 128));
            const double d = rms_rel(expanded, absorbed);
            // Both forms run a prompt this long through the bf16 attention kernels (keys and
            // queries rounded to bf16: ~4e-3 relative), each on different vectors.
            EXPECT_LT(d, std::string(kv) == "f16" ? 1e-2 : 3e-2);
            EXPECT_GT(d, 0.0) << "the expanded form did not run";
            EXPECT_EQ(run(mla_session(m.model, kv, 128, 1)), run(mla_session(m.model, kv, 0, 1)))
                << "batch-invariant sessions stay absorbed";
            EXPECT_EQ(run(mla_session(m.model, kv, 128, 0, 0.5)), absorbed) << "a 0.5 MiB bound keeps the absorbed form";
            EXPECT_EQ(run(mla_session(m.model, kv, 151)), absorbed) << "150 tokens are below a threshold of 151";
        }
    }
    // The split layout (attn_k_b / attn_v_b, no attn_kv_b; deepseek2-tiny's weights): the loader
    // re-creates attn_kv_b from them (exactly, in F16), so both forms equal deepseek2-tiny's bit for bit.
    M tiny("deepseek2-tiny-f16"), split("deepseek2-split-tiny-f16");
    for (int expand_min : {0, 128}) {
        const std::vector<float> a = run(mla_session(split.model, "f16", expand_min));
        EXPECT_EQ(a, run(mla_session(tiny.model, "f16", expand_min))) << "split layout, mla_expand_min_batch " << expand_min;
    }
    EXPECT_NE(run(mla_session(split.model, "f16", 128)), run(mla_session(split.model, "f16", 0)));
}


// attn_kv_b re-created from quantized split-layout products: Q8_0 rows whose k part is the
// transposed attn_k_b (within half a step of the new blocks' fp16 scales) and whose v part is attn_v_b's
// rows copied exactly (same type).
// A weight tensor of the loaded model (file or derived) as floats.
std::vector<float> dequant(ikllm_model* m, const std::string& name) {
    for (const auto& t : m->m->weights)
        if (name == t->name) {
            const ikllm::quant::TypeTraits& tt = *ikllm::quant::find_type(t->type);
            EXPECT_EQ(tt.interleave, 1);
            std::vector<float> v((size_t)t->n_elements());
            for (int64_t r = 0; r < t->n_rows(); ++r)
                tt.dequant(static_cast<const uint8_t*>(t->data) + (size_t)r * t->nb[1], v.data() + r * t->ne[0], t->ne[0]);
            return v;
        }
    ADD_FAILURE() << "no tensor " << name;
    return {};
}

TEST(MoeMlaSession, SplitLayoutKvBFromQuantizedProducts) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ikllm_lib_create(0, &lib);
    const std::string in = ikllm::test::refdata_dir() + "/models/deepseek2-split-tiny-f16.gguf";
    const std::string out = (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "ikllm_split_q8.gguf";
    ikllm_options* q = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_QUANTIZE, &q);
    ikllm_options_set_string(q, "type", "Q8_0");
    ikllm_options_set_int(q, "pure", 1);
    ASSERT_EQ(ikllm_quantize(lib, in.c_str(), out.c_str(), q, nullptr, nullptr, nullptr, nullptr), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(q);
    ikllm_model* m = nullptr;
    ASSERT_EQ(ikllm_model_load(lib, out.c_str(), nullptr, nullptr, nullptr, nullptr, &m), IKLLM_OK) << ikllm_last_error();
    const int64_t H = 4, dn = 128, dv = 128, rkv = 512;  // deepseek2-tiny's MLA sizes
    for (int layer = 0; layer < 2; ++layer) {
        const std::string p = "blk." + std::to_string(layer) + ".";
        const std::vector<float> kb = dequant(m, p + "attn_k_b.weight"), vb = dequant(m, p + "attn_v_b.weight"),
                                 kvb = dequant(m, p + "attn_kv_b.weight(derived)");
        ASSERT_EQ(kb.size(), (size_t)(dn * rkv * H));
        ASSERT_EQ(kvb.size(), (size_t)(rkv * H * (dn + dv)));
        double worst = 0;
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < dn + dv; ++i) {
                const float* row = kvb.data() + (h * (dn + dv) + i) * rkv;
                for (int64_t c0 = 0; c0 < rkv; c0 += 32) {
                    float want[32], amax = 0;
                    for (int c = 0; c < 32; ++c) {
                        want[c] = i < dn ? kb[(size_t)((h * rkv + c0 + c) * dn + i)] : vb[(size_t)((h * dv + i - dn) * rkv + c0 + c)];
                        amax = std::max(amax, std::fabs(want[c]));
                    }
                    for (int c = 0; c < 32; ++c) {
                        const double err = std::fabs(row[c0 + c] - want[c]);
                        if (i >= dn) {
                            ASSERT_EQ(row[c0 + c], want[c]) << "v row copied exactly";
                        }
                        // half a step of the block scale, plus the scale's own fp16 rounding times 127
                        ASSERT_LE(err, amax / 127.0 * (0.5 + 127.0 / 2048)) << "head " << h << " row " << i << " col " << c0 + c;
                        worst = std::max(worst, err / (amax > 0 ? amax : 1.0f));
                    }
                }
            }
        EXPECT_GT(worst, 0.0);  // the k rows really were requantized
    }
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    std::remove(out.c_str());
}

// What the loader makes of a derived per-head product of type t: the interleaved form where that
// keeps the results (repack_mla_heads; with AVX2 alone Q8_0_R8 sums in another order), else t.
uint32_t derived_form(const ikllm_model* model, uint32_t t, uint32_t interleaved) {
    return model->m->cpu->repack_changes_results(t) ? t : interleaved;
}

// The per-head MLA products derived for the CPU are interleaved at load where that keeps the
// results (wk_b, derived in Q8_0: Q8_0_R8; wv_b in attn_kv_b's type: Q8_0_R8, or the CPU's own
// run-time layout of that type), with the values of the plain derivation: wk_b[h][c] = Q8_0
// re-encoding of the transposed k rows of attn_kv_b, wv_b = its v rows as stored.
void check_derived_heads(ikllm_model* model, uint32_t want_v_type) {
    const int64_t H = 4, dn = 128, dv = 128, rkv = 512;  // deepseek2-tiny's MLA sizes
    for (int layer = 0; layer < 2; ++layer) {
        const std::string p = "blk." + std::to_string(layer) + ".";
        const ikllm::Tensor *kb = nullptr, *vb = nullptr, *kvb = nullptr;
        for (const auto& t : model->m->weights) {
            if (p + "attn_k_b.weight(derived)" == t->name) kb = t.get();
            if (p + "attn_v_b.weight(derived)" == t->name) vb = t.get();
            if (p + "attn_kv_b.weight" == t->name) kvb = t.get();
        }
        ASSERT_TRUE(kb && vb && kvb) << p;
        EXPECT_EQ(kb->type, derived_form(model, ikllm::quant::T_Q8_0, ikllm::quant::T_Q8_0_R8)) << p << "attn_k_b";
        EXPECT_EQ(vb->type, want_v_type) << p << "attn_v_b";
        const std::vector<float> k = ikllm::test::dequant_tensor_rows(*kb), v = ikllm::test::dequant_tensor_rows(*vb), kv = ikllm::test::dequant_tensor_rows(*kvb);
        std::vector<float> col((size_t)dn), want((size_t)dn);
        std::vector<uint8_t> enc(ikllm::quant::row_bytes(*ikllm::quant::find_type(ikllm::quant::T_Q8_0), dn));
        for (int64_t h = 0; h < H; ++h) {
            for (int64_t c = 0; c < rkv; ++c) {
                for (int64_t i = 0; i < dn; ++i) col[(size_t)i] = kv[(size_t)((h * (dn + dv) + i) * rkv + c)];
                ikllm::quant::act_q8_0_encode_row(col.data(), enc.data(), dn);
                ikllm::quant::find_type(ikllm::quant::T_Q8_0)->dequant(enc.data(), want.data(), dn);
                for (int64_t i = 0; i < dn; ++i)
                    ASSERT_EQ(k[(size_t)((h * rkv + c) * dn + i)], want[(size_t)i]) << p << "head " << h << " row " << c;
            }
            for (int64_t j = 0; j < dv; ++j)
                for (int64_t c = 0; c < rkv; ++c)
                    ASSERT_EQ(v[(size_t)((h * dv + j) * rkv + c)], kv[(size_t)((h * (dn + dv) + dn + j) * rkv + c)]);
        }
    }
}

TEST(MoeMlaSession, DerivedHeadProductsInterleavedOnTheCpu) {
    IKLLM_REQUIRE_REFDATA();
    M m("deepseek2-tiny-Q8_0", "/quant/");
    check_derived_heads(m.model, derived_form(m.model, ikllm::quant::T_Q8_0, ikllm::quant::T_Q8_0_R8));
}

// attn_kv_b in IQ4_K (deepseek2-tiny quantized here, pure): wv_b goes to the CPU's run-time layout
// of IQ4_K where it has one (AVX-512: IQ4_K_R8), else stays IQ4_K.
TEST(MoeMlaSession, DerivedValueProductTakesTheCpusLayout) {
    IKLLM_REQUIRE_REFDATA();
    ikllm_lib* lib = nullptr;
    ikllm_lib_create(0, &lib);
    const std::string in = ikllm::test::refdata_dir() + "/models/deepseek2-tiny-f16.gguf";
    const std::string out = (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "ikllm_mla_iq4k.gguf";
    ikllm_options* q = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_QUANTIZE, &q);
    ikllm_options_set_string(q, "type", "IQ4_K");
    ikllm_options_set_int(q, "pure", 1);
    ASSERT_EQ(ikllm_quantize(lib, in.c_str(), out.c_str(), q, nullptr, nullptr, nullptr, nullptr), IKLLM_OK) << ikllm_last_error();
    ikllm_options_free(q);
    ikllm_model* m = nullptr;
    ASSERT_EQ(ikllm_model_load(lib, out.c_str(), nullptr, nullptr, nullptr, nullptr, &m), IKLLM_OK) << ikllm_last_error();
    const uint32_t own = m->m->cpu->repack_helps(ikllm::quant::T_IQ4_K) ? m->m->cpu->repack_type(ikllm::quant::T_IQ4_K) : 0;
    check_derived_heads(m, ikllm::quant::is_runtime_layout(own) ? own : (uint32_t)ikllm::quant::T_IQ4_K);
    if (ikllm::cpu::best_isa() == ikllm::cpu::Isa::avx512) {
        EXPECT_EQ(own, (uint32_t)ikllm::quant::T_IQ4_K_R8);
    }
    ikllm_model_free(m);
    ikllm_lib_free(lib);
    std::remove(out.c_str());
}

}  // namespace
