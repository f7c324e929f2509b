#include "model/repack_weights.h"

#include <map>
#include <set>
#include <string>

#include "quant/repack.h"
#include "quant/type_traits.h"

namespace ikllm {

bool repack_applies(const backend::Backend& cpu, uint32_t type, bool force) {
    const uint32_t to = quant::repack_target(type);
    return to && cpu.supports_weight_type(to) && (force || cpu.repack_helps(type));
}

int repack_weights(Model& m, const std::vector<Tensor*>& matmul_weights, bool force, const Logger& log) {
    int n = 0;
    uint64_t bytes = 0;
    std::set<Tensor*> seen;
    std::map<uint32_t, int> kept;  // types the CPU runs faster as stored: tensors left plain
    for (Tensor* t : matmul_weights) {
        if (!t || !seen.insert(t).second) continue;
        // Tied embeddings are also looked up row by row; keep them plain.
        if (t == m.tok_embd) continue;
        const uint32_t to = quant::repack_target(t->type);
        if (!to || !m.cpu->supports_weight_type(to)) continue;
        if (!force && !m.cpu->repack_helps(t->type)) {
            ++kept[t->type];
            continue;
        }
        const quant::TypeTraits& dst = *quant::find_type(to);
        if (t->ne[1] % dst.interleave != 0) continue;
        const int64_t rows = t->n_rows();
        const size_t rb = quant::row_bytes(dst, t->ne[0]);
        auto buf = m.cpu->alloc(rb * (size_t)rows);
        uint32_t got = 0;
        if (!quant::repack_rows(t->type, &got, static_cast<const uint8_t*>(t->data), static_cast<uint8_t*>(buf->data()),
                                t->ne[0], rows) || got != to)
            continue;
        t->type = to;
        t->data = buf->data();
        t->nb[0] = (size_t)dst.block_bytes;
        t->nb[1] = rb;
        t->nb[2] = rb * (size_t)t->ne[1];
        t->nb[3] = t->nb[2] * (size_t)t->ne[2];
        m.buffers.push_back(std::move(buf));
        bytes += rb * (size_t)rows;
        ++n;
    }
    if (!kept.empty()) {
        std::string list;
        for (auto [type, count] : kept)
            list += (list.empty() ? "" : ", ") + std::to_string(count) + " " + quant::find_type(type)->name;
        log.log(log_warn, "run-time repack: tensors kept as stored, faster than interleaved on this CPU (repack 2 "
                          "forces it): %s", list.c_str());
    }
    log.log(log_info, "repacked %d weight tensors (%.1f MiB) to row-interleaved layouts", n, bytes / 1048576.0);
    return n;
}

}  // namespace ikllm
