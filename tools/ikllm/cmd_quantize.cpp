// ikllm quantize / ikllm imatrix.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cli.h"

namespace cli {

namespace {

struct QuantizeUi {
    bool tty = false;
    bool dry_run = false;
    int count = 0;
};

int32_t on_tensor(void* user, const char* name, int32_t from, int32_t to, uint64_t before, uint64_t after,
                  const char* note, float progress) {
    auto* ui = static_cast<QuantizeUi*>(user);
    ++ui->count;
    if (ui->tty) std::fprintf(stderr, "\r%*s\r", 60, "");
    // The per-tensor table goes to stdout (a dry run is a plan to read; a real run a record).
    std::printf("%-40s %-10s -> %-10s %10s -> %10s%s%s\n", name, ikllm_type_name(from), ikllm_type_name(to),
                mib(before).c_str(), mib(after).c_str(), *note ? "  " : "", note);
    if (ui->tty && !ui->dry_run) {
        const int w = 30, n = (int)(progress * w);
        std::fprintf(stderr, "quantizing [%.*s%*s] %3d%%", n, "##############################", w - n, "",
                     (int)(progress * 100));
    }
    std::fflush(stdout);
    return 0;
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
    Args a = parse(argc, argv, {"--pure", "--repack", "--dry-run", "--allow-requantize", "--ignore-imatrix-rules"});
    if (a.positional.size() != 3)
        die("usage: ikllm quantize IN.gguf OUT.gguf TYPE [--pure] [--rule REGEX=TYPE]... [--imatrix FILE] [--repack] "
            "[--dry-run] [--allow-requantize] [--ignore-imatrix-rules] [-t N]");
    const std::string in = a.positional[0], out = a.positional[1], type = a.positional[2];
    if (in == out) die("quantize: input and output are the same file");
    ikllm_lib* lib = nullptr;
    check(ikllm_lib_create(0, &lib), "init");
    ikllm_lib_set_log(lib, [](void*, int32_t level, const char* msg) {
        std::fprintf(stderr, "%s%s\n", level >= IKLLM_LOG_WARN ? "warning: " : "", msg);
    }, nullptr, IKLLM_LOG_WARN);
    ikllm_options* o = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_QUANTIZE, &o), "options");
    check(ikllm_options_set_string(o, "type", type.c_str()), "type");
    if (a.has("--pure")) check(ikllm_options_set_int(o, "pure", 1), "--pure");
    if (a.has("--repack")) check(ikllm_options_set_int(o, "repack", 1), "--repack");
    if (a.has("--dry-run")) check(ikllm_options_set_int(o, "dry_run", 1), "--dry-run");
    if (a.has("--allow-requantize")) check(ikllm_options_set_int(o, "allow_requantize", 1), "--allow-requantize");
    if (a.has("--ignore-imatrix-rules")) check(ikllm_options_set_int(o, "ignore_imatrix_rules", 1), "--ignore-imatrix-rules");
    if (a.has("--imatrix")) check(ikllm_options_set_string(o, "imatrix", a.get("--imatrix").c_str()), "--imatrix");
    if (a.has("-t")) check(ikllm_options_set_int(o, "n_threads", a.get_int("-t", 0)), "-t");
    if (a.has("--rule")) {
        std::string rules;
        for (const std::string& r : a.opts.at("--rule")) rules += r + "\n";
        check(ikllm_options_set_string(o, "rules", rules.c_str()), "--rule");
    }
    QuantizeUi ui;
    ui.tty = isatty(2);
    ui.dry_run = a.has("--dry-run");
    uint64_t before = 0, after = 0;
    const ikllm_status st = ikllm_quantize(lib, in.c_str(), out.c_str(), o, on_tensor, &ui, &before, &after);
    if (ui.tty) std::fprintf(stderr, "\r%*s\r", 60, "");
    ikllm_options_free(o);
    if (st != IKLLM_OK) {
        std::fprintf(stderr, "ikllm: quantize: %s [%s]\n", ikllm_last_error(), ikllm_status_name(st));
        ikllm_lib_free(lib);
        return 1;
    }
    std::printf("%s: %d tensors, %s -> %s (%.2fx)%s\n", ui.dry_run ? "dry run" : out.c_str(), ui.count,
                mib(before).c_str(), mib(after).c_str(), after ? (double)before / (double)after : 0.0,
                ui.dry_run ? ", nothing written" : "");
    ikllm_lib_free(lib);
    return 0;
}

int cmd_imatrix(int argc, char** argv) {
    Args a = parse(argc, argv, {});
    if (!a.has("-m") || !a.has("-f")) die("usage: ikllm imatrix -m MODEL -f TEXT [-o FILE] [-c CHUNK] [--chunks N] [-t N]");
    const std::string out = a.get("-o", "imatrix.dat");
    const int chunk = (int)a.get_int("-c", 512);
    if (chunk < 2) die("imatrix: -c must be at least 2");
    Loaded L;
    load(a, L);
    const std::string text = read_file(a.get("-f"));
    // Tokenize the whole text once (with BOS as the model wants), then feed fixed-size chunks.
    size_t n = 0;
    std::vector<int32_t> toks(text.size() + 16);
    ikllm_status st = ikllm_tokenize(L.model, text.data(), text.size(), IKLLM_TOKENIZE_ADD_SPECIAL, toks.data(),
                                     toks.size(), &n);
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL) {
        toks.resize(n);
        st = ikllm_tokenize(L.model, text.data(), text.size(), IKLLM_TOKENIZE_ADD_SPECIAL, toks.data(), toks.size(), &n);
    }
    check(st, "tokenize");
    toks.resize(n);
    const size_t max_chunks = (size_t)a.get_int("--chunks", 1 << 30);
    const size_t n_chunks = std::min(max_chunks, std::max<size_t>(1, toks.size() / (size_t)chunk));
    if (toks.size() < 2) die("imatrix: the text is too short");
    ikllm_options* so = session_options(a, 1, chunk);
    check(ikllm_options_set_int(so, "n_batch", chunk), "n_batch");
    ikllm_session* s = nullptr;
    st = ikllm_session_create(L.model, so, &s);
    ikllm_options_free(so);
    check(st, "session");
    check(ikllm_session_imatrix_start(s), "imatrix");
    const bool tty = isatty(2);
    for (size_t c = 0; c < n_chunks; ++c) {
        const size_t b = c * (size_t)chunk, e = std::min(toks.size(), b + (size_t)chunk);
        check(ikllm_session_clear(s), "clear");
        check(ikllm_session_decode(s, toks.data() + b, nullptr, nullptr, nullptr, (int32_t)(e - b), 0), "decode");
        if (tty) std::fprintf(stderr, "\rimatrix: chunk %zu/%zu", c + 1, n_chunks);
    }
    if (tty) std::fprintf(stderr, "\n");
    check(ikllm_session_imatrix_save(s, out.c_str(), (int32_t)n_chunks, a.get("-f").c_str()), "save");
    ikllm_session_free(s);
    std::printf("imatrix: %zu chunks of %d tokens -> %s\n", n_chunks, chunk, out.c_str());
    return 0;
}

}  // namespace cli
