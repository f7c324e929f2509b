#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli.h"

namespace cli {

long long Args::get_int(const std::string& k, long long def) const {
    if (!has(k)) return def;
    const std::string v = get(k);
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno) die("option " + k + " expects an integer, got '" + v + "'");
    return x;
}
double Args::get_float(const std::string& k, double def) const {
    if (!has(k)) return def;
    const std::string v = get(k);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end) die("option " + k + " expects a number, got '" + v + "'");
    return x;
}

Args parse(int argc, char** argv, const std::vector<std::string>& flags) {
    Args a;
    for (int i = 0; i < argc; ++i) {
        std::string s = argv[i];
        if (s.size() > 1 && s[0] == '-' && !(s.size() > 1 && std::isdigit((unsigned char)s[1]))) {
            // Flags every command understands (model loading, logging) plus the command's own.
            bool is_flag = s == "--verbose" || s == "--no-mmap" || s == "--mmap" || s == "-rtr" || s == "--run-time-repack" || s == "--no-repack" ||
                           s == "--huge-pages" || s == "--no-huge-pages" || s == "--batch-invariant" || s == "--prefault" ||
                           s == "--no-prefault";
            for (auto& f : flags) is_flag |= f == s;
            if (is_flag) {
                a.opts[s];
            } else {
                if (i + 1 >= argc) die("option " + s + " needs a value");
                a.opts[s].push_back(argv[++i]);
            }
        } else {
            a.positional.push_back(s);
        }
    }
    return a;
}

void die(const std::string& msg) {
    std::fprintf(stderr, "ikllm: %s\n", msg.c_str());
    std::exit(1);
}

void check(ikllm_status st, const char* what) {
    if (st != IKLLM_OK) die(std::string(what) + ": " + ikllm_last_error() + " [" + ikllm_status_name(st) + "]");
}

static void log_to_stderr(void*, int32_t level, const char* msg) {
    static const char* names[] = {"debug", "info", "warn", "error"};
    std::fprintf(stderr, "[%s] %s\n", names[level & 3], msg);
}

static int32_t progress_bar(void* user, float p) {
    if (!*static_cast<bool*>(user)) return 0;
    const int w = 30, n = (int)(p * w);
    std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%", n, "##############################", w - n, "", (int)(p * 100));
    if (p >= 1.0f) std::fprintf(stderr, "\r%*s\r", w + 20, "");
    return 0;
}

void apply_placement_flags(const Args& a, ikllm_options* mo) {
    for (const char* k : {"-ngl", "--n-gpu-layers", "--gpu-layers"})
        if (a.has(k)) check(ikllm_options_set_int(mo, "n_gpu_layers", a.get_int(k, 0)), (std::string("option ") + k).c_str());
    // -ot / --override-tensor may repeat: the rules are joined in order (first match wins).
    std::string rules;
    for (const char* k : {"-ot", "--override-tensor"}) {
        auto it = a.opts.find(k);
        if (it == a.opts.end()) continue;
        for (const std::string& r : it->second) rules += (rules.empty() ? "" : ",") + r;
    }
    if (!rules.empty()) check(ikllm_options_set_string(mo, "tensor_placement", rules.c_str()), "option -ot");
    for (const char* k : {"-ts", "--tensor-split"})
        if (a.has(k)) check(ikllm_options_set_string(mo, "tensor_split", a.get(k).c_str()), (std::string("option ") + k).c_str());
}

