// Type registry vs the summary table of the spec (quant-formats.md §2), parsed from the shared
// docs: every listed id must be known with the same name and geometry.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "quant/type_traits.h"
#include "test_support.h"

using namespace ikllm::quant;

namespace {

struct SpecRow {
    uint32_t id;
    std::string name;
    int blck, bytes, meta, rows;
    bool act;
};

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Rows of the §2 table with a single numeric id and real geometry.
std::vector<SpecRow> parse_spec_table(const std::string& md) {
    std::vector<SpecRow> rows;
    std::istringstream in(md);
    std::string line;
    bool in_table = false;
    while (std::getline(in, line)) {
        if (line.rfind("| id | name (type_name)", 0) == 0) { in_table = true; continue; }
        if (!in_table) continue;
        if (line.empty() || line[0] != '|') break;
        std::vector<std::string> cols;
        std::string cell;
        std::istringstream ls(line.substr(1));
        while (std::getline(ls, cell, '|')) cols.push_back(trim(cell));
        if (cols.size() < 8 || cols[0].find_first_not_of("0123456789") != std::string::npos || cols[2] == "–") continue;
        SpecRow r;
        r.id = (uint32_t)std::stoul(cols[0]);
        r.name = cols[1];
        r.blck = std::stoi(cols[2]);
        r.bytes = std::stoi(cols[3]);  // "1 (special)" -> 1
        r.meta = cols[6].empty() ? 0 : std::stoi(cols[6]);
        r.rows = cols[7].empty() ? 1 : std::stoi(cols[7]);
        r.act = cols[5].rfind("act", 0) == 0;
        rows.push_back(r);
    }
    return rows;
}

}  // namespace

TEST(QuantCoreTypes, MatchesSpecSummaryTable) {
    const std::string path = ikllm::test::shared_dir() + "/docs/quant-formats.md";
    if (ikllm::test::shared_dir().empty() || !ikllm::test::file_exists(path)) GTEST_SKIP() << "spec not present";
    const std::vector<SpecRow> spec = parse_spec_table(ikllm::test::read_text_file(path));
    ASSERT_GT(spec.size(), 90u);
    size_t count = 0, runtime = 0;
    const TypeTraits* all = all_types(&count);
    for (size_t i = 0; i < count; ++i) runtime += is_runtime_layout(all[i].id) ? 1 : 0;
    EXPECT_GT(runtime, 0u);  // ikllm's own run-time layouts (Q4_K_R8...) are not in the spec
    EXPECT_EQ(count - runtime, spec.size()) << "registry should hold exactly the spec's ids and ikllm's run-time layouts";
    for (const SpecRow& r : spec) {
        const TypeTraits* t = find_type(r.id);
        ASSERT_NE(t, nullptr) << "id " << r.id;
        EXPECT_EQ(t->name, r.name) << r.id;
        EXPECT_EQ(t->block_elems, r.blck) << r.name;
        EXPECT_EQ(t->block_bytes, r.bytes) << r.name;
        EXPECT_EQ(t->row_meta_bytes, r.meta) << r.name;
        EXPECT_EQ(t->interleave, r.rows) << r.name;
        EXPECT_EQ(t->is_activation_only, r.act) << r.name;
        EXPECT_EQ(find_type_by_name(r.name.c_str()), t) << r.name;
    }
}

TEST(QuantCoreTypes, LookupByNameIsCaseInsensitive) {
    ASSERT_NE(find_type_by_name("Q4_K"), nullptr);
    EXPECT_EQ(find_type_by_name("Q4_K")->id, (uint32_t)T_Q4_K);
    EXPECT_EQ(find_type_by_name("IQ4_K_R4")->id, (uint32_t)T_IQ4_K_R4);
    EXPECT_EQ(find_type_by_name("bf16")->id, (uint32_t)T_BF16);
    EXPECT_EQ(find_type_by_name("Q8_KV_R8")->id, (uint32_t)T_Q8_KV_R8);
    EXPECT_EQ(find_type_by_name("q8_k_r8")->id, (uint32_t)T_Q8_K_R8);
    EXPECT_EQ(find_type_by_name("q4_2"), nullptr);
    EXPECT_EQ(find_type_by_name(""), nullptr);
    EXPECT_EQ(find_type_by_name(nullptr), nullptr);
}

TEST(QuantCoreTypes, UnknownIdsAreNull) {
    for (uint32_t id : {4u, 5u, 34u, 35u, 37u, 38u, 40u, 42u, 96u, 100u, 142u, 143u, 159u, 400u, 1000u, 0xffffffffu})
        EXPECT_EQ(find_type(id), nullptr) << id;
}

TEST(QuantCoreTypes, AllTypesSortedAndRowBytes) {
    size_t n = 0;
    const TypeTraits* t = all_types(&n);
    for (size_t i = 1; i < n; ++i) EXPECT_LT(t[i - 1].id, t[i].id);
    // §3: row_size = meta + bytes * ne0 / blck
    EXPECT_EQ(row_bytes(*find_type(T_Q4_0), 4096), 4096u / 32 * 18);
    EXPECT_EQ(row_bytes(*find_type(T_IQ4_KS), 4096), 4u + 4096 / 256 * 136);
    EXPECT_EQ(row_bytes(*find_type(T_Q8_KV), 64), 8u + 64);
    EXPECT_EQ(row_bytes(*find_type(T_F16), 7), 14u);
}

TEST(QuantCoreTypes, CoreFamiliesPublishFunctions) {
    for (uint32_t id : {T_F32, T_F16, T_BF16, T_F64, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q6_0, T_IQ4_NL, T_MXFP4,
                        T_Q1_0_G128}) {
        const TypeTraits* t = find_type(id);
        ASSERT_NE(t, nullptr);
        EXPECT_NE(t->dequant, nullptr) << t->name;
        EXPECT_NE(t->quantize, nullptr) << t->name;
    }
    // activation formats decode (for tests) but are never produced as tensors
    for (uint32_t id : {T_Q8_1, T_Q8_0_X4, T_Q8_1_X4, T_Q8_2_X4}) {
        EXPECT_NE(find_type(id)->dequant, nullptr);
        EXPECT_EQ(find_type(id)->quantize, nullptr);
    }
}
