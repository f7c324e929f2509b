#include "quantize/imatrix_collector.h"

#include "quant/type_traits.h"

namespace ikllm::quantize {

void ImatrixCollector::before(const Op& op) {
    if (op.kind != OpKind::mul_mat) return;
    const Tensor* w = op.src[0];
    const Tensor* x = op.src[1];
    if (!w || !x || !w->name || !*w->name || x->type != quant::T_F32) return;
    const int64_t ne0 = x->ne[0], nt = x->n_rows();
    auto it = acc_.find(w->name);
    if (it == acc_.end()) it = acc_.emplace(w->name, Acc{std::vector<double>((size_t)ne0, 0.0), 0}).first;
    Acc& a = it->second;
    if ((int64_t)a.sum_sq.size() != ne0) return;  // same name, other shape: not a weight we track
    for (int64_t t = 0; t < nt; ++t) {
        const float* row = reinterpret_cast<const float*>(static_cast<const uint8_t*>(x->data) + t * x->nb[1]);
        for (int64_t j = 0; j < ne0; ++j) a.sum_sq[(size_t)j] += (double)row[j] * row[j];
    }
    a.count += nt;
}

Imatrix ImatrixCollector::result(int32_t chunks, const std::string& dataset) const {
    Imatrix m;
    m.chunks = chunks;
    m.dataset = dataset;
    for (const auto& [name, a] : acc_) {
        if (a.count == 0) continue;
        ImatrixEntry e;
        e.ncall = chunks > 0 ? chunks : 1;
        e.mean_sq.resize(a.sum_sq.size());
        for (size_t j = 0; j < a.sum_sq.size(); ++j) e.mean_sq[j] = (float)(a.sum_sq[j] / (double)a.count);
        m.entries[name] = std::move(e);
    }
    return m;
}

}  // namespace ikllm::quantize
