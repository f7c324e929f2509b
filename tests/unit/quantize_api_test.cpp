// ikllm_quantize and the importance-matrix calls through the C API, end to end on the
// reference's llama-q-f32 model: outputs load and run, Q8_0 equals the reference quantizer's
// bytes, dry runs and cancels leave no file, bad input gets clean errors, run-time repacking
// gives the plain layout's logits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "ikllm.h"
#include "core/log.h"
#include "model/model.h"
#include "quant/type_traits.h"
#include "test_support.h"

namespace {

std::string base_model() { return ikllm::test::refdata_dir() + "/models/llama-q-f32.gguf"; }
std::string tmp_path(const std::string& name) {
    return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "ikllm_qt_" +
           std::to_string(::getpid()) + "_" + name;
}
bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }
// Anything left next to `p` by an interrupted write (p + ".tmp.*")?
bool temp_left(const std::string& p) { return exists(p + ".tmp." + std::to_string(::getpid())); }

struct Lib {
    ikllm_lib* lib = nullptr;
    Lib() { ikllm_lib_create(0, &lib); }
    ~Lib() { ikllm_lib_free(lib); }
};

ikllm_options* qopts(const char* type, bool pure = true) {
    ikllm_options* o = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_QUANTIZE, &o);
    ikllm_options_set_string(o, "type", type);
    ikllm_options_set_int(o, "pure", pure ? 1 : 0);
    ikllm_options_set_int(o, "n_threads", 2);
    return o;
}

struct Record {
    int calls = 0;
    int cancel_after = -1;
    std::string notes;
};
int32_t record(void* u, const char* name, int32_t, int32_t, uint64_t, uint64_t, const char* note, float) {
    auto* r = static_cast<Record*>(u);
    ++r->calls;
    r->notes += note;
    return r->cancel_after >= 0 && r->calls > r->cancel_after;
}

std::vector<float> last_logits(ikllm_model* m, const std::vector<int32_t>& toks) {
    ikllm_options* so = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &so);
    ikllm_options_set_int(so, "n_ctx", 64);
    ikllm_options_set_int(so, "n_threads", 2);
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(m, so, &s), IKLLM_OK);
    ikllm_options_free(so);
    EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK);
    const float* p = nullptr;
    int32_t n = 0;
    EXPECT_EQ(ikllm_session_logits(s, -1, &p, &n), IKLLM_OK);
    std::vector<float> v(p, p + n);
    ikllm_session_free(s);
    return v;
}

TEST(QuantizeApi, Q8_0MatchesReferenceQuantizerBytes) {
    IKLLM_REQUIRE_REFDATA();
    Lib L;
    const std::string out = tmp_path("q8.gguf");
    ikllm_options* o = qopts("Q8_0");
    uint64_t before = 0, after = 0;
    ASSERT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, nullptr, nullptr, &before, &after), IKLLM_OK)
        << ikllm_last_error();
    ikllm_options_free(o);
    EXPECT_GT(before, 3 * after);
    auto mine = ikllm::gguf::File::open(out, &ikllm::type_geometry);
    auto ref = ikllm::gguf::File::open(ikllm::test::refdata_dir() + "/quant/llama-q-Q8_0.gguf", &ikllm::type_geometry);
    int compared = 0;
    for (const auto& t : ref->tensors()) {
        const auto* m = mine->find_tensor(t.name);
        ASSERT_NE(m, nullptr) << t.name;
        ASSERT_EQ(m->type, t.type) << t.name;
        ASSERT_EQ(m->nbytes, t.nbytes) << t.name;
        EXPECT_EQ(std::memcmp(m->data, t.data, t.nbytes), 0) << t.name << " differs from the reference quantizer";
        ++compared;
    }
    EXPECT_EQ(compared, 12);
    EXPECT_EQ(mine->get_u32("general.file_type"), 7u);
    std::remove(out.c_str());
}

