// `ikllm chat`: an interactive conversation through the model's chat template.
//
//   ikllm chat -m MODEL [--system TEXT] [--template T.jinja] [--vars V.json] [--format NAME] [-n N]
//              [--stats] [--no-reuse] [--no-color] [sampler options as `ikllm run`] [-t THREADS] [-c CTX]
//
// Each turn renders the whole conversation (ikllm_chat_render, add_generation_prompt), tokenizes it,
// keeps the longest common prefix already in the KV cache and decodes only the rest, then streams the
// reply (ikllm_detok keeps UTF-8 whole) through the output parser, reasoning dimmed on a terminal.
// One user message per input line, so piped stdin works. Commands: /exit (or Ctrl-D), /reset,
// /save FILE, /load FILE.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include <fstream>

#include "cli.h"

namespace cli {
namespace {

// Used when the model carries no template and none is given: ChatML, the most common convention.
constexpr const char* kFallbackTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

constexpr const char* kDim = "\x1b[2m";
constexpr const char* kReset = "\x1b[0m";

std::string json_quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += (char)c;
                }
        }
    }
    return out + "\"";
}

std::string message_json(const std::string& role, const std::string& content, const std::string& reasoning = "") {
    std::string m = "{\"role\": " + json_quote(role) + ", \"content\": " + json_quote(content);
    if (!reasoning.empty()) m += ", \"reasoning_content\": " + json_quote(reasoning);
    return m + "}";
}

struct Chat {
    const ikllm_model* model = nullptr;
    ikllm_session* session = nullptr;
    ikllm_sampler* sampler = nullptr;
    std::string tmpl, extra_vars, format;
    std::vector<std::string> messages;  // JSON objects, in order
    std::vector<int32_t> cached;        // tokens held by the KV cache (sequence 0), in position order
    int n_predict = -1;
    bool color = false, stats = false;
    bool reuse = true;  // --no-reuse: decode the whole conversation every turn (for checking reuse)
    int turn = 0;
};

// The conversation rendered with the generation prompt; false (message on stderr) on a template error.
bool render(const Chat& c, std::string& out) {
    std::string msgs = "[";
    for (size_t i = 0; i < c.messages.size(); ++i) msgs += (i ? ", " : "") + c.messages[i];
    msgs += "]";
    const char* vars = c.extra_vars.empty() ? nullptr : c.extra_vars.c_str();
    size_t needed = 0;
    ikllm_status st =
        ikllm_chat_render(c.model, c.tmpl.c_str(), msgs.c_str(), nullptr, vars, 1, nullptr, nullptr, 0, &needed);
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL) {
        out.assign(needed, '\0');
        st = ikllm_chat_render(c.model, c.tmpl.c_str(), msgs.c_str(), nullptr, vars, 1, nullptr, out.data(),
                               out.size(), &needed);
        out.resize(needed - 1);
    }
    if (st != IKLLM_OK) {
        std::fprintf(stderr, "ikllm: chat template: %s\n", ikllm_last_error());
        return false;
    }
    return true;
}

// Brings the KV cache to `toks` minus the last token's logits: drops what differs from the cached
// tokens and decodes only the new suffix. Returns the number of reused tokens, or -1 if the context
// is full (the cache then holds the common prefix only).
int sync_cache(Chat& c, const std::vector<int32_t>& toks) {
    size_t keep = 0;
    while (c.reuse && keep < c.cached.size() && keep < toks.size() && c.cached[keep] == toks[keep]) ++keep;
    if (keep == toks.size() && keep > 0) --keep;  // the last token must be decoded again for its logits
    check(ikllm_session_seq_remove(c.session, 0, (int32_t)keep, -1), "kv cache");
    c.cached.resize(keep);
    const ikllm_status st = ikllm_session_decode(c.session, toks.data() + keep, nullptr, nullptr, nullptr,
                                                 (int32_t)(toks.size() - keep), 0);
    if (st == IKLLM_CONTEXT_FULL) return -1;
    check(st, "decode");
    c.cached = toks;
    return (int)keep;
}

// /save FILE: the KV cache of the conversation and the sampler state go to FILE (the library's
// session-state format, written atomically), the messages to FILE.messages.jsonl (one JSON object
// per line). /load FILE restores both; the cached tokens are read back from the session.
void save_chat(Chat& c, const std::string& file) {
    const int32_t seq = 0;
    ikllm_status st = ikllm_session_state_save_file(c.session, &seq, 1, c.sampler, 0, file.c_str());
    if (st != IKLLM_OK) {
        std::fprintf(stderr, "ikllm: /save: %s\n", ikllm_last_error());
        return;
    }
    const std::string side = file + ".messages.jsonl", tmp = side + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    bool ok = f != nullptr;
    for (size_t i = 0; ok && i < c.messages.size(); ++i)
        ok = std::fprintf(f, "%s\n", c.messages[i].c_str()) > 0;
    if (f) ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), side.c_str()) != 0) {
        std::remove(tmp.c_str());
        std::fprintf(stderr, "ikllm: /save: cannot write %s\n", side.c_str());
        return;
    }
    std::fprintf(stderr, "(saved %zu tokens and %zu messages to %s)\n", c.cached.size(), c.messages.size(), file.c_str());
}

