// Row-interleaved types (docs: quant-formats.md §12): joins the per-group codecs of the
// interleaved_*.cpp files into the family table, the repack API (repack.h) and the quantizers
// (quantize the base type row by row, then repack).
#include <vector>

#include "core/error.h"
#include "quant/families.h"
#include "quant/interleaved_impl.h"
#include "quant/repack.h"

namespace ikllm::quant {
namespace {

const std::vector<const InterleavedCodec*>& all_codecs() {
    static const std::vector<const InterleavedCodec*> list = [] {
        std::vector<const InterleavedCodec*> out;
        const CodecList lists[] = {interleaved_legacy_codecs(), interleaved_kquant_codecs(), interleaved_iqk_codecs(),
                                   interleaved_grid_codecs(), interleaved_8bit_codecs()};
        for (const CodecList& l : lists)
            for (size_t i = 0; i < l.count; ++i) out.push_back(&l.items[i]);
        return out;
    }();
    return list;
}

// Default run-time repack target of each plain type (§12; Q4_0_4x4/4x8/8x8 are ARM forms and
// only reachable through repack_rows_to).
struct RepackDefault {
    uint32_t from, to;
};
constexpr RepackDefault kDefaults[] = {
    {T_Q4_0, T_Q4_0_R8},     {T_Q8_0, T_Q8_0_R8},       {T_MXFP4, T_MXFP4_R8},     {T_IQ4_NL, T_IQ4_NL_R4},
    {T_Q5_0, T_Q5_0_R4},     {T_Q6_0, T_Q6_0_R4},       {T_Q2_K, T_Q2_K_R4},       {T_Q3_K, T_Q3_K_R4},
    {T_Q4_K, T_Q4_K_R4},     {T_Q5_K, T_Q5_K_R4},       {T_Q6_K, T_Q6_K_R4},       {T_IQ4_XS, T_IQ4_XS_R8},
    {T_IQ2_K, T_IQ2_K_R4},   {T_IQ3_K, T_IQ3_K_R4},     {T_IQ4_K, T_IQ4_K_R4},     {T_IQ5_K, T_IQ5_K_R4},
    {T_IQ4_KS, T_IQ4_KS_R4}, {T_IQ5_KS, T_IQ5_KS_R4},   {T_IQ2_XXS, T_IQ2_XXS_R4}, {T_IQ2_XS, T_IQ2_XS_R4},
    {T_IQ2_S, T_IQ2_S_R4},   {T_IQ3_XXS, T_IQ3_XXS_R4}, {T_IQ3_S, T_IQ3_S_R4},     {T_IQ2_BN, T_IQ2_BN_R4},
    {T_BF16, T_BF16_R16},    {T_Q8_KV, T_Q8_KV_R8},
};

// Quantizer of an interleaved type that is a pure repack: each of the N rows is quantized with
// the base type's quantizer, then the rows are repacked.
void quantize_via_base(uint32_t id, const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    const InterleavedCodec* c = find_interleaved_codec(id);
    const TypeTraits* base = c ? find_type(c->base) : nullptr;
    if (!base || !base->quantize || !c->repack)
        fail(Status::unsupported, "cannot quantize to this interleaved type: its base type has no quantizer");
    const size_t rb = row_bytes(*base, ne0);
    std::vector<uint8_t> tmp(rb * (size_t)c->rows);
    std::vector<const uint8_t*> rows((size_t)c->rows);
    for (int k = 0; k < c->rows; ++k) {
        base->quantize(x + (int64_t)k * ne0, tmp.data() + rb * k, ne0, imatrix);
        rows[(size_t)k] = tmp.data() + rb * k;
    }
    c->repack(rows.data(), dst, ne0);
}
template <uint32_t ID>
void quantize_via_base_t(const float* x, uint8_t* dst, int64_t ne0, const float* imatrix) {
    quantize_via_base(ID, x, dst, ne0, imatrix);
}
struct ViaBase {
    uint32_t id;
    QuantizeGroupFn fn;
};
#define IKLLM_VIA_BASE(T) {T, quantize_via_base_t<T>}
constexpr ViaBase kViaBase[] = {
    IKLLM_VIA_BASE(T_Q4_0_R8),     IKLLM_VIA_BASE(T_Q8_0_R8),     IKLLM_VIA_BASE(T_MXFP4_R8),
    IKLLM_VIA_BASE(T_IQ4_NL_R4),   IKLLM_VIA_BASE(T_Q5_0_R4),     IKLLM_VIA_BASE(T_Q6_0_R4),
    IKLLM_VIA_BASE(T_Q4_0_4X4),    IKLLM_VIA_BASE(T_Q4_0_4X8),    IKLLM_VIA_BASE(T_Q4_0_8X8),
    IKLLM_VIA_BASE(T_Q2_K_R4),     IKLLM_VIA_BASE(T_Q3_K_R4),     IKLLM_VIA_BASE(T_Q4_K_R4),
    IKLLM_VIA_BASE(T_Q5_K_R4),     IKLLM_VIA_BASE(T_Q6_K_R4),     IKLLM_VIA_BASE(T_IQ4_XS_R8),
    IKLLM_VIA_BASE(T_IQ2_K_R4),    IKLLM_VIA_BASE(T_IQ3_K_R4),    IKLLM_VIA_BASE(T_IQ4_K_R4),
    IKLLM_VIA_BASE(T_IQ5_K_R4),    IKLLM_VIA_BASE(T_IQ4_KS_R4),   IKLLM_VIA_BASE(T_IQ5_KS_R4),
    IKLLM_VIA_BASE(T_IQ2_XXS_R4),  IKLLM_VIA_BASE(T_IQ2_XS_R4),   IKLLM_VIA_BASE(T_IQ2_S_R4),
    IKLLM_VIA_BASE(T_IQ3_XXS_R4),  IKLLM_VIA_BASE(T_IQ3_S_R4),    IKLLM_VIA_BASE(T_IQ2_BN_R4),
    IKLLM_VIA_BASE(T_Q8_KV_R8),
};
#undef IKLLM_VIA_BASE

// Whether a plain type's family publishes a quantizer (asked of the families directly: this runs
// while the registry is being built).
bool plain_has_quantizer(uint32_t id) {
    const FamilyTable fams[] = {float_family(), legacy_family(), kquant_family(), iqk_family(),
                                grid_family(),  trellis_family(), ternary_family()};
    for (const FamilyTable& f : fams)
        for (size_t i = 0; i < f.count; ++i)
            if (f.entries[i].id == id && f.entries[i].quantize) return true;
    return false;
}

const std::vector<FamilyEntry>& family_entries() {
    static const std::vector<FamilyEntry> entries = [] {
        std::vector<FamilyEntry> out;
        for (const InterleavedCodec* c : all_codecs()) {
            QuantizeGroupFn q = c->quantize;
            for (const ViaBase& v : kViaBase)
                if (!q && v.id == c->id && plain_has_quantizer(c->base)) q = v.fn;
            out.push_back({c->id, c->dequant, q});
        }
        return out;
    }();
    return entries;
}

}  // namespace

const InterleavedCodec* find_interleaved_codec(uint32_t id) {
    for (const InterleavedCodec* c : all_codecs())
        if (c->id == id) return c;
    return nullptr;
}

uint32_t repack_target(uint32_t from_type) {
    for (const RepackDefault& r : kDefaults)
        if (r.from == from_type) return r.to;
    return 0;
}

uint32_t repack_base(uint32_t interleaved_type) {
    const InterleavedCodec* c = find_interleaved_codec(interleaved_type);
    return (c && c->repack) ? c->base : 0;
}

bool repack_rows_to(uint32_t from_type, uint32_t to_type, const uint8_t* src, uint8_t* dst, int64_t ne0,
                    int64_t nrows) {
    const InterleavedCodec* c = find_interleaved_codec(to_type);
    if (!c || !c->repack || c->base != from_type) return false;
    const TypeTraits* from = find_type(from_type);
    const TypeTraits* to = find_type(to_type);
    if (!from || !to || ne0 <= 0 || nrows < 0 || ne0 % from->block_elems || ne0 % to->block_elems) return false;
    if (nrows % c->rows) return false;
    const size_t in_rb = row_bytes(*from, ne0), out_group = row_bytes(*to, ne0) * (size_t)c->rows;
    std::vector<const uint8_t*> rows((size_t)c->rows);
    for (int64_t g = 0; g < nrows / c->rows; ++g) {
        for (int k = 0; k < c->rows; ++k) rows[(size_t)k] = src + in_rb * (size_t)(g * c->rows + k);
        c->repack(rows.data(), dst + out_group * (size_t)g, ne0);
    }
    return true;
}

bool repack_rows(uint32_t from_type, uint32_t* to_type, const uint8_t* src, uint8_t* dst, int64_t ne0,
                 int64_t nrows) {
    const uint32_t to = repack_target(from_type);
    if (!to || !repack_rows_to(from_type, to, src, dst, ne0, nrows)) return false;
    if (to_type) *to_type = to;
    return true;
}

FamilyTable interleaved_family() {
    const auto& e = family_entries();
    return {e.data(), e.size()};
}

}  // namespace ikllm::quant