TEST(QuantizeApi, DryRunCancelAndErrorsLeaveNoFile) {
    IKLLM_REQUIRE_REFDATA();
    Lib L;
    const std::string out = tmp_path("none.gguf");
    Record r;
    ikllm_options* o = qopts("IQ4_K", false);
    ikllm_options_set_int(o, "dry_run", 1);
    EXPECT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, record, &r, nullptr, nullptr), IKLLM_OK);
    EXPECT_EQ(r.calls, 12);
    EXPECT_FALSE(exists(out));
    ikllm_options_set_int(o, "dry_run", 0);

    Record c;
    c.cancel_after = 3;
    EXPECT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, record, &c, nullptr, nullptr),
              IKLLM_CANCELLED);
    EXPECT_FALSE(exists(out));
    EXPECT_FALSE(temp_left(out));

    ikllm_options_set_string(o, "rules", "attn_q=q8_0\nnothing_matches_this=q8_0\n");
    EXPECT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, nullptr, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(ikllm_last_error(), "nothing_matches_this"), nullptr) << ikllm_last_error();
    ikllm_options_set_string(o, "rules", "");
    ikllm_options_set_string(o, "type", "Q9_K");
    EXPECT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, nullptr, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    ikllm_options_set_string(o, "type", "IQ2_XXS");  // needs an importance matrix
    EXPECT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, nullptr, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(ikllm_last_error(), "importance"), nullptr) << ikllm_last_error();
    EXPECT_EQ(ikllm_quantize(L.lib, "/nonexistent/model.gguf", out.c_str(), o, nullptr, nullptr, nullptr, nullptr),
              IKLLM_ERR_IO);
    EXPECT_FALSE(exists(out));
    ikllm_options_free(o);
}

TEST(QuantizeApi, RequantizingNeedsConsent) {
    IKLLM_REQUIRE_REFDATA();
    Lib L;
    const std::string out = tmp_path("requant.gguf");
    const std::string q8 = ikllm::test::refdata_dir() + "/quant/llama-q-Q8_0.gguf";
    ikllm_options* o = qopts("Q4_0");
    EXPECT_EQ(ikllm_quantize(L.lib, q8.c_str(), out.c_str(), o, nullptr, nullptr, nullptr, nullptr),
              IKLLM_ERR_INVALID_ARGUMENT);
    EXPECT_FALSE(exists(out));
    ikllm_options_set_int(o, "allow_requantize", 1);
    Record r;
    EXPECT_EQ(ikllm_quantize(L.lib, q8.c_str(), out.c_str(), o, record, &r, nullptr, nullptr), IKLLM_OK);
    EXPECT_NE(r.notes.find("re-quantizing"), std::string::npos);
    ikllm_options_free(o);
    std::remove(out.c_str());
}