void load_chat(Chat& c, const std::string& file) {
    const std::string side = file + ".messages.jsonl";
    std::ifstream in(side);
    if (!in) {
        std::fprintf(stderr, "ikllm: /load: cannot read %s\n", side.c_str());
        return;
    }
    std::vector<std::string> msgs;
    for (std::string l; std::getline(in, l);)
        if (!l.empty()) msgs.push_back(l);
    const ikllm_status st = ikllm_session_state_load_file(c.session, file.c_str(), c.sampler, IKLLM_STATE_REPLACE_ALL);
    if (st != IKLLM_OK) {
        std::fprintf(stderr, "ikllm: /load: %s\n", ikllm_last_error());
        return;
    }
    size_t n = 0;
    ikllm_session_seq_tokens(c.session, 0, nullptr, 0, &n);
    std::vector<int32_t> toks(n);
    check(ikllm_session_seq_tokens(c.session, 0, toks.data(), toks.size(), &n), "/load");
    toks.resize(n);
    c.cached = toks;
    c.messages = msgs;
    std::fprintf(stderr, "(loaded %zu tokens and %zu messages from %s)\n", c.cached.size(), c.messages.size(), file.c_str());
}

// Prints one parser delta: reasoning (dimmed on a terminal), then content.
struct Printer {
    bool color = false;
    bool reasoning_shown = false, content_shown = false;
    void show(ikllm_chat_parser* p) {
        const char* text;
        size_t len;
        check(ikllm_chat_parser_text(p, IKLLM_CHAT_TEXT_REASONING_DELTA, &text, &len), "parser");
        if (len) {
            if (color) std::fputs(kDim, stdout);
            std::fwrite(text, 1, len, stdout);
            if (color) std::fputs(kReset, stdout);
            reasoning_shown = true;
        }
        check(ikllm_chat_parser_text(p, IKLLM_CHAT_TEXT_CONTENT_DELTA, &text, &len), "parser");
        if (len) {
            if (reasoning_shown && !content_shown) std::fputs("\n\n", stdout);
            std::fwrite(text, 1, len, stdout);
            content_shown = true;
        }
        std::fflush(stdout);
    }
};

// One assistant turn: render, sync the cache, generate and stream, then record the reply.
void reply(Chat& c) {
    std::string prompt;
    if (!render(c, prompt)) {
        c.messages.pop_back();
        return;
    }
    std::vector<int32_t> toks = tokenize(c.model, prompt, IKLLM_TOKENIZE_ADD_SPECIAL | IKLLM_TOKENIZE_PARSE_SPECIAL);
    // The template may write the BOS text itself; the vocabulary's BOS then comes twice.
    const int32_t bos = ikllm_model_special_token(c.model, IKLLM_TOKEN_BOS);
    if (toks.size() >= 2 && toks[0] == bos && toks[1] == bos) toks.erase(toks.begin());
    if (toks.empty()) die("chat: the prompt produced no tokens");
    const auto t0 = std::chrono::steady_clock::now();
    const int reused = sync_cache(c, toks);
    if (reused < 0) {
        std::fprintf(stderr, "ikllm: the context is full (%zu tokens needed); /reset starts over\n", toks.size());
        c.messages.pop_back();
        return;
    }
    const auto t1 = std::chrono::steady_clock::now();

    ikllm_chat_parser* parser = nullptr;
    const char* format = c.format.empty() ? nullptr : c.format.c_str();
    // No tools are offered here, so tool-call syntax is plain text.
    check(ikllm_chat_parser_create(c.model, format, c.tmpl.c_str(), prompt.c_str(), IKLLM_CHAT_PARSE_NO_TOOLS, &parser),
          "parser");
    ikllm_detok* dt = nullptr;
    // Special tokens are rendered: some families' markers ([TOOL_CALLS], <think>) are special tokens.
    check(ikllm_detok_create(c.model, IKLLM_DETOK_KEEP_LEADING_SPACE | IKLLM_DETOK_RENDER_SPECIAL, &dt), "detokenizer");
    check(ikllm_sampler_reset(c.sampler), "sampler");
    check(ikllm_sampler_accept_v2(c.sampler, toks.data(), toks.size(), IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR), "sampler");

    Printer out{c.color};
    const char* text;
    size_t len;
    int generated = 0;
    bool full = false;
    while (c.n_predict < 0 || generated < c.n_predict) {
        int32_t tok;
        check(ikllm_sampler_sample(c.sampler, c.session, -1, &tok), "sample");
        if (ikllm_token_is_eog(c.model, tok)) break;
        check(ikllm_detok_push(dt, tok, &text, &len), "detokenize");
        check(ikllm_chat_parser_push(parser, text, len, nullptr, nullptr), "parser");
        out.show(parser);
        ++generated;
        const ikllm_status st = ikllm_session_decode(c.session, &tok, nullptr, nullptr, nullptr, 1, 0);
        if (st == IKLLM_CONTEXT_FULL) {
            full = true;
            break;
        }
        check(st, "decode");
        c.cached.push_back(tok);
    }
    check(ikllm_detok_flush(dt, &text, &len), "detokenize");
    check(ikllm_chat_parser_push(parser, text, len, nullptr, nullptr), "parser");
    out.show(parser);
    check(ikllm_chat_parser_finish(parser, nullptr, nullptr, nullptr, nullptr), "parser");
    out.show(parser);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (full) std::fprintf(stderr, "ikllm: the context is full; /reset starts over\n");

    const char *content, *reasoning;
    check(ikllm_chat_parser_text(parser, IKLLM_CHAT_TEXT_CONTENT, &content, nullptr), "parser");
    check(ikllm_chat_parser_text(parser, IKLLM_CHAT_TEXT_REASONING, &reasoning, nullptr), "parser");
    c.messages.push_back(message_json("assistant", content, reasoning));
    ikllm_chat_parser_free(parser);
    ikllm_detok_free(dt);

    const auto t2 = std::chrono::steady_clock::now();
    if (c.stats) {
        const double pp = std::chrono::duration<double>(t1 - t0).count();
        const double tg = std::chrono::duration<double>(t2 - t1).count();
        std::fprintf(stderr, "[turn %d: prompt %zu tokens, reused %d, decoded %zu in %.2f s; generated %d in %.2f s]\n",
                     ++c.turn, toks.size(), reused, toks.size() - (size_t)reused, pp, generated, tg);
    }
}

}  // namespace

