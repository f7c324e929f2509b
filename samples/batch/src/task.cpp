#include "task.h"

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace batch {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("task file: " + msg); }

std::string get_string(const json& j, const char* key, const std::string& def) {
    if (!j.contains(key)) return def;
    if (!j[key].is_string()) fail(std::string("'") + key + "' must be a string");
    return j[key].get<std::string>();
}

int64_t get_int(const json& j, const char* key, int64_t def, int64_t lo, int64_t hi) {
    if (!j.contains(key)) return def;
    if (!j[key].is_number_integer()) fail(std::string("'") + key + "' must be an integer");
    const int64_t v = j[key].get<int64_t>();
    if (v < lo || v > hi)
        fail(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
}

// Sampling keys accepted at the top level or inside "sampling", with their ikllm option names.
const std::map<std::string, std::string>& sampling_keys() {
    static const std::map<std::string, std::string> keys = {
        {"temperature", "temperature"}, {"top_k", "top_k"}, {"top_p", "top_p"}, {"min_p", "min_p"},
        {"typical_p", "typical_p"}, {"repeat_penalty", "repeat_penalty"}, {"presence_penalty", "presence_penalty"},
        {"frequency_penalty", "frequency_penalty"}, {"penalty_last_n", "penalty_last_n"}, {"chain", "chain"}};
    return keys;
}

void read_sampling(const json& j, Task& t) {
    for (auto& [k, v] : j.items()) {
        const auto it = sampling_keys().find(k);
        if (it == sampling_keys().end()) continue;
        if (v.is_string()) t.sampling[it->second] = v.get<std::string>();
        else if (v.is_number()) t.sampling[it->second] = v.dump();
        else fail("'" + k + "' must be a number");
    }
}

}  // namespace

std::string instruction_without_placeholder(const std::string& instruction) {
    std::string s = instruction;
    const size_t p = s.find("{document}");
    if (p != std::string::npos) s.erase(p, 10);
    // Trim what is left around the hole.
    const size_t b = s.find_first_not_of(" \n\t:"), e = s.find_last_not_of(" \n\t:");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Task load_task(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read task file '" + path + "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    json j;
    try {
        j = json::parse(ss.str());
    } catch (const json::parse_error& e) {
        fail(std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object()) fail("must be a JSON object");
    static const std::set<std::string> known = {
        "instruction", "system", "template", "max_tokens", "seed", "sampling", "json_schema", "chunking",
        "id_field", "text_field", "max_document_bytes", "temperature", "top_k", "top_p", "min_p", "typical_p",
        "repeat_penalty", "presence_penalty", "frequency_penalty", "penalty_last_n", "chain"};
    for (auto& [k, v] : j.items())
        if (!known.count(k)) fail("unknown key '" + k + "'");

    Task t;
    t.instruction = get_string(j, "instruction", "");
    if (t.instruction.empty()) fail("'instruction' is required");
    if (t.instruction.find("{document}") == std::string::npos) t.instruction += "\n\n{document}";
    t.system = get_string(j, "system", "");
    t.chat_template = get_string(j, "template", "");
    t.max_tokens = (int)get_int(j, "max_tokens", t.max_tokens, 1, 1 << 20);
    t.seed = (uint64_t)get_int(j, "seed", (int64_t)t.seed, 0, INT64_MAX);
    read_sampling(j, t);
    if (j.contains("sampling")) {
        if (!j["sampling"].is_object()) fail("'sampling' must be an object");
        for (auto& [k, v] : j["sampling"].items())
            if (!sampling_keys().count(k)) fail("unknown sampling key '" + k + "'");
        read_sampling(j["sampling"], t);
    }
    if (j.contains("json_schema")) {
        const json& s = j["json_schema"];
        if (s.is_string()) t.json_schema = s.get<std::string>();  // schema given as text
        else if (s.is_object()) t.json_schema = s.dump();
        else fail("'json_schema' must be an object");
    }
    t.id_field = get_string(j, "id_field", t.id_field);
    t.text_field = get_string(j, "text_field", t.text_field);
    t.max_document_bytes = (uint64_t)get_int(j, "max_document_bytes", (int64_t)t.max_document_bytes, 1, INT64_MAX);

    ChunkingSettings& c = t.chunking;
    if (j.contains("chunking")) {
        const json& cj = j["chunking"];
        if (!cj.is_object()) fail("'chunking' must be an object");
        static const std::set<std::string> ck = {"chunk_tokens", "overlap", "max_chunks", "map_instruction",
                                                 "map_max_tokens", "map_use_schema", "combine_instruction"};
        for (auto& [k, v] : cj.items())
            if (!ck.count(k)) fail("unknown chunking key '" + k + "'");
        c.chunk_tokens = (int)get_int(cj, "chunk_tokens", c.chunk_tokens, 16, 1 << 20);
        c.overlap = (int)get_int(cj, "overlap", c.overlap, 0, c.chunk_tokens / 2);
        c.max_chunks = (int)get_int(cj, "max_chunks", c.max_chunks, 1, 100000);
        c.map_instruction = get_string(cj, "map_instruction", "");
        c.map_max_tokens = (int)get_int(cj, "map_max_tokens", 0, 0, 1 << 20);
        if (cj.contains("map_use_schema")) {
            if (!cj["map_use_schema"].is_boolean()) fail("'map_use_schema' must be true or false");
            c.map_use_schema = cj["map_use_schema"].get<bool>();
        }
        c.combine_instruction = get_string(cj, "combine_instruction", "");
    }
    if (c.map_instruction.empty()) c.map_instruction = t.instruction;
    if (c.map_instruction.find("{document}") == std::string::npos) c.map_instruction += "\n\n{document}";
    if (c.map_max_tokens == 0) c.map_max_tokens = t.max_tokens;
    if (c.combine_instruction.empty())
        c.combine_instruction = "Task: " + instruction_without_placeholder(t.instruction) +
                                "\n\nThe document was too long to read at once, so it was read in parts. "
                                "The results for its parts, in order:\n\n{document}\n\n"
                                "Combine them into one answer for the whole document.";
    if (c.combine_instruction.find("{document}") == std::string::npos) c.combine_instruction += "\n\n{document}";
    return t;
}

}  // namespace batch