TEST(QuantizeApi, ImatrixFeedsLowBitTypesAndRepackKeepsLogits) {
    IKLLM_REQUIRE_REFDATA();
    Lib L;
    ikllm_model* m = nullptr;
    ASSERT_EQ(ikllm_model_load(L.lib, base_model().c_str(), nullptr, nullptr, nullptr, nullptr, &m), IKLLM_OK);
    ikllm_options* so = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &so);
    ikllm_options_set_int(so, "n_ctx", 128);
    ikllm_session* s = nullptr;
    ASSERT_EQ(ikllm_session_create(m, so, &s), IKLLM_OK);
    ikllm_options_free(so);
    const std::string im = tmp_path("imatrix.dat");
    EXPECT_EQ(ikllm_session_imatrix_save(s, im.c_str(), 1, nullptr), IKLLM_ERR_INVALID_ARGUMENT);  // not started
    ASSERT_EQ(ikllm_session_imatrix_start(s), IKLLM_OK);
    std::vector<int32_t> toks;
    for (int i = 0; i < 100; ++i) toks.push_back(1 + (i * 37) % 1999);
    ASSERT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK);
    ASSERT_EQ(ikllm_session_imatrix_save(s, im.c_str(), 1, "test"), IKLLM_OK) << ikllm_last_error();
    EXPECT_EQ(ikllm_session_imatrix_stop(s), IKLLM_OK);
    ikllm_session_free(s);

    const std::string out = tmp_path("iq2xxs.gguf");
    ikllm_options* o = qopts("IQ2_XXS", false);
    ikllm_options_set_string(o, "imatrix", im.c_str());
    ASSERT_EQ(ikllm_quantize(L.lib, base_model().c_str(), out.c_str(), o, nullptr, nullptr, nullptr, nullptr), IKLLM_OK)
        << ikllm_last_error();
    ikllm_options_free(o);
    ikllm_model* q = nullptr;
    ASSERT_EQ(ikllm_model_load(L.lib, out.c_str(), nullptr, nullptr, nullptr, nullptr, &q), IKLLM_OK);
    // Same mix as the reference's llama-q-IQ2_XXS file (made with its own importance matrix):
    // our file must be about as close to the f32 model as that one.
    ikllm_model* r = nullptr;
    ASSERT_EQ(ikllm_model_load(L.lib, (ikllm::test::refdata_dir() + "/quant/llama-q-IQ2_XXS.gguf").c_str(), nullptr,
                               nullptr, nullptr, nullptr, &r), IKLLM_OK);
    auto dist = [](const std::vector<float>& a, const std::vector<float>& b) {
        double num = 0, den = 0;
        for (size_t i = 0; i < b.size(); ++i) {
            num += (a[i] - b[i]) * (a[i] - b[i]);
            den += b[i] * b[i];
        }
        return std::sqrt(num / den);
    };
    double ours = 0, theirs = 0;
    for (int start : {0, 20, 40, 60}) {
        const std::vector<int32_t> part(toks.begin() + start, toks.begin() + start + 20);
        const std::vector<float> lf = last_logits(m, part);
        const std::vector<float> lq = last_logits(q, part);
        for (float v : lq) ASSERT_TRUE(std::isfinite(v));
        ours += dist(lq, lf);
        theirs += dist(last_logits(r, part), lf);
    }
    std::printf("IQ2_XXS logits distance to f32: ours %.4f, reference quantizer %.4f\n", ours / 4, theirs / 4);
    EXPECT_LT(ours, 1.25 * theirs) << "ours " << ours / 4 << " vs reference quantizer " << theirs / 4;
    ikllm_model_free(r);
    ikllm_model_free(q);

    // Run-time repack: a Q8_0 file loaded plain and repacked (Q8_0_R8) gives the same logits
    // (both multiply against Q8_2_X4 activations).
    const std::string x = tmp_path("q8.gguf");
    o = qopts("Q8_0");
    ASSERT_EQ(ikllm_quantize(L.lib, base_model().c_str(), x.c_str(), o, nullptr, nullptr, nullptr, nullptr), IKLLM_OK);
    ikllm_options_free(o);
    ikllm_options* mo = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo);
    ikllm_options_set_int(mo, "repack", 2);  // forced: on AVX-512 repack 1 keeps Q8_0 as stored
    ikllm_model *plain = nullptr, *packed = nullptr;
    ASSERT_EQ(ikllm_model_load(L.lib, x.c_str(), nullptr, nullptr, nullptr, nullptr, &plain), IKLLM_OK);
    ASSERT_EQ(ikllm_model_load(L.lib, x.c_str(), mo, nullptr, nullptr, nullptr, &packed), IKLLM_OK);
    ikllm_options_free(mo);
    const std::vector<int32_t> t20(toks.begin(), toks.begin() + 20);
    const std::vector<float> a = last_logits(plain, t20), b = last_logits(packed, t20);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1 + std::fabs(a[i]))) << i;
    ikllm_model_free(plain);
    ikllm_model_free(packed);
    ikllm_model_free(m);
    std::remove(out.c_str());
    std::remove(x.c_str());
    std::remove(im.c_str());
}

// repack 2 converts every matmul weight with an interleaved form (not the embedding table).
TEST(QuantizeApi, RepackConvertsMatmulWeightsOnly) {
    IKLLM_REQUIRE_REFDATA();
    ikllm::Logger log;
    ikllm::ModelOptions mo;
    mo.repack = 2;
    auto m = ikllm::load_model(ikllm::test::refdata_dir() + "/quant/llama-q-Q4_0.gguf", mo, nullptr, log);
    EXPECT_EQ(m->tok_embd->type, ikllm::quant::T_Q4_0);
    EXPECT_EQ(m->layers[0].wq->type, ikllm::quant::T_Q4_0_R8);
    EXPECT_EQ(m->layers[0].ffn_down->type, ikllm::quant::T_Q4_0_R8);
    EXPECT_EQ(m->output->type, m->cpu->repack_type(ikllm::quant::T_Q6_K));  // Q6_K_R4, or ikllm's Q6_K_R8 (AVX-512)
    EXPECT_NE(m->output->type, ikllm::quant::T_Q6_K);
}

