#include "logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace server {

void compute_logprobs(const float* logits, int32_t n_vocab, int n_top, TokenEvent& ev) {
    // log softmax in double: ln p_i = l_i - max - ln(sum exp(l_j - max)).
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp((double)logits[i] - mx);
    const double lse = mx + std::log(sum);
    ev.logprob = (float)(logits[ev.token] - lse);
    if (n_top <= 0) return;
    std::vector<int32_t> idx(n_vocab);
    std::iota(idx.begin(), idx.end(), 0);
    const int k = std::min<int>(n_top, n_vocab);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (int i = 0; i < k; ++i) ev.top.push_back({idx[i], (float)(logits[idx[i]] - lse)});
}

}  // namespace server
