// Float and 32-block types against the reference's own outputs (refdata):
//  * dequantization of every tensor listed in refs/*/deq/index.tsv whose type this layer owns:
//    first rows bit-exact, whole-tensor sum / sum of squares to float rounding;
//  * the no-imatrix quantizers (Q8_0, Q4_0, ...) reproduce the reference's bytes when re-quantizing
//    llama-q-f32's original weights, where the reference file was made without an imatrix.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/type_traits.h"
#include "test_support.h"

using namespace ikllm::quant;

namespace {

// Just enough GGUF (docs/gguf.md) to find tensors: header, skipped metadata, tensor infos.
struct MiniGguf {
    struct Tensor {
        uint32_t type = 0;
        int64_t ne[4] = {1, 1, 1, 1};
        uint64_t offset = 0;
    };
    std::vector<uint8_t> buf;
    std::map<std::string, Tensor> tensors;
    uint64_t data_start = 0;
    size_t pos = 0;
    bool ok = false;

    template <class T>
    T rd() {
        T v{};
        if (pos + sizeof(T) > buf.size()) throw std::runtime_error("truncated");
        std::memcpy(&v, buf.data() + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    std::string str() {
        const uint64_t n = rd<uint64_t>();
        if (pos + n > buf.size()) throw std::runtime_error("truncated");
        std::string s(reinterpret_cast<const char*>(buf.data() + pos), n);
        pos += n;
        return s;
    }
    void skip_value(uint32_t t, uint32_t* align, bool is_align) {
        static const int kSize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        if (t == 8) { str(); return; }
        if (t == 9) {
            const uint32_t et = rd<uint32_t>();
            const uint64_t n = rd<uint64_t>();
            for (uint64_t i = 0; i < n; ++i) skip_value(et, nullptr, false);
            return;
        }
        if (t > 12) throw std::runtime_error("bad kv type");
        if (is_align && t == 4) { *align = rd<uint32_t>(); return; }
        pos += kSize[t];
    }
    explicit MiniGguf(const std::string& path) {
        std::ifstream f(path, std::ios::binary);
        if (!f) return;
        buf.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        if (buf.size() < 24 || std::memcmp(buf.data(), "GGUF", 4) != 0) return;
        pos = 8;
        const uint64_t nt = rd<uint64_t>(), nkv = rd<uint64_t>();
        uint32_t align = 32;
        for (uint64_t i = 0; i < nkv; ++i) {
            const std::string key = str();
            skip_value(rd<uint32_t>(), &align, key == "general.alignment");
        }
        for (uint64_t i = 0; i < nt; ++i) {
            const std::string name = str();
            Tensor t;
            const uint32_t nd = rd<uint32_t>();
            for (uint32_t d = 0; d < nd; ++d) t.ne[d] = (int64_t)rd<uint64_t>();
            t.type = rd<uint32_t>();
            t.offset = rd<uint64_t>();
            tensors[name] = t;
        }
        data_start = (pos + align - 1) / align * align;
        ok = true;
    }
    const uint8_t* data(const Tensor& t) const { return buf.data() + data_start + t.offset; }
};

struct DeqEntry {
    std::string model, tensor;
    uint32_t type;
    int64_t ne0, ne1, rows_dumped;
    double sum_all, sumsq_all;
};

const std::set<uint32_t> kOwned = {T_F32, T_F16, T_BF16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q6_0,
                                   T_IQ4_NL, T_MXFP4, T_Q1_0_G128};

std::vector<DeqEntry> owned_entries(const std::string& refs) {
    std::vector<DeqEntry> out;
    for (const char* model :
         {"llama-q-f32", "llama-q-F16", "llama-q-BF16", "llama-q-BF16_R16", "llama-q-Q4_0", "llama-q-Q4_0_R8",
          "llama-q-Q4_1", "llama-q-Q5_0", "llama-q-Q5_1", "llama-q-Q6_0", "llama-q-Q8_0", "llama-q-Q8_0_R8",
          "llama-q-Q8_K_R8", "llama-q-IQ4_NL", "llama-q-MXFP4"}) {
        const std::string idx = refs + "/" + model + "/deq/index.tsv";
        if (!ikllm::test::file_exists(idx)) continue;
        std::istringstream in(ikllm::test::read_text_file(idx));
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream ls(line);
            DeqEntry e;
            std::string type_name;
            ls >> e.tensor >> e.type >> type_name >> e.ne0 >> e.ne1 >> e.rows_dumped >> e.sum_all >> e.sumsq_all;
            e.model = model;
            if (kOwned.count(e.type)) out.push_back(e);
        }
    }
    return out;
}

std::string model_path(const std::string& refdata, const std::string& model) {
    for (const char* dir : {"/quant/", "/models/"}) {
        const std::string p = refdata + dir + model + ".gguf";
        if (ikllm::test::file_exists(p)) return p;
    }
    return "";
}

std::vector<float> dequant_tensor(const MiniGguf& g, const MiniGguf::Tensor& t) {
    const TypeTraits* tt = find_type(t.type);
    const int64_t ne0 = t.ne[0], nrows = t.ne[1] * t.ne[2] * t.ne[3];
    std::vector<float> out((size_t)(ne0 * nrows));
    const size_t rb = row_bytes(*tt, ne0);
    for (int64_t r = 0; r < nrows; r += tt->interleave)
        tt->dequant(g.data(t) + r * rb, out.data() + r * ne0, ne0);
    return out;
}

}  // namespace

TEST(QuantCoreRefdata, DequantMatchesReference) {
    IKLLM_REQUIRE_REFDATA();
    const std::string refdata = ikllm::test::refdata_dir();
    const std::vector<DeqEntry> entries = owned_entries(refdata + "/refs");
    ASSERT_GE(entries.size(), 10u) << "expected the llama-q-* dumps of the float and 32-block types";
    std::set<uint32_t> seen;
    for (const DeqEntry& e : entries) {
        SCOPED_TRACE(e.model + " " + e.tensor);
        const MiniGguf g(model_path(refdata, e.model));
        ASSERT_TRUE(g.ok);
        auto it = g.tensors.find(e.tensor);
        ASSERT_NE(it, g.tensors.end());
        ASSERT_EQ(it->second.type, e.type);
        ASSERT_EQ(it->second.ne[0], e.ne0);
        const std::vector<float> ours = dequant_tensor(g, it->second);
        const std::vector<float> ref = ikllm::test::read_f32_file(refdata + "/refs/" + e.model + "/deq/" + e.tensor + ".f32");
        ASSERT_EQ((int64_t)ref.size(), e.rows_dumped * e.ne0);
        size_t mismatches = 0;
        for (size_t i = 0; i < ref.size(); ++i)
            if (ikllm::f32_to_bits(ours[i]) != ikllm::f32_to_bits(ref[i]) && mismatches++ < 5)
                ADD_FAILURE() << "element " << i << ": ours " << ours[i] << " ref " << ref[i];
        EXPECT_EQ(mismatches, 0u);
        double sum = 0, sumsq = 0, sabs = 0;
        for (float v : ours) {
            sum += v;
            sumsq += (double)v * v;
            sabs += std::fabs(v);
        }
        // the reference prints 9 significant digits; its own accumulation is float-rounded
        EXPECT_NEAR(sum, e.sum_all, 1e-6 * sabs + 1e-6 * std::fabs(e.sum_all));
        EXPECT_NEAR(sumsq, e.sumsq_all, 1e-6 * sumsq);
        seen.insert(e.type);
    }
    for (uint32_t id : {T_F16, T_BF16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q6_0, T_IQ4_NL, T_MXFP4})
        EXPECT_TRUE(seen.count(id)) << "no reference dump checked for " << find_type(id)->name;
}

namespace {

// Re-quantize llama-q-f32's weights with `type` (no imatrix) and compare with the reference file's
// tensors of that type. Returns {tensors compared, tensors identical}.
std::pair<int, int> requantize_compare(const std::string& refdata, const std::string& model, uint32_t type,
                                       std::vector<std::string>* differing) {
    const MiniGguf src(refdata + "/models/llama-q-f32.gguf");
    const MiniGguf q(model_path(refdata, model));
    if (!src.ok || !q.ok) return {0, 0};
    const TypeTraits* tt = find_type(type);
    int compared = 0, identical = 0;
    for (const auto& [name, t] : q.tensors) {
        if (t.type != type) continue;
        auto it = src.tensors.find(name);
        if (it == src.tensors.end() || it->second.type != T_F32) continue;
        const int64_t ne0 = t.ne[0], nrows = t.ne[1] * t.ne[2] * t.ne[3];
        const size_t rb = row_bytes(*tt, ne0);
        std::vector<uint8_t> ours(rb * (size_t)nrows);
        const float* x = reinterpret_cast<const float*>(src.data(it->second));
        for (int64_t r = 0; r < nrows; ++r) tt->quantize(x + r * ne0, ours.data() + r * rb, ne0, nullptr);
        ++compared;
        if (std::memcmp(ours.data(), q.data(t), ours.size()) == 0) ++identical;
        else if (differing) differing->push_back(name);
    }
    return {compared, identical};
}

}  // namespace

// These reference files hold the plain ("ref") rounding of the uniform types: every tensor of
// the type must come out byte-identical.
TEST(QuantCoreRefdata, UniformQuantizersAreBitExact) {
    IKLLM_REQUIRE_REFDATA();
    struct Case { const char* model; uint32_t type; };
    for (const Case& c : {Case{"llama-q-Q8_0", T_Q8_0}, Case{"llama-q-Q4_0", T_Q4_0}, Case{"llama-q-Q4_1", T_Q4_1},
                          Case{"llama-q-Q5_0", T_Q5_0}, Case{"llama-q-Q5_1", T_Q5_1}}) {
        SCOPED_TRACE(c.model);
        std::vector<std::string> diff;
        const auto [n, same] = requantize_compare(ikllm::test::refdata_dir(), c.model, c.type, &diff);
        ASSERT_GE(n, 7);
        EXPECT_EQ(same, n) << "first differing tensor: " << (diff.empty() ? "" : diff[0]);
    }
}

// token_embd.weight is quantized without importance data (imatrix files hold no entry for it), so
// the reference's plain rounding rules apply to it in every file of these types.
TEST(QuantCoreRefdata, NoImatrixQuantizersMatchOnTokenEmbd) {
    IKLLM_REQUIRE_REFDATA();
    const std::string refdata = ikllm::test::refdata_dir();
    struct Case { const char* model; uint32_t type; };
    for (const Case& c : {Case{"llama-q-Q4_0_R8", T_Q4_0}, Case{"llama-q-Q8_0_R8", T_Q8_0}, Case{"llama-q-Q8_K_R8", T_Q8_0}}) {
        SCOPED_TRACE(c.model);
        const MiniGguf q(model_path(refdata, c.model));
        ASSERT_TRUE(q.ok);
        auto it = q.tensors.find("token_embd.weight");
        ASSERT_NE(it, q.tensors.end());
        ASSERT_EQ(it->second.type, c.type);
        std::vector<std::string> diff;
        const auto [n, same] = requantize_compare(refdata, c.model, c.type, &diff);
        ASSERT_GE(n, 1);
        EXPECT_TRUE(std::find(diff.begin(), diff.end(), "token_embd.weight") == diff.end());
    }
}
namespace {
// Relative RMS error of a quantized tensor (decoded) against the original float weights.
double rel_rms(const std::vector<float>& x, const std::vector<float>& y) {
    double e = 0, n = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        n += (double)x[i] * x[i];
    }
    return std::sqrt(e / n);
}
}  // namespace