// A read copy of the file is repacked where it lies (the interleaved rows take the same room);
// from a mapping the interleaved rows go to new buffers. Both give the same types and bytes for
// every weight, and the plain tensors (the embedding table) are left as they were.
TEST(QuantizeApi, RepackInPlaceMatchesRepackedCopy) {
    IKLLM_REQUIRE_REFDATA();
    ikllm::Logger log;
    const std::string path = ikllm::test::refdata_dir() + "/quant/llama-q-Q4_0.gguf";
    ikllm::ModelOptions in_place, copied, plain;
    in_place.repack = copied.repack = 2;
    in_place.use_mmap = 0;
    copied.use_mmap = 1;
    plain.use_mmap = 0;
    plain.repack = 0;
    auto a = ikllm::load_model(path, in_place, nullptr, log);
    auto b = ikllm::load_model(path, copied, nullptr, log);
    auto c = ikllm::load_model(path, plain, nullptr, log);
    ASSERT_EQ(a->weights.size(), b->weights.size());
    ASSERT_EQ(a->weights.size(), c->weights.size());
    EXPECT_EQ(a->layers[0].wq->type, ikllm::quant::T_Q4_0_R8);
    int repacked = 0;
    for (size_t i = 0; i < a->weights.size(); ++i) {
        const ikllm::Tensor &x = *a->weights[i], &y = *b->weights[i], &z = *c->weights[i];
        ASSERT_STREQ(x.name, y.name);
        ASSERT_EQ(x.type, y.type) << x.name;
        ASSERT_EQ(x.nb[1], y.nb[1]) << x.name;
        const size_t n = x.nb[1] * (size_t)x.n_rows();
        EXPECT_EQ(std::memcmp(x.data, y.data, n), 0) << x.name;
        if (x.type == z.type) EXPECT_EQ(std::memcmp(x.data, z.data, n), 0) << x.name << " changed";
        else ++repacked;
    }
    EXPECT_GT(repacked, 0);
}

// repack 1 converts only the types the CPU backend multiplies faster interleaved (on AVX-512 the
// plain kernels win for most types, on AVX2 the interleaved ones); a read copy is converted in
// place, so the file is read into memory as without repacking.
TEST(QuantizeApi, RepackOneFollowsTheBackend) {
    IKLLM_REQUIRE_REFDATA();
    ikllm::Logger log;
    ikllm::ModelOptions mo;
    mo.repack = 1;
    auto m = ikllm::load_model(ikllm::test::refdata_dir() + "/quant/llama-q-Q4_0.gguf", mo, nullptr, log);
    const bool helps = m->cpu->repack_helps(ikllm::quant::T_Q4_0);
    EXPECT_EQ(m->layers[0].wq->type, helps ? ikllm::quant::T_Q4_0_R8 : ikllm::quant::T_Q4_0);
    EXPECT_EQ(m->output->type,
              m->cpu->repack_helps(ikllm::quant::T_Q6_K) ? m->cpu->repack_type(ikllm::quant::T_Q6_K) : ikllm::quant::T_Q6_K);
    EXPECT_EQ(m->placement.rfind("weights in memory (use_mmap auto", 0), 0u) << m->placement;
}

// The default (repack -1, auto) converts what repack 1 converts, but only in a read copy of the
// file, in place: a mapped model keeps the file's types; repack 0 converts nothing.
TEST(QuantizeApi, RepackAutoConvertsReadCopiesInPlace) {
    IKLLM_REQUIRE_REFDATA();
    ikllm::Logger log;
    const std::string path = ikllm::test::refdata_dir() + "/quant/llama-q-Q4_K_M.gguf";
    ikllm::ModelOptions automatic, one, mapped, never;
    EXPECT_EQ(automatic.repack, -1);
    one.repack = 1;
    mapped.use_mmap = 1;
    never.repack = 0;
    auto a = ikllm::load_model(path, automatic, nullptr, log);
    auto b = ikllm::load_model(path, one, nullptr, log);
    auto c = ikllm::load_model(path, mapped, nullptr, log);
    auto d = ikllm::load_model(path, never, nullptr, log);
    EXPECT_EQ(a->placement.rfind("weights in memory (use_mmap auto", 0), 0u) << a->placement;
    EXPECT_EQ(c->placement.rfind("weights mmapped", 0), 0u) << c->placement;
    int converted = 0;
    for (size_t i = 0; i < a->weights.size(); ++i) {
        const ikllm::Tensor &x = *a->weights[i], &y = *b->weights[i], &z = *c->weights[i], &w = *d->weights[i];
        ASSERT_STREQ(x.name, y.name);
        EXPECT_EQ(z.type, w.type) << x.name;  // the mapping and repack 0: the file's types
        // automatic converts what repack 1 converts where that helps this CPU and keeps the
        // results (on CPUs without AVX-512 Q4_K stays), into the same bytes; the rest keeps the
        // file's bytes
        const bool conv = y.type != w.type && a->cpu->repack_helps(w.type) && !a->cpu->repack_changes_results(w.type);
        EXPECT_EQ(x.type, conv ? y.type : w.type) << x.name;
        const ikllm::Tensor& same = conv ? y : w;
        if (x.type == same.type) {
            EXPECT_EQ(std::memcmp(x.data, same.data, x.nb[1] * (size_t)x.n_rows()), 0) << x.name;
        }
        converted += x.type != w.type;
    }
    EXPECT_EQ(converted > 0, a->cpu->repack_helps(ikllm::quant::T_Q4_K) && !a->cpu->repack_changes_results(ikllm::quant::T_Q4_K));
    // The placement line says so (ikllm info / bench header).
    EXPECT_EQ(a->placement.find("; run-time repack: ") != std::string::npos, converted > 0) << a->placement;
    EXPECT_EQ(a->placement.find(" tensors (auto)") != std::string::npos, converted > 0) << a->placement;
    EXPECT_EQ(c->placement.find("run-time repack"), std::string::npos) << c->placement;
}

}  // namespace

