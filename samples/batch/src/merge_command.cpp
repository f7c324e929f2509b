#include "merge_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_args.h"

namespace batch {

int merge_command(int argc, char** argv) {
    const CliArgs a = parse_args(argc, argv, {"--out"}, {});
    if (!a.has("--out") || a.positional.empty())
        throw std::runtime_error("usage: ikllm-batch merge --out ALL.jsonl SHARD.jsonl [SHARD.jsonl...]");
    // id -> record line. A document that appears twice keeps its successful record, else the first.
    std::map<std::string, std::pair<std::string, bool>> records;
    size_t lines = 0, duplicates = 0, torn = 0;
    for (const auto& path : a.positional) {
        std::ifstream f(path, std::ios::binary);
        if (!f) throw std::runtime_error("cannot read '" + path + "'");
        std::string line;
        while (std::getline(f, line)) {
            const bool complete = !f.eof();  // the last line without '\n' may be a torn write
            const auto j = nlohmann::json::parse(line, nullptr, false);
            if (!complete || j.is_discarded() || !j.is_object() || !j.contains("id") || !j["id"].is_string()) {
                if (!line.empty()) ++torn;
                continue;
            }
            ++lines;
            const std::string id = j["id"].get<std::string>();
            const bool ok = !j.contains("error") || j["error"].is_null();
            auto it = records.find(id);
            if (it == records.end()) {
                records.emplace(id, std::make_pair(line, ok));
            } else {
                ++duplicates;
                if (ok && !it->second.second) it->second = {line, ok};
            }
        }
    }
    // Written beside the target and renamed: readers never see a half-merged file.
    const std::string out = a.get("--out"), tmp = out + ".tmp";
    {
        std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
        if (!o) throw std::runtime_error("cannot write '" + tmp + "'");
        for (auto& [id, rec] : records) o << rec.first << '\n';
        o.flush();
        if (!o) throw std::runtime_error("cannot write '" + tmp + "'");
    }
    std::filesystem::rename(tmp, out);
    std::fprintf(stderr, "ikllm-batch merge: %zu records from %zu files -> %zu documents in %s", lines,
                 a.positional.size(), records.size(), out.c_str());
    if (duplicates) std::fprintf(stderr, " (%zu duplicate records dropped)", duplicates);
    if (torn) std::fprintf(stderr, " (%zu unreadable lines skipped)", torn);
    std::fprintf(stderr, "\n");
    return 0;
}

}  // namespace batch
