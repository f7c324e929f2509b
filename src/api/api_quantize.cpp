// C boundary for quantization: translates options into QuantizeParams and the C callback.
#include <sstream>
#include <thread>

#include "api/api_internal.h"
#include "api/options.h"
#include "quantize/quantizer.h"

using namespace ikllm;

extern "C" {

ikllm_status ikllm_quantize(ikllm_lib* lib, const char* in_path, const char* out_path, const ikllm_options* options,
                            ikllm_quantize_tensor_fn on_tensor, void* user_data, uint64_t* out_before,
                            uint64_t* out_after) {
    if (out_before) *out_before = 0;
    if (out_after) *out_after = 0;
    return api::guard([&] {
        IKLLM_REQUIRE(lib, "lib is NULL");
        IKLLM_REQUIRE(in_path, "in_path is NULL");
        IKLLM_REQUIRE(!options || options->kind == IKLLM_OPTIONS_QUANTIZE, "options are not quantize options");
        const int32_t K = IKLLM_OPTIONS_QUANTIZE;
        quantize::QuantizeParams p;
        p.plan.target = api::opt_string(options, K, "type");
        p.plan.pure = api::opt_int(options, K, "pure") != 0;
        p.plan.repack = api::opt_int(options, K, "repack") != 0;
        p.plan.ignore_imatrix_rules = api::opt_int(options, K, "ignore_imatrix_rules") != 0;
        std::istringstream rules(api::opt_string(options, K, "rules"));
        for (std::string line; std::getline(rules, line);)
            if (!line.empty()) p.plan.rules.push_back(quantize::parse_rule(line));
        p.imatrix_path = api::opt_string(options, K, "imatrix");
        p.dry_run = api::opt_int(options, K, "dry_run") != 0;
        p.allow_requantize = api::opt_int(options, K, "allow_requantize") != 0;
        p.n_threads = (int)api::opt_int(options, K, "n_threads");
        if (p.n_threads <= 0) p.n_threads = lib->default_threads;
        if (p.n_threads <= 0) p.n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
        IKLLM_REQUIRE(p.dry_run || out_path, "out_path is NULL");
        quantize::ReportFn report;
        if (on_tensor)
            report = [&](const quantize::TensorReport& r) {
                return on_tensor(user_data, r.name, (int32_t)r.from_type, (int32_t)r.to_type, r.bytes_before,
                                 r.bytes_after, r.note, r.progress) == 0;
            };
        const quantize::QuantizeTotals t =
            quantize::quantize_file(in_path, out_path ? out_path : "", p, report, lib->log);
        if (out_before) *out_before = t.bytes_before;
        if (out_after) *out_after = t.bytes_after;
    });
}

}  // extern "C"
