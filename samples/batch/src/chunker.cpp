#include "chunker.h"

#include <algorithm>

namespace batch {

size_t count_windows(size_t n, int size, int overlap) {
    if (n <= (size_t)size) return 1;
    const size_t step = (size_t)std::max(1, size - overlap);
    return 1 + (n - (size_t)size + step - 1) / step;
}

std::vector<std::vector<ikllm_token>> split_tokens(const std::vector<ikllm_token>& t, int size, int overlap) {
    std::vector<std::vector<ikllm_token>> out;
    const size_t step = (size_t)std::max(1, size - overlap);
    for (size_t start = 0;; start += step) {
        const size_t end = std::min(t.size(), start + (size_t)size);
        out.emplace_back(t.begin() + (std::ptrdiff_t)start, t.begin() + (std::ptrdiff_t)end);
        if (end == t.size()) break;
    }
    return out;
}

}  // namespace batch
