#include "quantize/imatrix_collector.h"

#include <cmath>

#include "quant/type_traits.h"

namespace ikllm::quantize {

ImatrixCollector::Acc* ImatrixCollector::entry(const char* name, int64_t ne0, int64_t n_seg) {
    if (!name || !*name) return nullptr;
    auto it = acc_.find(name);
    if (it == acc_.end())
        it = acc_.emplace(name, Acc{ne0, std::vector<double>((size_t)(ne0 * n_seg), 0.0),
                                    std::vector<int64_t>((size_t)n_seg, 0)}).first;
    Acc& a = it->second;
    if (a.seg != ne0 || (int64_t)a.count.size() != n_seg) return nullptr;  // same name, other shape
    return &a;
}

void ImatrixCollector::add_row(Acc& a, const float* row, int64_t seg) {
    double* s = a.sum_sq.data() + seg * a.seg;
    for (int64_t j = 0; j < a.seg; ++j) s[j] += (double)row[j] * row[j];
    ++a.count[(size_t)seg];
}

void ImatrixCollector::add_rows(const char* name, const Tensor& x, int64_t n_seg, int64_t seg) {
    Acc* a = entry(name, x.ne[0], n_seg);
    if (!a) return;
    for (int64_t t = 0; t < x.n_rows(); ++t)
        add_row(*a, reinterpret_cast<const float*>(static_cast<const uint8_t*>(x.data) + t * x.nb[1]), seg);
}

void ImatrixCollector::experts(const Op& op) {
    const Tensor& x = *op.src[0];
    const Tensor& ids = *op.src[1];
    const Tensor& wg = *op.ex[0];
    const Tensor* wu = op.ex[1];
    const Tensor& wd = *op.ex[2];
    const int64_t E = x.ne[0], T = x.ne[1], k = ids.ne[0], n_exp = wd.ne[2], n_ff = wd.ne[0];
    Acc* ag = entry(wg.name, E, n_exp);
    Acc* au = wu ? entry(wu->name, E, n_exp) : nullptr;
    Acc* ad = entry(wd.name, n_ff, n_exp);
    // Inputs of gate/up, per expert.
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int32_t e = ids.row<int32_t>(t)[j];
            if (e < 0 || e >= n_exp) continue;
            if (ag) add_row(*ag, x.row<float>(t), e);
            if (au) add_row(*au, x.row<float>(t), e);
        }
    if (!ad) return;
    // Inputs of down: silu(gate . x) * (up . x), recomputed in f32 from the decoded experts.
    const quant::TypeTraits& tg = *quant::find_type(wg.type);
    const quant::TypeTraits* tu = wu ? quant::find_type(wu->type) : nullptr;
    if (tg.interleave != 1 || (tu && tu->interleave != 1)) return;
    std::vector<float> g((size_t)(n_ff * E)), u((size_t)(n_ff * E)), h((size_t)n_ff);
    for (int64_t e = 0; e < n_exp; ++e) {
        bool used = false;
        for (int64_t i = 0; i < T * k && !used; ++i) used = ids.row<int32_t>(i / k)[i % k] == e;
        if (!used) continue;
        const uint8_t* gb = static_cast<const uint8_t*>(wg.data) + e * wg.nb[2];
        for (int64_t r = 0; r < n_ff; ++r) {
            tg.dequant(gb + r * wg.nb[1], g.data() + r * E, E);
            if (wu) tu->dequant(static_cast<const uint8_t*>(wu->data) + e * wu->nb[2] + r * wu->nb[1], u.data() + r * E, E);
            else tg.dequant(gb + (n_ff + r) * wg.nb[1], u.data() + r * E, E);  // merged gate_up
        }
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < k; ++j) {
                if (ids.row<int32_t>(t)[j] != e) continue;
                const float* xv = x.row<float>(t);
                for (int64_t r = 0; r < n_ff; ++r) {
                    double sg = 0, su = 0;
                    for (int64_t i = 0; i < E; ++i) {
                        sg += (double)g[(size_t)(r * E + i)] * xv[i];
                        su += (double)u[(size_t)(r * E + i)] * xv[i];
                    }
                    h[(size_t)r] = (float)(sg / (1.0 + std::exp(-sg)) * su);
                }
                add_row(*ad, h.data(), e);
            }
    }
}

void ImatrixCollector::before(const Op& op) {
    switch (op.kind) {
        case OpKind::mul_mat:
            if (op.src[1]->type == quant::T_F32) add_rows(op.src[0]->name, *op.src[1]);
            break;
        case OpKind::mul_mat_swiglu:  // gate and up read the same input
            add_rows(op.src[0]->name, *op.src[1]);
            add_rows(op.src[2]->name, *op.src[1]);
            break;
        case OpKind::moe_ffn: experts(op); break;
        default: break;
    }
}

Imatrix ImatrixCollector::result(int32_t chunks, const std::string& dataset) const {
    Imatrix m;
    m.chunks = chunks;
    m.dataset = dataset;
    for (const auto& [name, a] : acc_) {
        int64_t total = 0;
        for (int64_t c : a.count) total += c;
        if (total == 0) continue;
        ImatrixEntry e;
        e.ncall = chunks > 0 ? chunks : 1;
        e.mean_sq.resize(a.sum_sq.size());
        for (size_t j = 0; j < a.sum_sq.size(); ++j) {
            const int64_t c = a.count[j / (size_t)a.seg];
            e.mean_sq[j] = c ? (float)(a.sum_sq[j] / (double)c) : 0.0f;
        }
        m.entries[name] = std::move(e);
    }
    return m;
}

}  // namespace ikllm::quantize