#include "quantize/imatrix_file.h"

namespace {

ikllm::quantize::Imatrix collect(const std::string& model_path, const std::string& out) {
    Lib L;
    ikllm_model* m = nullptr;
    EXPECT_EQ(ikllm_model_load(L.lib, model_path.c_str(), nullptr, nullptr, nullptr, nullptr, &m), IKLLM_OK);
    ikllm_session* s = nullptr;
    EXPECT_EQ(ikllm_session_create(m, nullptr, &s), IKLLM_OK);
    EXPECT_EQ(ikllm_session_imatrix_start(s), IKLLM_OK);
    std::vector<int32_t> toks;
    for (int i = 0; i < 64; ++i) toks.push_back(1 + (i * 53) % 1999);
    EXPECT_EQ(ikllm_session_decode(s, toks.data(), nullptr, nullptr, nullptr, (int32_t)toks.size(), 0), IKLLM_OK);
    EXPECT_EQ(ikllm_session_imatrix_save(s, out.c_str(), 1, "t"), IKLLM_OK) << ikllm_last_error();
    ikllm_session_free(s);
    ikllm_model_free(m);
    auto im = ikllm::quantize::load_imatrix(out);
    std::remove(out.c_str());
    return im;
}

TEST(QuantizeApi, ImatrixCoversFusedAndExpertProducts) {
    IKLLM_REQUIRE_REFDATA();
    // Dense: the fused gate/up op and q/k/v see the same inputs, so their statistics are equal.
    auto im = collect(ikllm::test::refdata_dir() + "/models/llama-tiny-f16.gguf", tmp_path("im1.dat"));
    for (const char* n : {"blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
                          "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_output.weight", "output.weight"})
        ASSERT_TRUE(im.entries.count(n)) << n;
    EXPECT_EQ(im.entries["blk.0.ffn_gate.weight"].mean_sq, im.entries["blk.0.ffn_up.weight"].mean_sq);
    EXPECT_EQ(im.entries["blk.0.attn_q.weight"].mean_sq, im.entries["blk.0.attn_k.weight"].mean_sq);
    // MoE (8 experts, 2 used): one segment of n_embd (gate/up) or n_ff_exp (down) per expert.
    auto moe = collect(ikllm::test::refdata_dir() + "/models/qwen3moe-tiny-f16.gguf", tmp_path("im2.dat"));
    for (const char* n : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight"}) {
        ASSERT_TRUE(moe.entries.count(n)) << n;
        const auto& v = moe.entries[n].mean_sq;
        ASSERT_EQ(v.size() % 8, 0u);
        const size_t seg = v.size() / 8;
        int used = 0;
        for (size_t e = 0; e < 8; ++e) {
            double s = 0;
            for (size_t j = 0; j < seg; ++j) {
                ASSERT_TRUE(std::isfinite(v[e * seg + j]) && v[e * seg + j] >= 0);
                s += v[e * seg + j];
            }
            used += s > 0;
        }
        EXPECT_GE(used, 2) << n;
    }
    EXPECT_EQ(moe.entries["blk.0.ffn_gate_exps.weight"].mean_sq, moe.entries["blk.0.ffn_up_exps.weight"].mean_sq);
}

}  // namespace
