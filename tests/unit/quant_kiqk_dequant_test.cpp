// Dequantization of the K-quant and ik K/KS types against the reference's own dumps
// (refdata/refs/*/deq): the dumped rows must match bit for bit, whole-tensor sums to float rounding.
#include <gtest/gtest.h>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include "quant/families.h"
#include "quant/kquant_iqk.h"
#include "quant_kiqk_testutil.h"
#include "test_support.h"

using namespace ikllm;
using namespace ikllm::quant;

namespace {

struct Geo {
    int bytes;
    int meta;
};
// quant-formats.md §2: bytes per 256 weights and per-row metadata.
const std::map<uint32_t, Geo>& geometry() {
    static const std::map<uint32_t, Geo> g = {
        {10, {84, 0}},  {11, {110, 0}}, {12, {144, 0}}, {13, {176, 0}}, {14, {210, 0}}, {15, {296, 0}},
        {23, {136, 0}}, {137, {76, 0}}, {138, {110, 0}}, {139, {144, 0}}, {140, {176, 0}}, {141, {212, 0}},
        {145, {70, 2}}, {156, {102, 2}}, {144, {136, 4}}, {146, {128, 4}}, {152, {168, 4}}, {157, {86, 2}},
    };
    return g;
}

DequantGroupFn find_dequant(uint32_t id) {
    for (FamilyTable t : {kquant_family(), iqk_family()})
        for (size_t i = 0; i < t.count; ++i)
            if (t.entries[i].id == id) return t.entries[i].dequant;
    return nullptr;
}

TEST(QuantKiqkDequant, FamiliesPublishEveryType) {
    for (const auto& [id, g] : geometry()) {
        EXPECT_NE(find_dequant(id), nullptr) << "type " << id;
    }
}

TEST(QuantKiqkDequant, MatchesReferenceDumps) {
    IKLLM_REQUIRE_REFDATA();
    namespace fs = std::filesystem;
    const std::string root = test::refdata_dir();
    std::set<uint32_t> seen;
    int checked = 0;
    for (const auto& dir : fs::directory_iterator(root + "/refs")) {
        const std::string name = dir.path().filename().string();
        const std::string index = dir.path().string() + "/deq/index.tsv";
        if (!test::file_exists(index)) continue;
        std::string gguf_path = root + "/quant/" + name + ".gguf";
        if (!test::file_exists(gguf_path)) gguf_path = root + "/models/" + name + ".gguf";
        if (!test::file_exists(gguf_path)) continue;
        std::istringstream lines(test::read_text_file(index));
        std::string line;
        std::unique_ptr<test::kiqk::Gguf> file;
        while (std::getline(lines, line)) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream ls(line);
            std::string tensor, tname;
            uint32_t type;
            int64_t ne0, ne1, rows_dumped;
            double sum_all, sumsq_all;
            ls >> tensor >> type >> tname >> ne0 >> ne1 >> rows_dumped >> sum_all >> sumsq_all;
            auto git = geometry().find(type);
            if (git == geometry().end()) continue;
            if (!file) file = std::make_unique<test::kiqk::Gguf>(test::kiqk::read_gguf(gguf_path));
            auto it = file->tensors.find(tensor);
            ASSERT_NE(it, file->tensors.end()) << name << " " << tensor;
            const auto& t = it->second;
            ASSERT_EQ(t.type, type);
            const size_t row_bytes = git->second.meta + git->second.bytes * (t.ne[0] / 256);
            const int64_t nrows = t.ne[1] * t.ne[2] * t.ne[3];
            DequantGroupFn fn = find_dequant(type);
            ASSERT_NE(fn, nullptr);
            const std::vector<float> ref = test::read_f32_file(dir.path().string() + "/deq/" + tensor + ".f32");
            ASSERT_EQ((int64_t)ref.size(), rows_dumped * ne0);
            std::vector<float> row(ne0);
            double sum = 0, sumsq = 0;
            int64_t mismatches = 0;
            for (int64_t r = 0; r < nrows; ++r) {
                fn(file->data(t) + r * row_bytes, row.data(), ne0);
                for (int64_t j = 0; j < ne0; ++j) {
                    sum += row[j];
                    sumsq += (double)row[j] * row[j];
                    if (r < rows_dumped) {
                        uint32_t a, b;
                        std::memcpy(&a, &row[j], 4);
                        std::memcpy(&b, &ref[r * ne0 + j], 4);
                        if (a != b && mismatches++ < 5)
                            ADD_FAILURE() << name << " " << tensor << " (" << tname << ") row " << r << " col " << j
                                          << ": " << row[j] << " vs ref " << ref[r * ne0 + j];
                    }
                }
            }
            EXPECT_EQ(mismatches, 0) << name << " " << tensor << " " << tname;
            EXPECT_NEAR(sum, sum_all, 1e-5 * std::max(1.0, std::fabs(sumsq_all))) << name << " " << tensor;
            EXPECT_NEAR(sumsq, sumsq_all, 1e-6 * sumsq_all) << name << " " << tensor;
            seen.insert(type);
            ++checked;
        }
    }
    // Every type owned here that has a reference dump must have been compared.
    for (uint32_t id : {10u, 11u, 12u, 13u, 14u, 23u, 137u, 138u, 139u, 140u, 141u, 145u, 156u, 144u, 146u, 152u, 157u})
        EXPECT_TRUE(seen.count(id)) << "no reference dump compared for type " << id;
    EXPECT_GT(checked, 0);
}

}  // namespace