int cmd_chat(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--no-mmap", "--stats", "--no-color", "--no-reuse"});
    Loaded L;
    load(a, L);
    Chat c;
    c.model = L.model;
    if (a.has("--template")) {
        c.tmpl = read_file(a.get("--template"));
    } else {
        const char* t = nullptr;
        const ikllm_status st = ikllm_model_chat_template(L.model, nullptr, &t);
        if (st == IKLLM_ERR_NOT_FOUND) {
            std::fprintf(stderr, "ikllm: the model has no chat template; using ChatML (--template FILE to choose)\n");
            c.tmpl = kFallbackTemplate;
        } else {
            check(st, "chat template");
            c.tmpl = t;
        }
    }
    if (a.has("--vars")) c.extra_vars = read_file(a.get("--vars"));
    c.format = a.get("--format");
    c.n_predict = (int)a.get_int("-n", -1);
    c.stats = a.has("--stats");
    c.reuse = !a.has("--no-reuse");
    const bool interactive = isatty(0);
    c.color = isatty(1) && !a.has("--no-color");

    ikllm_options* so = session_options(a);
    ikllm_status st = ikllm_session_create(L.model, so, &c.session);
    ikllm_options_free(so);
    check(st, "session");
    c.sampler = make_sampler(a, L.model);

    const std::string system = a.get("--system");
    auto start_conversation = [&] {
        c.messages.clear();
        if (!system.empty()) c.messages.push_back(message_json("system", system));
    };
    start_conversation();
    if (interactive) std::fprintf(stderr, "ikllm chat: one message per line; /reset clears, /save F, /load F, /exit or Ctrl-D quits\n");

    std::string line;
    for (;;) {
        if (interactive) {
            std::fputs(c.color ? "\x1b[1m> \x1b[0m" : "> ", stdout);
            std::fflush(stdout);
        }
        if (!std::getline(std::cin, line)) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            start_conversation();
            check(ikllm_session_clear(c.session), "reset");
            c.cached.clear();
            std::fprintf(stderr, "(conversation cleared)\n");
            continue;
        }
        if (line.rfind("/save", 0) == 0 || line.rfind("/load", 0) == 0) {
            const bool save = line[1] == 's';
            const std::string file = line.size() > 6 ? line.substr(6) : "";
            if (file.empty()) {
                std::fprintf(stderr, "usage: %s FILE\n", save ? "/save" : "/load");
            } else if (save) {
                save_chat(c, file);
            } else {
                load_chat(c, file);
            }
            continue;
        }
        c.messages.push_back(message_json("user", line));
        reply(c);
    }
    if (interactive) std::fputs("\n", stdout);
    ikllm_sampler_free(c.sampler);
    ikllm_session_free(c.session);
    return 0;
}

}  // namespace cli
