// Statistics of `ikllm perplexity`: perplexity from per-token negative log-likelihoods, and the
// comparison of a model's token distributions with a base model's (KL divergence etc.).
// Definitions and error formulas: docs/quality-tools.md.
#pragma once
#include <cstdint>
#include <vector>

namespace cli {

// out[i] = ln softmax(logits)[i], in double.
void log_softmax(const float* logits, int32_t n, std::vector<double>& out);
// Index of the largest value (the lowest index among equal maxima).
int32_t argmax(const float* v, int32_t n);

// Mean of a sample and the standard error of that mean, sqrt(var / (n - 1)) with the
// population variance var = E[x^2] - E[x]^2.
struct MeanStats {
    double sum = 0, sum2 = 0;
    int64_t n = 0;
    void add(double x) {
        sum += x;
        sum2 += x * x;
        ++n;
    }
    double mean() const { return n ? sum / (double)n : 0.0; }
    double rms() const;
    double err() const;  // 0 when n < 2
};

// PPL = exp(mean NLL); its error propagates the error of the mean: PPL * err(NLL).
double ppl_of(const MeanStats& nll);
double ppl_err_of(const MeanStats& nll);

// Percentile p in [0, 100] of values by linear interpolation between the sorted values at rank
// p/100 * (n - 1) (numpy's default method). values must not be empty.
double percentile(std::vector<double> values, double p);

// The quantized (or any second) model against the base, one scored position at a time.
struct KldStats {
    MeanStats nll_base, nll, nll_diff;  // nll_diff = nll - nll_base (paired)
    MeanStats kld, dp;                  // dp = p(target) - p_base(target)
    std::vector<double> kld_values;
    int64_t same_top = 0;
    // base_lp: the base's normalized log-probabilities; base_lp_target / base_top: its exact
    // log-probability of the target and its most likely token.
    void add(const std::vector<double>& base_lp, double base_lp_target, int32_t base_top, const float* logits,
             int32_t n_vocab, int32_t target);
    double same_top_frac() const { return kld.n ? (double)same_top / (double)kld.n : 0.0; }
    double same_top_err() const;

private:
    std::vector<double> lq_;  // scratch
};

}  // namespace cli
