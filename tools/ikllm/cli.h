// Shared helpers of the ikllm command-line tool. The tool uses only the public C API.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ikllm.h"

namespace cli {

// Parsed "-x value" / "--name value" / "--flag" arguments.
struct Args {
    std::map<std::string, std::vector<std::string>> opts;
    std::vector<std::string> positional;
    bool has(const std::string& k) const { return opts.count(k) > 0; }
    std::string get(const std::string& k, const std::string& def = "") const {
        auto it = opts.find(k);
        return it == opts.end() || it->second.empty() ? def : it->second.back();
    }
    long long get_int(const std::string& k, long long def) const;
    double get_float(const std::string& k, double def) const;
};

// flags: option names that take no value.
Args parse(int argc, char** argv, const std::vector<std::string>& flags);
[[noreturn]] void die(const std::string& msg);
// Exits with the library's error message when st != IKLLM_OK.
void check(ikllm_status st, const char* what);

struct Loaded {
    ikllm_lib* lib = nullptr;
    ikllm_model* model = nullptr;
    ~Loaded() {
        ikllm_model_free(model);
        ikllm_lib_free(lib);
    }
};
// Model options -ngl/--n-gpu-layers N and -ot/--override-tensor RULES (repeatable, joined with ',').
void apply_placement_flags(const Args& a, ikllm_options* model_options);
// "1073741824", "512M", "24GiB", "20GB": K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB
// powers of 1000; a fraction is allowed ("1.5G"). Exits with a message naming `what` otherwise.
uint64_t parse_bytes(const std::string& text, const char* what);
// Loads -m MODEL (progress on a terminal, logs at warn+ to stderr).
// inspect: the command only looks at the file (info, dequant): mapped unless --no-mmap, since
// use_mmap auto would read all of it.
void load(const Args& a, Loaded& out, const std::string& model_path = "", bool vocab_only = false, bool inspect = false);
std::vector<int32_t> read_ids(const std::string& path);
std::string read_file(const std::string& path);
// "12.34 MiB".
std::string mib(uint64_t bytes);
// Session options from -c/-t/-b/--kv-type.
ikllm_options* session_options(const Args& a, int n_seq = 1, int default_ctx = 4096);
// Sampler from --temp/--top-k/--top-p/--min-p/--typical/--repeat-penalty/--presence-penalty/
// --frequency-penalty/--repeat-last-n/--seed/--samplers.
ikllm_sampler* make_sampler(const Args& a, const ikllm_model* model);
// Token ids of text (IKLLM_TOKENIZE_* flags); exits on error.
std::vector<int32_t> tokenize(const ikllm_model* model, const std::string& text, uint32_t flags);

int cmd_run(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_dequant(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_imatrix(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_plan(int argc, char** argv);

}  // namespace cli
