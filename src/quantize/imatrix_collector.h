// Collects importance-matrix statistics while a session decodes: for every matrix product with
// a named weight, the sum of squares of each input column over all tokens seen. Handles plain
// products, the fused dense gate/up op and the expert op (per expert: the inputs of gate/up and,
// recomputed in f32, the hidden activations that enter down), so MoE files get expert entries.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "backend.h"
#include "quantize/imatrix_file.h"

namespace ikllm::quantize {

class ImatrixCollector final : public backend::OpObserver {
public:
    void before(const Op& op) override;
    // Snapshot as mean squares (for saving); `chunks` is recorded as the call count.
    Imatrix result(int32_t chunks, const std::string& dataset) const;

private:
    // Sums per column; for expert tensors one segment of ne0 columns per expert, each with its
    // own token count.
    struct Acc {
        int64_t seg = 0;
        std::vector<double> sum_sq;
        std::vector<int64_t> count;
    };
    Acc* entry(const char* name, int64_t ne0, int64_t n_seg);
    void add_rows(const char* name, const Tensor& x, int64_t n_seg = 1, int64_t seg = 0);
    void add_row(Acc& a, const float* row, int64_t seg);
    void experts(const Op& op);
    std::map<std::string, Acc, std::less<>> acc_;
};

}  // namespace ikllm::quantize
