// Per-document work: one generation job for a short document; for a long one, a job per
// overlapping chunk (map) and then a combine job over their outputs (reduce). Produces the
// document's result record.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "batch_scheduler.h"
#include "document.h"
#include "prompt_builder.h"
#include "task.h"

namespace batch {

// The prompts of the three kinds of job; equal prefixes share one prefix index.
struct PromptSet {
    PromptParts single, map, combine;
    int single_prefix = 0, map_prefix = 0, combine_prefix = 0;
    std::vector<std::vector<ikllm_token>> prefixes;  // distinct, in prefix-index order
};
PromptSet build_prompts(const PromptBuilder& builder, const Task& task);

struct RecordSink {
    // Receives each finished document's JSON line.
    std::function<void(const std::string& id, const std::string& json_line, bool is_error)> write;
};

class DocumentPipeline {
  public:
    DocumentPipeline(const Task& task, const PromptBuilder& builder, const PromptSet& prompts, RecordSink sink);

    // Starts a document: bad ones are recorded at once, good ones queue their jobs.
    void add(Document doc);
    // Next job to run, if any.
    bool next_job(GenRequest* out);
    size_t queued_jobs() const { return queue_.size(); }
    // Routes a finished job; may queue the combine job or record the document.
    void on_result(GenResult result);
    bool idle() const { return docs_.empty() && queue_.empty(); }

  private:
    struct DocState {
        Document doc;
        std::chrono::steady_clock::time_point started;
        size_t parts = 0, parts_done = 0;
        std::vector<std::string> outputs;
        int tokens_in = 0, tokens_out = 0;
        bool combining = false;
        std::string error;
    };
    uint64_t seed_for(const std::string& id, uint32_t part) const;
    void record(uint64_t doc_key, DocState& d, const std::string& output, bool grammar_complete);
    void record_error(const Document& doc, const std::string& error, double seconds, int tokens_in, int tokens_out);

    const Task& task_;
    const PromptBuilder& builder_;
    const PromptSet& prompts_;
    RecordSink sink_;
    std::map<uint64_t, DocState> docs_;
    std::deque<GenRequest> queue_;
    uint64_t next_doc_ = 0;
};

}  // namespace batch
