// ikllm-batch: many documents through one model, fast (continuous batching with a shared
// instruction prefix), resumable (atomic result lines) and shardable (--shard K/N + merge).
#include <cstdio>
#include <exception>
#include <string>

#include "merge_command.h"
#include "run_command.h"

namespace {

const char* const kUsage =
    "usage:\n"
    "  ikllm-batch run --model M.gguf --input DIR|FILE.jsonl|FILE.csv --task TASK.json --out RESULTS.jsonl\n"
    "                  [--parallel N] [--resume] [--shard K/N] [--threads T] [--batch-tokens B] [--ctx C]\n"
    "                  [--no-batch-invariance]\n"
    "  ikllm-batch merge --out ALL.jsonl SHARD1.jsonl SHARD2.jsonl ...\n"
    "See samples/batch/README.md.\n";

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string cmd = argv[1];
    try {
        if (cmd == "run") return batch::run_command(argc - 2, argv + 2);
        if (cmd == "merge") return batch::merge_command(argc - 2, argv + 2);
        std::fprintf(stderr, "ikllm-batch: unknown command '%s'\n%s", cmd.c_str(), kUsage);
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ikllm-batch: %s\n", e.what());
        return 1;
    }
}
