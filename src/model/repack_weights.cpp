#include "model/repack_weights.h"

#include <set>

#include "quant/repack.h"
#include "quant/type_traits.h"

namespace ikllm {

namespace {
// Interleaved forms whose CPU kernels are measured faster than the plain ones
// (bench/quant_matmul_bench, AVX-512, 1 and 2 threads); other repacks are not worth it yet.
bool worth_repacking(uint32_t from) {
    switch (from) {
        case quant::T_Q4_0:
        case quant::T_Q8_0:
        case quant::T_Q4_K:
        case quant::T_BF16: return true;
        default: return false;
    }
}
}  // namespace

int repack_weights(Model& m, const std::vector<Tensor*>& matmul_weights, const Logger& log) {
    int n = 0;
    uint64_t bytes = 0;
    std::set<Tensor*> seen;
    for (Tensor* t : matmul_weights) {
        if (!t || !seen.insert(t).second) continue;
        // Tied embeddings are also looked up row by row; keep them plain.
        if (t == m.tok_embd) continue;
        if (!worth_repacking(t->type)) continue;
        const uint32_t to = quant::repack_target(t->type);
        if (!to || !m.cpu->supports_weight_type(to)) continue;
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
    log.log(log_info, "repacked %d weight tensors (%.1f MiB) to row-interleaved layouts", n, bytes / 1048576.0);
    return n;
}

}  // namespace ikllm
