// ikllm command-line tool: thin wrappers over the C API.
#include <cstring>

#include "cli.h"

static void usage() {
    std::fprintf(stderr,
                 "usage: ikllm COMMAND [options]\n"
                 "  run      -m MODEL -p PROMPT -n N [--temp T --top-k K --top-p P --min-p P --typical P\n"
                 "           --repeat-penalty R --presence-penalty R --frequency-penalty R --repeat-last-n N\n"
                 "           --seed S] [-t THREADS] [-c CTX]     stream generated text\n"
                 "           [--grammar G.gbnf [--grammar-root R] | --json-schema S.json]   constrained: stdout\n"
                 "           holds only the generated text; stops at end of generation or a complete grammar\n"
                 "  chat     -m MODEL [--system TEXT] [--template T.jinja] [--vars V.json] [-n N] [sampler options]\n"
                 "           [-t THREADS] [-c CTX]   interactive chat (stdin lines when piped; /reset, /exit)\n"
                 "  info     -m MODEL                          metadata and tensor table\n"
                 "  tokenize -m MODEL -f TEXT_FILE [--no-bos] [--special]\n"
                 "  logits   -m MODEL --tokens IDS --out OUT.f32 [--then IDS2 --then-out OUT2.f32] [-t N] [-c CTX] [--logits-from N]\n"
                 "  dequant  -m MODEL --tensor NAME --out OUT.f32\n"
                 "  quantize IN.gguf OUT.gguf TYPE [--pure] [--rule REGEX=TYPE]... [--imatrix FILE] [--repack]\n"
                 "           [--dry-run] [--allow-requantize] [--ignore-imatrix-rules] [-t N]\n"
                 "  imatrix  -m MODEL -f TEXT [-o FILE] [-c CHUNK] [--chunks N] [-t N]   importance matrix\n"
                 "  bench    -m MODEL [-p 512] [-n 128] [-t N] [-r REPS] [--format md|jsonl] [session options]\n"
                 "  bench    -m MODEL --sweep -c CTX [-ub U] [-t N] [--format md|jsonl]   speed vs context depth\n"
                 "  template --template T.jinja | -m MODEL [--name NAME] [--vars V.json] [--case C.json]\n"
                 "           [--date YYYY-MM-DD]   render a chat template (exit 2 on a template error)\n"
                 "  embed    -m MODEL -f FILE [--whole] | --tokens IDS  [--pooling none|mean|cls|last]\n"
                 "           [--normalize|--no-normalize] [--format json|tsv] [-t N]   one embedding per non-blank\n"
                 "           line (index = its rank among them), or per token with --pooling none (default pooling:\n"
                 "           the model's; pooled vectors are L2-normalised unless --no-normalize)\n"
                 "  perplexity -m MODEL -f TEXT [-c CTX] [-b BATCH] [--chunks N] [--format text|jsonl]\n"
                 "           [--kl-divergence-base FILE [--kl-divergence]]   perplexity / KL divergence vs a base\n"
                 "  plan     -m MODEL [-c CTX] [-b N] [-ctk TYPE] [-ngl N] [-ot RULES]... [-ts SHARES] [--vram-budget SIZE|auto]\n           [--json]\n"
                 "           memory per device (weights, KV cache, scratch) without loading the weights, and with\n"
                 "           --vram-budget the placement that fills the GPUs best, each within SIZE (bytes or 512M, 24G,\n"
                 "           24GiB, 20GB; auto: each GPU's free memory less a margin); without a GPU it plans for\n"
                 "           CUDA0 (or one GPU per -ts share)\n"
                 "  (model commands accept -rtr: repack weights to row-interleaved layouts at load, also from a\n"
                 "   mapping (default: a read copy, in place, the types this CPU runs faster so); --no-repack: never;\n"
                 "   -ngl/--n-gpu-layers N: last N layers on the GPU(s); -ts/--tensor-split 3,1: their shares per GPU\n"
                 "   (default: by free memory); -ot/--override-tensor REGEX=DEVICE[,...]: per-tensor device rules,\n"
                 "   repeatable, first match wins; see docs/placement.md)\n"
                 "  devices  the GPUs this build can use (CUDA plug-in), one JSON object each, or why there are none\n"
                 "  version\n");
}

int main(int argc, char** argv) {
    if (argc < 2) {
        usage();
        return 2;
    }
    const char* cmd = argv[1];
    if (!std::strcmp(cmd, "run")) return cli::cmd_run(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "info")) return cli::cmd_info(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "tokenize")) return cli::cmd_tokenize(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "logits")) return cli::cmd_logits(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "dequant")) return cli::cmd_dequant(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "quantize")) return cli::cmd_quantize(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "imatrix")) return cli::cmd_imatrix(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "bench")) return cli::cmd_bench(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "template")) return cli::cmd_template(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "embed")) return cli::cmd_embed(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "perplexity")) return cli::cmd_perplexity(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "chat")) return cli::cmd_chat(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "plan")) return cli::cmd_plan(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "devices")) {
        // The GPUs this build can use (the CUDA plug-in), or why there are none.
        ikllm_lib* lib = nullptr;
        if (ikllm_lib_create(0, &lib) != IKLLM_OK) return 1;
        std::printf("%s\n", ikllm_lib_gpu_status(lib));
        for (int32_t i = 0; i < ikllm_lib_gpu_count(lib); ++i) {
            char* json = nullptr;
            if (ikllm_lib_gpu_info(lib, i, &json) == IKLLM_OK) std::printf("%s\n", json);
            ikllm_free(json);
        }
        ikllm_lib_free(lib);
        return 0;
    }
    if (!std::strcmp(cmd, "version")) {
        std::printf("ikllm %s (ABI %d)\n", ikllm_version_string(), ikllm_abi_version());
        return 0;
    }
    if (!std::strcmp(cmd, "-h") || !std::strcmp(cmd, "--help") || !std::strcmp(cmd, "help")) {
        usage();
        return 0;
    }
    std::fprintf(stderr, "ikllm: unknown command '%s'\n", cmd);
    usage();
    return 2;
}
