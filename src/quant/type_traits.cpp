// The type registry: the geometry of every GGUF type id (quant-formats.md §2) joined with the
// decode/encode functions that the family files publish (families.h). Built once, read-only.
#include "quant/type_traits.h"

#include <algorithm>
#include <array>
#include <vector>

#include "quant/families.h"

namespace ikllm::quant {
namespace {

struct Geometry {
    uint32_t id;
    const char* name;
    int32_t blck, bytes, meta, rows;
    bool act;
};

// quant-formats.md §2, in id order. `rows` = rows interleaved in one group.
// I2_S reports 1 weight / 1 byte like the reference's traits; its real extent is special (§11.3).
constexpr Geometry kGeometry[] = {
    {T_F32, "f32", 1, 4, 0, 1, false},
    {T_F16, "f16", 1, 2, 0, 1, false},
    {T_Q4_0, "q4_0", 32, 18, 0, 1, false},
    {T_Q4_1, "q4_1", 32, 20, 0, 1, false},
    {T_Q5_0, "q5_0", 32, 22, 0, 1, false},
    {T_Q5_1, "q5_1", 32, 24, 0, 1, false},
    {T_Q8_0, "q8_0", 32, 34, 0, 1, false},
    {T_Q8_1, "q8_1", 32, 36, 0, 1, true},
    {T_Q2_K, "q2_K", 256, 84, 0, 1, false},
    {T_Q3_K, "q3_K", 256, 110, 0, 1, false},
    {T_Q4_K, "q4_K", 256, 144, 0, 1, false},
    {T_Q5_K, "q5_K", 256, 176, 0, 1, false},
    {T_Q6_K, "q6_K", 256, 210, 0, 1, false},
    {T_Q8_K, "q8_K", 256, 296, 0, 1, true},
    {T_IQ2_XXS, "iq2_xxs", 256, 66, 0, 1, false},
    {T_IQ2_XS, "iq2_xs", 256, 74, 0, 1, false},
    {T_IQ3_XXS, "iq3_xxs", 256, 98, 0, 1, false},
    {T_IQ1_S, "iq1_s", 256, 50, 0, 1, false},
    {T_IQ4_NL, "iq4_nl", 32, 18, 0, 1, false},
    {T_IQ3_S, "iq3_s", 256, 110, 0, 1, false},
    {T_IQ2_S, "iq2_s", 256, 82, 0, 1, false},
    {T_IQ4_XS, "iq4_xs", 256, 136, 0, 1, false},
    {T_I8, "i8", 1, 1, 0, 1, false},
    {T_I16, "i16", 1, 2, 0, 1, false},
    {T_I32, "i32", 1, 4, 0, 1, false},
    {T_I64, "i64", 1, 8, 0, 1, false},
    {T_F64, "f64", 1, 8, 0, 1, false},
    {T_IQ1_M, "iq1_m", 256, 56, 0, 1, false},
    {T_BF16, "bf16", 1, 2, 0, 1, false},
    {T_Q4_0_4X4, "q4_0_4x4", 32, 18, 0, 4, false},
    {T_Q4_0_4X8, "q4_0_4x8", 32, 18, 0, 4, false},
    {T_Q4_0_8X8, "q4_0_8x8", 32, 18, 0, 8, false},
    {T_I2_S, "i2_s", 1, 1, 0, 1, false},
    {T_MXFP4, "mxfp4", 32, 17, 0, 1, false},
    {T_Q1_0_G128, "q1_0_g128", 128, 18, 0, 1, false},
    {T_Q8_0_X4, "q8_0_x4", 32, 34, 0, 1, true},
    {T_Q8_1_X4, "q8_1_x4", 32, 36, 0, 1, true},
    {T_Q8_2_X4, "q8_2_x4", 32, 36, 0, 1, true},
    {T_Q6_0, "q6_0", 32, 26, 0, 1, false},
    {T_IQ1_BN, "iq1_bn", 64, 13, 2, 1, false},
    {T_IQ2_BN, "iq2_bn", 64, 16, 4, 1, false},
    {T_Q8_K64, "q8_K64", 64, 68, 0, 1, true},
    {T_IQ2_K, "iq2_k", 256, 76, 0, 1, false},
    {T_IQ3_K, "iq3_k", 256, 110, 0, 1, false},
    {T_IQ4_K, "iq4_k", 256, 144, 0, 1, false},
    {T_IQ5_K, "iq5_k", 256, 176, 0, 1, false},
    {T_IQ6_K, "iq6_k", 256, 212, 0, 1, false},
    {T_IQ4_KS, "iq4_ks", 256, 136, 4, 1, false},
    {T_IQ2_KS, "iq2_ks", 256, 70, 2, 1, false},
    {T_IQ4_KSS, "iq4_kss", 256, 128, 4, 1, false},
    {T_Q8_K16, "q8_K16", 64, 64, 20, 1, true},
    {T_Q8_K32, "q8_K32", 256, 296, 0, 1, true},
    {T_Q8_KR8, "q8_KR8", 256, 296, 0, 1, true},
    {T_Q8_K128, "q8_K128", 128, 140, 0, 1, true},
    {T_Q8_KV, "q8_KV", 32, 32, 8, 1, false},
    {T_IQ5_KS, "iq5_ks", 256, 168, 4, 1, false},
    {T_IQ2_KT, "iq2_kt", 256, 68, 4, 1, false},
    {T_IQ3_KT, "iq3_kt", 256, 100, 4, 1, false},
    {T_IQ4_KT, "iq4_kt", 256, 128, 4, 1, false},
    {T_IQ3_KS, "iq3_ks", 256, 102, 2, 1, false},
    {T_IQ2_KL, "iq2_kl", 256, 86, 2, 1, false},
    {T_IQ1_KT, "iq1_kt", 256, 56, 4, 1, false},
    {T_Q4_0_R8, "q4_0_r8", 32, 18, 0, 8, false},
    {T_Q5_0_R4, "q5_0_r4", 32, 22, 0, 4, false},
    {T_Q8_0_R8, "q8_0_r8", 32, 34, 0, 8, false},
    {T_Q2_K_R4, "q2_k_r4", 256, 84, 0, 4, false},
    {T_Q3_K_R4, "q3_k_r4", 256, 110, 0, 4, false},
    {T_Q4_K_R4, "q4_k_r4", 256, 144, 0, 4, false},
    {T_Q5_K_R4, "q5_k_r4", 256, 176, 0, 4, false},
    {T_Q6_K_R4, "q6_k_r4", 256, 210, 0, 4, false},
    {T_IQ2_XXS_R4, "iq2_xxs_r4", 256, 66, 0, 4, false},
    {T_IQ2_XS_R4, "iq2_xs_r4", 256, 74, 0, 4, false},
    {T_IQ3_XXS_R4, "iq3_xxs_r4", 256, 98, 0, 4, false},
    {T_IQ1_S_R4, "iq1_s_r4", 32, 6, 2, 4, false},
    {T_IQ4_NL_R4, "iq4_nl_r4", 32, 18, 0, 4, false},
    {T_IQ3_S_R4, "iq3_s_r4", 256, 110, 0, 4, false},
    {T_IQ2_S_R4, "iq2_s_r4", 256, 82, 0, 4, false},
    {T_IQ4_XS_R8, "iq4_xs_r8", 256, 136, 0, 8, false},
    {T_IQ1_M_R4, "iq1_m_r4", 32, 7, 2, 4, false},
    {T_BF16_R16, "bf16_r16", 1, 2, 0, 16, false},
    {T_Q6_0_R4, "q6_0_r4", 32, 26, 0, 4, false},
    {T_IQ2_BN_R4, "iq2_bn_r4", 64, 16, 4, 4, false},
    {T_IQ2_K_R4, "iq2_k_r4", 256, 76, 0, 4, false},
    {T_IQ3_K_R4, "iq3_k_r4", 256, 110, 0, 4, false},
    {T_IQ4_K_R4, "iq4_k_r4", 256, 144, 0, 4, false},
    {T_IQ5_K_R4, "iq5_k_r4", 256, 176, 0, 4, false},
    {T_IQ4_KS_R4, "iq4_ks_r4", 256, 136, 4, 4, false},
    {T_IQ5_KS_R4, "iq5_ks_r4", 256, 168, 4, 4, false},
    {T_MXFP4_R8, "mxfp4_r8", 32, 17, 0, 8, false},
    {T_Q8_K_R16, "q8_k_r16", 256, 258, 0, 16, false},
    {T_Q8_KV_R8, "q8_KV_r8", 32, 32, 4, 8, false},
    {T_Q8_K_R8, "q8_k_r8", 256, 258, 0, 8, false},
    {T_Q2_K_R8, "q2_k_r8", 256, 84, 0, 8, false},
    {T_Q3_K_R8, "q3_k_r8", 256, 110, 0, 8, false},
    {T_Q4_K_R8, "q4_k_r8", 256, 144, 0, 8, false},
    {T_Q5_K_R8, "q5_k_r8", 256, 176, 0, 8, false},
    {T_Q6_K_R8, "q6_k_r8", 256, 210, 0, 8, false},
    {T_IQ4_XS_X8, "iq4_xs_x8", 256, 136, 0, 8, false},
    {T_IQ2_K_R8, "iq2_k_r8", 256, 76, 0, 8, false},
    {T_IQ3_K_R8, "iq3_k_r8", 256, 110, 0, 8, false},
    {T_IQ4_K_R8, "iq4_k_r8", 256, 144, 0, 8, false},
    {T_IQ4_KS_R8, "iq4_ks_r8", 256, 136, 4, 8, false},
    {T_IQ2_KS_R8, "iq2_ks_r8", 256, 70, 2, 8, false},
    {T_IQ5_KS_R8, "iq5_ks_r8", 256, 168, 4, 8, false},
    {T_IQ3_KS_R8, "iq3_ks_r8", 256, 102, 2, 8, false},
    {T_IQ2_KL_R8, "iq2_kl_r8", 256, 86, 2, 8, false},
};

constexpr bool ids_ascending() {
    for (size_t i = 1; i < std::size(kGeometry); ++i)
        if (kGeometry[i - 1].id >= kGeometry[i].id) return false;
    return true;
}
static_assert(ids_ascending(), "geometry table must be sorted by id (binary search)");

const std::vector<TypeTraits>& registry() {
    static const std::vector<TypeTraits> table = [] {
        std::vector<TypeTraits> out;
        out.reserve(std::size(kGeometry));
        for (const Geometry& g : kGeometry)
            out.push_back({g.id, g.name, g.blck, g.bytes, g.meta, g.rows, g.act, nullptr, nullptr});
        const FamilyTable families[] = {float_family(),   legacy_family(),   kquant_family(),
                                        iqk_family(),     grid_family(),     trellis_family(),
                                        ternary_family(), interleaved_family()};
        for (const FamilyTable& fam : families) {
            for (size_t i = 0; i < fam.count; ++i) {
                const FamilyEntry& e = fam.entries[i];
                auto it = std::lower_bound(out.begin(), out.end(), e.id,
                                           [](const TypeTraits& t, uint32_t id) { return t.id < id; });
                if (it == out.end() || it->id != e.id) continue;  // not a GGUF id: ignore
                if (!it->dequant) it->dequant = e.dequant;        // first family to claim an id wins
                if (!it->quantize) it->quantize = e.quantize;
            }
        }
        return out;
    }();
    return table;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

bool iequal(const char* a, const char* b) {
    for (; *a && *b; ++a, ++b)
        if (lower(*a) != lower(*b)) return false;
    return *a == *b;
}

}  // namespace

const TypeTraits* find_type(uint32_t id) {
    const auto& t = registry();
    auto it = std::lower_bound(t.begin(), t.end(), id, [](const TypeTraits& x, uint32_t v) { return x.id < v; });
    return (it != t.end() && it->id == id) ? &*it : nullptr;
}

const TypeTraits* find_type_by_name(const char* name) {
    if (!name) return nullptr;
    for (const TypeTraits& t : registry())
        if (iequal(t.name, name)) return &t;
    return nullptr;
}

const TypeTraits* all_types(size_t* count) {
    const auto& t = registry();
    if (count) *count = t.size();
    return t.data();
}

}  // namespace ikllm::quant