uint64_t parse_bytes(const std::string& text, const char* what) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    std::string suf = end ? end : "";
    for (char& c : suf) c = (char)std::toupper((unsigned char)c);
    double mul = 0;
    if (suf.empty() || suf == "B") mul = 1;
    else if (suf == "K" || suf == "KIB") mul = 1024.0;
    else if (suf == "M" || suf == "MIB") mul = 1024.0 * 1024;
    else if (suf == "G" || suf == "GIB") mul = 1024.0 * 1024 * 1024;
    else if (suf == "T" || suf == "TIB") mul = 1024.0 * 1024 * 1024 * 1024;
    else if (suf == "KB") mul = 1e3;
    else if (suf == "MB") mul = 1e6;
    else if (suf == "GB") mul = 1e9;
    else if (suf == "TB") mul = 1e12;
    if (text.empty() || end == text.c_str() || errno || mul == 0 || !(v >= 0) || v * mul > 1.8e19)
        die(std::string("option ") + what + " expects a size (bytes, or with K/M/G/T = KiB/MiB/GiB/TiB or KB/MB/GB/TB), got '" +
            text + "'");
    return (uint64_t)(v * mul);
}

void load(const Args& a, Loaded& out, const std::string& model_path, bool vocab_only, bool inspect) {
    const std::string path = model_path.empty() ? a.get("-m") : model_path;
    if (path.empty()) die("missing -m MODEL");
    check(ikllm_lib_create(0, &out.lib), "init");
    ikllm_lib_set_log(out.lib, log_to_stderr, nullptr, a.has("--verbose") ? IKLLM_LOG_INFO : IKLLM_LOG_WARN);
    bool tty = isatty(2);
    ikllm_options* mo = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_MODEL, &mo), "options");
    if (vocab_only) check(ikllm_options_set_int(mo, "vocab_only", 1), "option vocab_only");
    if (a.has("--no-mmap")) check(ikllm_options_set_int(mo, "use_mmap", 0), "option use_mmap");
    if (a.has("--mmap") || (inspect && !a.has("--no-mmap"))) check(ikllm_options_set_int(mo, "use_mmap", 1), "option use_mmap");
    if (a.has("-rtr") || a.has("--run-time-repack")) check(ikllm_options_set_int(mo, "repack", 1), "option repack");
    if (a.has("--no-repack")) check(ikllm_options_set_int(mo, "repack", 0), "option repack");
    // Host weights streamed to a GPU for big batches go as stored, in a type the GPU runs: with
    // --offload-min-batch, auto repack (which would convert the CPU's experts) stays off.
    if (a.get_int("--offload-min-batch", 0) > 0 && !a.has("-rtr") && !a.has("--run-time-repack") && !a.has("--no-repack"))
        check(ikllm_options_set_int(mo, "repack", 0), "option repack");
    if (a.has("--huge-pages")) check(ikllm_options_set_int(mo, "huge_pages", 1), "option --huge-pages");
    if (a.has("--no-huge-pages")) check(ikllm_options_set_int(mo, "huge_pages", 0), "option --no-huge-pages");
    if (a.has("--prefault") && !a.has("--no-prefault")) check(ikllm_options_set_int(mo, "prefault", 1), "option --prefault");
    if (a.has("--numa")) check(ikllm_options_set_string(mo, "numa", a.get("--numa").c_str()), "option --numa");
    apply_placement_flags(a, mo);
    ikllm_status st = ikllm_model_load(out.lib, path.c_str(), mo, progress_bar, &tty, nullptr, &out.model);
    ikllm_options_free(mo);
    check(st, ("cannot load model '" + path + "'").c_str());
}

std::vector<int32_t> read_ids(const std::string& path) {
    std::ifstream f(path);
    if (!f) die("cannot read '" + path + "'");
    std::vector<int32_t> ids;
    std::string tok;
    while (f >> tok) {
        char* end = nullptr;
        long v = std::strtol(tok.c_str(), &end, 10);
        if (*end) die("'" + path + "' contains a non-integer token id '" + tok + "'");
        ids.push_back((int32_t)v);
    }
    return ids;
}

