// Helpers for the grid / trellis / ternary / interleaved quant tests: opening the reference
// GGUF files through the engine's reader, decoding tensors with the type registry, and
// comparing float bit patterns.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "quant/type_traits.h"
#include "test_support.h"

namespace ikllm::test {

inline bool gti_geometry(uint32_t type, gguf::TypeGeometry* out) {
    const quant::TypeTraits* t = quant::find_type(type);
    if (!t) return false;
    *out = {t->name, t->block_elems, t->block_bytes, t->row_meta_bytes, t->interleave};
    return true;
}

inline std::unique_ptr<gguf::File> gti_open_quant(const std::string& model) {
    return gguf::File::open(refdata_dir() + "/quant/" + model + ".gguf", gti_geometry);
}

// Decodes the first `nrows` rows (rounded up to whole row groups) of a tensor.
inline std::vector<float> gti_decode(const gguf::TensorInfo& ti, int64_t nrows) {
    const quant::TypeTraits* t = quant::find_type(ti.type);
    const int64_t ne0 = ti.ne[0], N = t->interleave;
    const size_t rb = quant::row_bytes(*t, ne0);
    const int64_t groups = (nrows + N - 1) / N;
    std::vector<float> out((size_t)(groups * N * ne0));
    for (int64_t g = 0; g < groups; ++g) t->dequant(ti.data + rb * (size_t)(g * N), out.data() + g * N * ne0, ne0);
    out.resize((size_t)(nrows * ne0));
    return out;
}

struct GtiIndexRow {
    std::string tensor, type_name;
    uint32_t type = 0;
    int64_t ne0 = 0, ne1 = 0, rows_dumped = 0;
    double sum_all = 0, sumsq_all = 0;
};

inline std::vector<GtiIndexRow> gti_read_index(const std::string& model) {
    std::vector<GtiIndexRow> rows;
    std::istringstream in(read_text_file(refdata_dir() + "/refs/" + model + "/deq/index.tsv"));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        GtiIndexRow r;
        ls >> r.tensor >> r.type >> r.type_name >> r.ne0 >> r.ne1 >> r.rows_dumped >> r.sum_all >> r.sumsq_all;
        rows.push_back(r);
    }
    return rows;
}

inline uint32_t gti_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

}  // namespace ikllm::test
