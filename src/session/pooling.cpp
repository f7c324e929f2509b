#include "session/pooling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/model.h"

namespace ikllm {

bool pooling_from_name(const std::string& name, Pooling* out) {
    static const struct { const char* name; Pooling p; } kNames[] = {
        {"none", Pooling::none}, {"mean", Pooling::mean}, {"cls", Pooling::cls},
        {"first", Pooling::cls}, {"last", Pooling::last},
    };
    for (const auto& n : kNames)
        if (name == n.name) {
            *out = n.p;
            return true;
        }
    return false;
}

const char* pooling_name(Pooling p) {
    switch (p) {
        case Pooling::none: return "none";
        case Pooling::mean: return "mean";
        case Pooling::cls: return "cls";
        case Pooling::last: return "last";
        case Pooling::rank: return "rank";
    }
    return "?";
}

Pooling model_pooling(const Model& m) {
    if (!m.file) return Pooling::none;
    const std::string key = m.hp.arch_str + ".pooling_type";
    if (!m.file->has(key)) return Pooling::none;
    const uint32_t v = m.file->get_u32(key);  // throws invalid_file on a non-integer
    if (v > (uint32_t)Pooling::rank)
        fail(Status::invalid_file, key + " = " + std::to_string(v) + " is not a pooling type (0..4)");
    return (Pooling)v;
}

void l2_normalize(float* v, int32_t n) {
    double ss = 0;
    for (int32_t i = 0; i < n; ++i) ss += (double)v[i] * v[i];
    if (ss <= 0) return;
    const float inv = (float)(1.0 / std::sqrt(ss));
    for (int32_t i = 0; i < n; ++i) v[i] *= inv;
}

PooledSet pool_sequences(const float* hidden, int32_t n_tokens, int32_t n_embd, const int32_t* seq,
                         const int32_t* pos, int32_t n_seq, Pooling p, bool normalize) {
    if (p != Pooling::mean && p != Pooling::cls && p != Pooling::last)
        fail(Status::internal, std::string("pool_sequences: cannot pool with '") + pooling_name(p) + "'");
    PooledSet out;
    out.row_of_seq.assign(n_seq, -1);
    // Per sequence: the chosen token (cls/last) or the token count (mean).
    std::vector<int32_t> pick(n_seq, -1), count(n_seq, 0);
    for (int32_t i = 0; i < n_tokens; ++i) {
        const int32_t s = seq[i];
        if (s < 0 || s >= n_seq) fail(Status::internal, "pool_sequences: sequence id out of range");
        ++count[s];
        const int32_t cur = pick[s];
        if (cur < 0 || (p == Pooling::cls && pos[i] < pos[cur]) || (p == Pooling::last && pos[i] > pos[cur]))
            pick[s] = i;
    }
    int32_t n_rows = 0;
    for (int32_t s = 0; s < n_seq; ++s)
        if (count[s] > 0) out.row_of_seq[s] = n_rows++;
    out.data.assign((size_t)n_rows * n_embd, 0.0f);
    if (p == Pooling::mean) {
        // Accumulate in double so long sequences do not lose the small terms.
        std::vector<double> acc((size_t)n_rows * n_embd, 0.0);
        for (int32_t i = 0; i < n_tokens; ++i) {
            double* a = acc.data() + (size_t)out.row_of_seq[seq[i]] * n_embd;
            const float* h = hidden + (size_t)i * n_embd;
            for (int32_t j = 0; j < n_embd; ++j) a[j] += h[j];
        }
        for (int32_t s = 0; s < n_seq; ++s) {
            if (count[s] == 0) continue;
            const size_t off = (size_t)out.row_of_seq[s] * n_embd;
            for (int32_t j = 0; j < n_embd; ++j) out.data[off + j] = (float)(acc[off + j] / count[s]);
        }
    } else {
        for (int32_t s = 0; s < n_seq; ++s) {
            if (count[s] == 0) continue;
            const float* h = hidden + (size_t)pick[s] * n_embd;
            std::copy(h, h + n_embd, out.data.begin() + (size_t)out.row_of_seq[s] * n_embd);
        }
    }
    if (normalize)
        for (int32_t r = 0; r < n_rows; ++r) l2_normalize(out.data.data() + (size_t)r * n_embd, n_embd);
    return out;
}

}  // namespace ikllm
