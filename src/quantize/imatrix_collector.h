// Collects importance-matrix statistics while a session decodes: for every matrix product with
// a named weight, the sum of squares of each input column over all tokens seen.
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
    struct Acc {
        std::vector<double> sum_sq;
        int64_t count = 0;
    };
    std::map<std::string, Acc, std::less<>> acc_;
};

}  // namespace ikllm::quantize