std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MiB", (double)bytes / (1024.0 * 1024.0));
    return buf;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) die("cannot read '" + path + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

ikllm_options* session_options(const Args& a, int n_seq, int default_ctx) {
    ikllm_options* so = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_SESSION, &so), "options");
    check(ikllm_options_set_int(so, "n_ctx", a.get_int("-c", default_ctx)), "option -c");
    check(ikllm_options_set_int(so, "n_seq_max", n_seq), "option n_seq_max");
    if (a.has("-t")) check(ikllm_options_set_int(so, "n_threads", a.get_int("-t", 0)), "option -t");
    if (a.has("-b")) check(ikllm_options_set_int(so, "n_batch", a.get_int("-b", 512)), "option -b");
    if (a.has("--kv-type")) check(ikllm_options_set_string(so, "kv_type", a.get("--kv-type").c_str()), "option --kv-type");
    if (a.has("-ctk")) check(ikllm_options_set_string(so, "kv_type", a.get("-ctk").c_str()), "option -ctk");
    if (a.has("--ser")) check(ikllm_options_set_string(so, "ser", a.get("--ser").c_str()), "option --ser");
    if (a.has("-ser")) check(ikllm_options_set_string(so, "ser", a.get("-ser").c_str()), "option -ser");
    if (a.has("-amb")) check(ikllm_options_set_float(so, "attn_scratch_mib", a.get_float("-amb", 0)), "option -amb");
    if (a.has("--attn-scratch-mib"))
        check(ikllm_options_set_float(so, "attn_scratch_mib", a.get_float("--attn-scratch-mib", 0)),
              "option --attn-scratch-mib");
    if (a.has("--batch-invariant")) check(ikllm_options_set_int(so, "batch_invariant", 1), "option --batch-invariant");
    if (a.has("--mla-expand-min-batch"))
        check(ikllm_options_set_int(so, "mla_expand_min_batch", a.get_int("--mla-expand-min-batch", 128)),
              "option --mla-expand-min-batch");
    if (a.has("--offload-min-batch"))
        check(ikllm_options_set_int(so, "offload_min_batch", a.get_int("--offload-min-batch", 0)), "option --offload-min-batch");
    return so;
}

ikllm_sampler* make_sampler(const Args& a, const ikllm_model* model) {
    ikllm_options* sp = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &sp), "options");
    const std::pair<const char*, const char*> map[] = {
        {"--temp", "temperature"}, {"--top-k", "top_k"}, {"--top-p", "top_p"}, {"--min-p", "min_p"},
        {"--typical", "typical_p"}, {"--repeat-penalty", "repeat_penalty"}, {"--presence-penalty", "presence_penalty"},
        {"--frequency-penalty", "frequency_penalty"}, {"--repeat-last-n", "penalty_last_n"}, {"--seed", "seed"},
        {"--samplers", "chain"}};
    for (auto& [flag, key] : map)
        if (a.has(flag)) check(ikllm_options_set_from_text(sp, key, a.get(flag).c_str()), flag);
    // Constrained sampling: a GBNF grammar or a JSON schema, read from files.
    if (a.has("--grammar") && a.has("--json-schema")) die("--grammar and --json-schema are exclusive");
    if (a.has("--grammar")) check(ikllm_options_set_string(sp, "grammar", read_file(a.get("--grammar")).c_str()), "--grammar");
    if (a.has("--grammar-root"))
        check(ikllm_options_set_string(sp, "grammar_root", a.get("--grammar-root").c_str()), "--grammar-root");
    if (a.has("--json-schema"))
        check(ikllm_options_set_string(sp, "json_schema", read_file(a.get("--json-schema")).c_str()), "--json-schema");
    ikllm_sampler* smp = nullptr;
    const ikllm_status st = ikllm_sampler_create(model, sp, &smp);
    ikllm_options_free(sp);
    check(st, "sampler");
    return smp;
}

std::vector<int32_t> tokenize(const ikllm_model* model, const std::string& text, uint32_t flags) {
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st != IKLLM_ERR_BUFFER_TOO_SMALL && st != IKLLM_OK) check(st, "tokenize");
    std::vector<int32_t> toks(n);
    check(ikllm_tokenize(model, text.data(), text.size(), flags, toks.data(), toks.size(), &n), "tokenize");
    toks.resize(n);
    return toks;
}

}  // namespace cli
