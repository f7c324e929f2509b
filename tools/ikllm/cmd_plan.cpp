// `ikllm plan`: memory per device for a placement, and a placement suggestion for a VRAM budget,
// from the model file's index alone (ikllm_plan; docs/placement.md).
#include <cctype>
#include <cinttypes>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "json_reader.h"

namespace cli {

namespace {

// The streaming column only when a device has a buffer for streamed host weights (--offload-min-batch).
void print_devices(const JVal& devs) {
    bool stream = false;
    for (const JVal& d : devs.items) stream = stream || d["stream"].u64() > 0;
    std::printf("  %-8s %14s %14s %14s", "device", "weights", "KV cache", "scratch");
    if (stream) std::printf(" %14s", "streaming");
    std::printf(" %14s\n", "total");
    for (const JVal& d : devs.items) {
        std::printf("  %-8s %14s %14s %14s", d["name"].s.c_str(), mib(d["weights"].u64()).c_str(),
                    mib(d["kv"].u64()).c_str(), mib(d["scratch"].u64()).c_str());
        if (stream) std::printf(" %14s", mib(d["stream"].u64()).c_str());
        std::printf(" %14s\n", mib(d["total"].u64()).c_str());
    }
}

void print_report(const JVal& rep) {
    for (const JVal& line : rep.items) std::printf("  note: %s\n", line.s.c_str());
}

}  // namespace

int cmd_plan(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--json"});
    const std::string path = a.get("-m");
    if (path.empty()) die("plan: missing -m MODEL");
    Loaded L;  // only the library instance: the model is not loaded
    check(ikllm_lib_create(0, &L.lib), "init");
    ikllm_options* mo = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), "options");
    std::unique_ptr<ikllm_options, void (*)(ikllm_options*)> mo_guard(mo, ikllm_options_free);
    apply_placement_flags(a, mo);
    std::unique_ptr<ikllm_options, void (*)(ikllm_options*)> so(session_options(a), ikllm_options_free);
    uint64_t budget = 0;
    uint32_t flags = 0;
    if (a.has("--vram-budget")) {
        if (a.get("--vram-budget") == "auto") flags |= IKLLM_PLAN_AUTO_BUDGET;  // each GPU's free memory
        else budget = parse_bytes(a.get("--vram-budget"), "--vram-budget");
    }
    char* json = nullptr;
    check(ikllm_plan(L.lib, path.c_str(), mo, so.get(), budget, flags, &json), ("plan '" + path + "'").c_str());
    const std::string text = json;
    ikllm_free(json);
    if (a.has("--json")) {
        std::printf("%s\n", text.c_str());
        return 0;
    }
    JReader rd(text);
    const JVal plan = rd.value();
    std::printf("model        : %s (%s, %" PRIu64 " layers)\n", path.c_str(), plan["architecture"].s.c_str(),
                plan["n_layer"].u64());
    std::printf("context      : %" PRIu64 " tokens, batch %" PRIu64 ", KV %s (%" PRIu64 " bytes/token)\n",
                plan["n_ctx"].u64(), plan["n_batch"].u64(), plan["kv_type"].s.c_str(), plan["kv_bytes_per_token"].u64());
    if (plan["offload_min_batch"].u64() > 0)
        std::printf("streaming    : host weights of products on >= %" PRIu64 " tokens to the first GPU\n",
                    plan["offload_min_batch"].u64());
    const JVal& req = plan["requested"];
    // The shares as given (-ts); without it the library splits by free memory, load and plan alike.
    std::string split;
    for (const char* k : {"-ts", "--tensor-split"})
        if (a.has(k)) split = a.get(k);
    std::printf("\nrequested placement: n_gpu_layers %" PRIu64 ", rules '%s'%s%s\n", req["n_gpu_layers"].u64(),
                req["tensor_placement"].s.c_str(), split.empty() ? "" : ", tensor split ", split.c_str());
    print_devices(req["devices"]);
    print_report(req["report"]);
    std::string gpus;
    for (const JVal& g : plan["gpus"].items) gpus += (gpus.empty() ? "" : ", ") + g.s;
    const JVal& sug = plan["suggestion"];
    if (sug.kind == JVal::object) {
        std::string budgets;
        for (const JVal& b : sug["vram_budgets"].items) budgets += (budgets.empty() ? "" : " / ") + mib(b.u64());
        std::printf("\nsuggestion for %s within %s (%s): %s\n", gpus.c_str(), budgets.c_str(), sug["strategy"].s.c_str(),
                    sug["fits"].b ? "fits" : "does NOT fit");
        std::string rules = sug["tensor_placement"].s;
        std::printf("  -ngl %" PRIu64 "%s%s%s%s%s   (%" PRIu64 " MoE layers' experts on GPUs)\n", sug["n_gpu_layers"].u64(),
                    rules.empty() ? "" : " -ot '", rules.c_str(), rules.empty() ? "" : "'",
                    split.empty() ? "" : " -ts ", split.c_str(),
                    sug["expert_layers_on_gpu"].u64());
        print_devices(sug["devices"]);
        print_report(sug["report"]);
    }
    std::printf("\n(scratch is an estimate; %s %s)\n", plan["gpu_available"].b ? "GPUs of this machine:" : "planned for", gpus.c_str());
    return 0;
}

}  // namespace cli
