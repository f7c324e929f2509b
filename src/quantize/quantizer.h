// `ikllm quantize`: reads a GGUF model, chooses each tensor's type (quant_plan.h), converts the
// rows in parallel and streams the result into a new GGUF file that appears under its final
// name only when complete.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/log.h"
#include "quantize/quant_plan.h"

namespace ikllm::quantize {

struct QuantizeParams {
    PlanParams plan;
    std::string imatrix_path;     // "" = none
    bool dry_run = false;         // plan and report only; nothing is written
    bool allow_requantize = false;// accept already-quantized input tensors (with a warning)
    int n_threads = 1;
};

struct TensorReport {
    const char* name;
    uint32_t from_type, to_type;
    uint64_t bytes_before, bytes_after;
    const char* note;   // "" or why the type differs from the plan / a warning
    float progress;     // fraction of the input's bytes done, 0..1
};
// Return false to cancel (the output is not written).
using ReportFn = std::function<bool(const TensorReport&)>;

struct QuantizeTotals {
    uint64_t bytes_before = 0, bytes_after = 0;
    uint64_t n_elements = 0;
    int n_quantized = 0, n_copied = 0;
};

QuantizeTotals quantize_file(const std::string& in_path, const std::string& out_path, QuantizeParams& params,
                             const ReportFn& report, const Logger& log);

}  // namespace ikllm::quantize