// Types whose reference quantizer searches (Q6_0, IQ4_NL, MXFP4): our codes differ, but the error
// against the original weights must be about as small as the reference file's.
TEST(QuantCoreRefdata, SearchQuantizersAsGoodAsReference) {
    IKLLM_REQUIRE_REFDATA();
    const std::string refdata = ikllm::test::refdata_dir();
    const MiniGguf src(refdata + "/models/llama-q-f32.gguf");
    ASSERT_TRUE(src.ok);
    struct Case { const char* model; uint32_t type; double max_ratio; };
    for (const Case& c : {Case{"llama-q-Q6_0", T_Q6_0, 1.02}, Case{"llama-q-IQ4_NL", T_IQ4_NL, 1.05},
                          Case{"llama-q-MXFP4", T_MXFP4, 1.02}}) {
        const MiniGguf q(model_path(refdata, c.model));
        ASSERT_TRUE(q.ok);
        const TypeTraits* tt = find_type(c.type);
        int n = 0;
        for (const auto& [name, t] : q.tensors) {
            if (t.type != c.type) continue;
            SCOPED_TRACE(std::string(c.model) + " " + name);
            const MiniGguf::Tensor& s = src.tensors.at(name);
            const int64_t ne0 = t.ne[0], nrows = t.ne[1] * t.ne[2] * t.ne[3];
            const float* x = reinterpret_cast<const float*>(src.data(s));
            const std::vector<float> xv(x, x + ne0 * nrows);
            const size_t rb = row_bytes(*tt, ne0);
            std::vector<uint8_t> ours(rb * (size_t)nrows);
            std::vector<float> yours((size_t)(ne0 * nrows));
            for (int64_t r = 0; r < nrows; ++r) {
                tt->quantize(x + r * ne0, ours.data() + r * rb, ne0, nullptr);
                tt->dequant(ours.data() + r * rb, yours.data() + r * ne0, ne0);
            }
            const double e_ours = rel_rms(xv, yours), e_ref = rel_rms(xv, dequant_tensor(q, t));
            printf("  %-14s %-26s ours %.5f  reference %.5f\n", c.model, name.c_str(), e_ours, e_ref);
            EXPECT_LE(e_ours, c.max_ratio * e_ref);
            ++n;
        }
        EXPECT_GE(n, 7);
    }
}
