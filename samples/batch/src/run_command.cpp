#include "run_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "batch_scheduler.h"
#include "cli_args.h"
#include "document_pipeline.h"
#include "input_reader.h"
#include "progress.h"
#include "prompt_builder.h"
#include "result_log.h"
#include "shard.h"
#include "task.h"

namespace batch {
namespace {

void log_to_stderr(void*, int32_t level, const char* msg) {
    std::fprintf(stderr, "ikllm-batch: [%s] %s\n", level >= IKLLM_LOG_ERROR ? "error" : "warn", msg);
}

// Owns the library and the model for the whole run.
struct LoadedModel {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    ~LoadedModel() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};

void load_model(const std::string& path, LoadedModel& m) {
    if (ikllm_lib_create(0, &m.lib) != IKLLM_OK) throw std::runtime_error(ikllm_last_error());
    ikllm_lib_set_log(m.lib, log_to_stderr, nullptr, IKLLM_LOG_WARN);
    if (ikllm_model_load(m.lib, path.c_str(), nullptr, nullptr, nullptr, nullptr, &m.model) != IKLLM_OK)
        throw std::runtime_error("cannot load model '" + path + "': " + ikllm_last_error());
}

std::string schema_to_grammar(const std::string& schema) {
    if (schema.empty()) return "";
    char* gbnf = nullptr;
    if (ikllm_json_schema_to_grammar(schema.c_str(), &gbnf) != IKLLM_OK)
        throw std::runtime_error(std::string("task json_schema: ") + ikllm_last_error());
    std::string g = gbnf;
    ikllm_free(gbnf);
    return g;
}

// Ids must be unique for resume and merge: later repeats get "#2", "#3", ...
void make_ids_unique(std::vector<InputItem>& items) {
    std::map<std::string, int> seen;
    for (auto& it : items) {
        const int n = ++seen[it.id];
        if (n > 1) {
            std::fprintf(stderr, "ikllm-batch: warning: id '%s' repeats (%s); renamed '%s#%d'\n", it.id.c_str(),
                         it.source.c_str(), it.id.c_str(), n);
            it.id += '#';
            it.id += std::to_string(n);
        }
    }
}

}  // namespace

int run_command(int argc, char** argv) {
    const CliArgs a = parse_args(argc, argv,
                                 {"--model", "--input", "--task", "--out", "--parallel", "--shard", "--threads",
                                  "--batch-tokens", "--ctx"},
                                 {"--resume", "--no-batch-invariance"});
    for (const char* k : {"--model", "--input", "--task", "--out"})
        if (!a.has(k)) throw std::runtime_error(std::string("run: missing ") + k);
    const int parallel = (int)a.get_int("--parallel", 4, 1, 250);
    const Shard shard = a.has("--shard") ? parse_shard(a.get("--shard")) : Shard{};
    const Task task = load_task(a.get("--task"));

    InputOptions in_opts;
    in_opts.id_field = task.id_field;
    in_opts.text_field = task.text_field;
    in_opts.max_document_bytes = task.max_document_bytes;
    std::vector<InputItem> all = list_inputs(a.get("--input"), in_opts);
    // The results file may live inside the input folder: it is not a document.
    std::error_code ec;
    const auto out_path = std::filesystem::weakly_canonical(a.get("--out"), ec);
    std::erase_if(all, [&](const InputItem& it) {
        std::error_code e2;
        return !it.path.empty() && std::filesystem::weakly_canonical(it.path, e2) == out_path;
    });
    make_ids_unique(all);

    // Everything that can fail on bad settings comes before the results file is touched.
    LoadedModel lm;
    load_model(a.get("--model"), lm);
    const PromptBuilder builder(lm.model, task.chat_template, task.system);
    const PromptSet prompts = build_prompts(builder, task);

    const std::string grammar = schema_to_grammar(task.json_schema);

    ResultLog log(a.get("--out"), a.has("--resume"));
    std::vector<InputItem> items;
    size_t skipped = 0;
    for (auto& it : all) {
        if (!in_shard(shard, it.id)) continue;
        if (log.done().count(it.id)) {
            ++skipped;
            continue;
        }
        items.push_back(std::move(it));
    }
    std::fprintf(stderr, "ikllm-batch: %zu documents in the input, %zu in shard %u/%u, %zu already done, %zu to do\n",
                 all.size(), items.size() + skipped, shard.index, shard.count, skipped, items.size());

    SchedulerConfig sc;
    sc.parallel = parallel;
    sc.n_threads = (int)a.get_int("--threads", 0, 0, 1024);
    sc.batch_invariant = !a.has("--no-batch-invariance");
    sc.batch_tokens = (int)a.get_int("--batch-tokens", 512, 16, 65536);
    sc.sampling = task.sampling;
    sc.grammar = grammar;
    // Room for every slot's longest job (a chunk or the combine input, its suffix, its output)
    // next to the shared prefixes; a batch's worth of slack for the allocator.
    size_t suffix = std::max({prompts.single.suffix.size(), prompts.map.suffix.size(), prompts.combine.suffix.size()});
    size_t per_slot = (size_t)task.chunking.chunk_tokens + suffix +
                      (size_t)std::max(task.max_tokens, task.chunking.map_max_tokens) + 1;
    size_t prefix_cells = 0;
    for (auto& p : prompts.prefixes) prefix_cells += p.size();
    sc.n_ctx = (int)a.get_int("--ctx", (long long)(prefix_cells + per_slot * parallel + sc.batch_tokens), 64, 16777216);
    const int n_ctx_train = ikllm_model_n_ctx_train(lm.model);
    if (n_ctx_train > 0 && prefix_cells + per_slot > (size_t)n_ctx_train)
        std::fprintf(stderr, "ikllm-batch: warning: a job may reach position %zu, past the model's training context %d\n",
                     prefix_cells + per_slot, n_ctx_train);
    BatchScheduler sched(lm.model, sc, prompts.prefixes);

    size_t done = 0, errors = 0;
    Progress progress(items.size(), skipped);
    RecordSink sink{[&](const std::string& id, const std::string& line, bool is_error) {
        log.append(line, id);
        ++done;
        errors += is_error;
    }};
    DocumentPipeline pipeline(task, builder, prompts, sink);

    size_t next = 0;
    std::vector<GenResult> finished;
    for (;;) {
        // Keep every slot busy: queued jobs first (they finish started documents), then new documents.
        while (sched.has_free_slot()) {
            GenRequest r;
            if (pipeline.next_job(&r)) sched.start(std::move(r));
            else if (next < items.size()) pipeline.add(load_document(items[next++], in_opts));
            else break;
        }
        if (!sched.busy()) break;
        finished.clear();
        sched.step(finished);
        for (auto& r : finished) pipeline.on_result(std::move(r));
        progress.update(done, errors, sched.prompt_tokens(), sched.generated_tokens());
    }
    progress.finish(done, errors, sched.prompt_tokens(), sched.generated_tokens());
    return 0;
}

}  // namespace batch
