#include "quality_stats.h"

#include <algorithm>
#include <cmath>

namespace cli {

void log_softmax(const float* logits, int32_t n, std::vector<double>& out) {
    out.resize((size_t)n);
    double mx = logits[0];
    for (int32_t i = 1; i < n; ++i) mx = std::max(mx, (double)logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp((double)logits[i] - mx);
    const double lse = mx + std::log(sum);
    for (int32_t i = 0; i < n; ++i) out[(size_t)i] = (double)logits[i] - lse;
}

int32_t argmax(const float* v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i)
        if (v[i] > v[best]) best = i;
    return best;
}

double MeanStats::rms() const { return n ? std::sqrt(sum2 / (double)n) : 0.0; }

double MeanStats::err() const {
    if (n < 2) return 0.0;
    const double m = mean(), var = sum2 / (double)n - m * m;
    return var > 0 ? std::sqrt(var / (double)(n - 1)) : 0.0;
}

double ppl_of(const MeanStats& nll) { return std::exp(nll.mean()); }
double ppl_err_of(const MeanStats& nll) { return ppl_of(nll) * nll.err(); }

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const double rank = p / 100.0 * (double)(v.size() - 1);
    const size_t lo = (size_t)std::floor(rank);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (rank - (double)lo) * (v[hi] - v[lo]);
}

void KldStats::add(const std::vector<double>& base_lp, double base_lp_target, int32_t base_top, const float* logits,
                   int32_t n_vocab, int32_t target) {
    log_softmax(logits, n_vocab, lq_);
    // KL(base || model) = sum_i p_i (ln p_i - ln q_i).
    double k = 0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        const double lp = base_lp[(size_t)i];
        k += std::exp(lp) * (lp - lq_[(size_t)i]);
    }
    kld.add(k);
    kld_values.push_back(k);
    const double lq_target = lq_[(size_t)target];
    nll_base.add(-base_lp_target);
    nll.add(-lq_target);
    nll_diff.add(base_lp_target - lq_target);
    dp.add(std::exp(lq_target) - std::exp(base_lp_target));
    if (argmax(logits, n_vocab) == base_top) ++same_top;
}

double KldStats::same_top_err() const {
    if (kld.n < 2) return 0.0;
    const double f = same_top_frac();
    return std::sqrt(f * (1 - f) / (double)(kld.n - 1));
}

}  // namespace cli
