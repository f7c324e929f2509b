#include "document_pipeline.h"

#include <nlohmann/json.hpp>

#include "chunker.h"
#include "shard.h"

namespace batch {
namespace {

using nlohmann::json;
constexpr uint32_t kCombinePart = 0xFFFF;  // part number of the combine job in a job key

uint64_t make_key(uint64_t doc, uint32_t part) { return (doc << 16) | part; }

std::vector<ikllm_token> join(const std::vector<ikllm_token>& a, const std::vector<ikllm_token>& b) {
    std::vector<ikllm_token> r(a);
    r.insert(r.end(), b.begin(), b.end());
    return r;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \n\t\r"), e = s.find_last_not_of(" \n\t\r");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

int add_prefix(PromptSet& set, const std::vector<ikllm_token>& prefix) {
    for (size_t i = 0; i < set.prefixes.size(); ++i)
        if (set.prefixes[i] == prefix) return (int)i;
    set.prefixes.push_back(prefix);
    return (int)set.prefixes.size() - 1;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

PromptSet build_prompts(const PromptBuilder& builder, const Task& task) {
    PromptSet s;
    s.single = builder.build(task.instruction);
    s.map = builder.build(task.chunking.map_instruction);
    s.combine = builder.build(task.chunking.combine_instruction);
    // Fixed order, all made up front: the cache layout never depends on which documents came first.
    s.single_prefix = add_prefix(s, s.single.prefix);
    s.map_prefix = add_prefix(s, s.map.prefix);
    s.combine_prefix = add_prefix(s, s.combine.prefix);
    return s;
}

DocumentPipeline::DocumentPipeline(const Task& task, const PromptBuilder& builder, const PromptSet& prompts,
                                   RecordSink sink)
    : task_(task), builder_(builder), prompts_(prompts), sink_(std::move(sink)) {}

uint64_t DocumentPipeline::seed_for(const std::string& id, uint32_t part) const {
    // Depends on the task seed, the document and the part only: not on order or batch size.
    uint64_t h = id_hash(id) ^ (task_.seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)part << 40);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return h;
}

void DocumentPipeline::add(Document doc) {
    const auto started = std::chrono::steady_clock::now();
    if (!doc.error.empty()) {
        record_error(doc, doc.error, 0, 0, 0);
        return;
    }
    const std::vector<ikllm_token> toks = builder_.tokenize_document(doc.text);
    const ChunkingSettings& c = task_.chunking;
    const size_t windows = count_windows(toks.size(), c.chunk_tokens, c.overlap);
    if (toks.empty()) {
        record_error(doc, "document has no tokens", seconds_since(started), 0, 0);
        return;
    }
    if (windows > (size_t)c.max_chunks) {
        record_error(doc,
                     "document too long: " + std::to_string(toks.size()) + " tokens need " + std::to_string(windows) +
                         " chunks (max_chunks " + std::to_string(c.max_chunks) + ")",
                     seconds_since(started), 0, 0);
        return;
    }
    const uint64_t key = next_doc_++;
    DocState& d = docs_[key];
    d.started = started;
    d.parts = windows;
    d.outputs.resize(windows);
    if (windows == 1) {
        GenRequest r;
        r.key = make_key(key, 0);
        r.prefix = prompts_.single_prefix;
        r.prompt = join(toks, prompts_.single.suffix);
        r.max_tokens = task_.max_tokens;
        r.seed = seed_for(doc.id, 0);
        r.constrained = !task_.json_schema.empty();
        queue_.push_back(std::move(r));
    } else {
        const auto chunks = split_tokens(toks, c.chunk_tokens, c.overlap);
        for (uint32_t i = 0; i < chunks.size(); ++i) {
            GenRequest r;
            r.key = make_key(key, i);
            r.prefix = prompts_.map_prefix;
            r.prompt = join(chunks[i], prompts_.map.suffix);
            r.max_tokens = c.map_max_tokens;
            r.seed = seed_for(doc.id, i + 1);
            r.constrained = c.map_use_schema && !task_.json_schema.empty();
            queue_.push_back(std::move(r));
        }
    }
    d.doc = std::move(doc);
}

bool DocumentPipeline::next_job(GenRequest* out) {
    if (queue_.empty()) return false;
    *out = std::move(queue_.front());
    queue_.pop_front();
    return true;
}

void DocumentPipeline::on_result(GenResult r) {
    const uint64_t doc_key = r.key >> 16;
    const uint32_t part = (uint32_t)(r.key & 0xFFFF);
    auto it = docs_.find(doc_key);
    if (it == docs_.end()) return;
    DocState& d = it->second;
    d.tokens_in += r.tokens_in;
    d.tokens_out += r.tokens_out;
    if (!r.error.empty() && d.error.empty()) d.error = r.error;
    const bool constrained_step = !task_.json_schema.empty() && (part == kCombinePart || d.parts == 1 ||
                                                                 task_.chunking.map_use_schema);
    if (r.error.empty() && constrained_step && !r.grammar_complete)
        d.error = "output reached max_tokens (" + std::to_string(r.tokens_out) + ") before the JSON was complete";
    if (part == kCombinePart || d.parts == 1) {
        record(doc_key, d, r.text, r.grammar_complete);
        return;
    }
    d.outputs[part] = trim(r.text);
    if (++d.parts_done < d.parts) return;
    if (!d.error.empty()) {
        record(doc_key, d, "", false);
        return;
    }
    // Reduce: the chunk outputs, numbered, as the document of the combine instruction.
    std::string joined;
    for (size_t i = 0; i < d.outputs.size(); ++i)
        joined += (i ? "\n\n" : "") + std::string("Part ") + std::to_string(i + 1) + ":\n" + d.outputs[i];
    std::vector<ikllm_token> toks = builder_.tokenize_document(joined);
    // Too long for one step: keep the head (recursive reduction is not implemented).
    if ((int)toks.size() > task_.chunking.chunk_tokens) toks.resize((size_t)task_.chunking.chunk_tokens);
    GenRequest c;
    c.key = make_key(doc_key, kCombinePart);
    c.prefix = prompts_.combine_prefix;
    c.prompt = join(toks, prompts_.combine.suffix);
    c.max_tokens = task_.max_tokens;
    c.seed = seed_for(d.doc.id, kCombinePart);
    c.constrained = !task_.json_schema.empty();
    d.combining = true;
    queue_.push_front(std::move(c));  // finishing a started document first keeps memory flat
}

void DocumentPipeline::record_error(const Document& doc, const std::string& error, double seconds, int tokens_in,
                                    int tokens_out) {
    json j = {{"id", doc.id},        {"source", doc.source},         {"output", nullptr},
              {"tokens_in", tokens_in}, {"tokens_out", tokens_out}, {"seconds", seconds},
              {"error", error}};
    sink_.write(doc.id, j.dump(-1, ' ', false, json::error_handler_t::replace), true);
}

void DocumentPipeline::record(uint64_t doc_key, DocState& d, const std::string& text, bool) {
    const double seconds = seconds_since(d.started);
    if (!d.error.empty()) {
        record_error(d.doc, d.error, seconds, d.tokens_in, d.tokens_out);
    } else {
        const std::string output = trim(text);
        json j = {{"id", d.doc.id}, {"source", d.doc.source}, {"output", output}};
        std::string error;
        if (!task_.json_schema.empty()) {
            j["json"] = json::parse(output, nullptr, false);
            if (j["json"].is_discarded()) {
                j["json"] = nullptr;
                error = "output is not valid JSON";
            }
        }
        if (d.parts > 1) j["chunks"] = d.parts;
        j["tokens_in"] = d.tokens_in;
        j["tokens_out"] = d.tokens_out;
        j["seconds"] = seconds;
        j["error"] = error.empty() ? json(nullptr) : json(error);
        sink_.write(d.doc.id, j.dump(-1, ' ', false, json::error_handler_t::replace), !error.empty());
    }
    docs_.erase(doc_key);
}

}  // namespace batch
