// A cache and a batch for attention op tests: sequence 0 in shuffled cells, another sequence
// in the others, a few empty cells, the batch being sequence 0's last T positions.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "ops.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"
#include "tensor_view.h"

namespace ikllm_test {
using namespace ikllm;

// A cache of n_cells cells; the batch's sequence 0 occupies cells in shuffled order (positions
// 0..n_seq0-1), every fifth cell belongs to sequence 1. The batch is the last T positions.
struct AttnCase {
    int64_t d_k, d_v, n_head, n_head_kv, T, n_seq0;
    uint32_t cache_type;
    bool latent;  // V = the first d_v values of the K row (MLA)
};

struct AttnSetup {
    std::vector<uint8_t> kcache, vcache;
    std::vector<float> q, out;
    std::vector<int32_t> cell_pos, pos, seq_ids;
    std::vector<uint64_t> seqs;
    Tensor Q, K, V, O;
    Op op;
};

inline void setup(const AttnCase& c, AttnSetup& s, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int64_t n_cells = c.n_seq0 + c.n_seq0 / 4 + 3;
    const size_t krb = quant::kv_row_bytes(c.cache_type, c.d_k), vrb = quant::kv_row_bytes(c.cache_type, c.d_v);
    s.kcache.assign(krb * c.n_head_kv * n_cells, 0);
    s.vcache.assign(vrb * c.n_head_kv * n_cells, 0);
    std::vector<float> row(std::max(c.d_k, c.d_v));
    for (int64_t i = 0; i < c.n_head_kv * n_cells; ++i) {
        for (int64_t j = 0; j < c.d_k; ++j) row[j] = nd(rng);
        quant::kv_encode_row(c.cache_type, row.data(), s.kcache.data() + i * krb, c.d_k);
        for (int64_t j = 0; j < c.d_v; ++j) row[j] = nd(rng);
        quant::kv_encode_row(c.cache_type, row.data(), s.vcache.data() + i * vrb, c.d_v);
    }
    // Cells: sequence 0 in shuffled cells, sequence 1 in the others; 3 cells empty.
    std::vector<int32_t> order(n_cells);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    s.cell_pos.assign(n_cells, -1);
    s.seqs.assign(n_cells, 0);
    for (int64_t p = 0; p < c.n_seq0; ++p) {
        s.cell_pos[order[p]] = (int32_t)p;
        s.seqs[order[p]] = 1;
    }
    for (int64_t p = c.n_seq0; p < n_cells - 3; ++p) {
        s.cell_pos[order[p]] = (int32_t)(p - c.n_seq0);
        s.seqs[order[p]] = 2;
    }
    s.pos.resize(c.T);
    for (int64_t t = 0; t < c.T; ++t) s.pos[t] = (int32_t)(c.n_seq0 - c.T + t);
    s.seq_ids.assign(c.T, 0);
    s.q.resize(c.d_k * c.n_head * c.T);
    for (auto& x : s.q) x = nd(rng);
    s.out.assign(c.d_v * c.n_head * c.T, 0.0f);
    s.Q = tensor_view(s.q.data(), quant::T_F32, c.d_k, c.n_head, c.T, 4 * c.d_k, 4 * c.d_k * c.n_head);
    s.K = tensor_view(s.kcache.data(), c.cache_type, c.d_k, c.n_head_kv, n_cells, krb, krb * c.n_head_kv);
    s.V = c.latent ? s.K : tensor_view(s.vcache.data(), c.cache_type, c.d_v, c.n_head_kv, n_cells, vrb, vrb * c.n_head_kv);
    if (c.latent) s.V.ne[0] = c.d_v;
    s.O = tensor_view(s.out.data(), quant::T_F32, c.d_v * c.n_head, c.T, 1, 4 * c.d_v * c.n_head, 4 * c.d_v * c.n_head * c.T);
    s.op = Op{};
    s.op.kind = OpKind::attention;
    s.op.src[0] = &s.Q;
    s.op.src[1] = &s.K;
    s.op.src[2] = &s.V;
    s.op.dst = &s.O;
    s.op.i32 = s.pos.data();
    s.op.n_i32 = c.T;
    s.op.seq_ids = s.seq_ids.data();
    s.op.kv.cell_pos = s.cell_pos.data();
    s.op.kv.cell_seqs = s.seqs.data();
    s.op.kv.seq_words = 1;
    s.op.kv.n_cells = (int32_t)n_cells;
    s.op.f[0] = 1.0f / std::sqrt((float)c.d_k);
}


}  // namespace ikllm_test
