// `ikllm template`: renders a chat template for one conversation through ikllm_chat_render.
//
//   ikllm template --template T.jinja [--vars SIDECAR.json] [--case CASE.json] [--date 2026-01-15]
//   ikllm template -m MODEL [--name NAME] [--vars ...] [--case ...] [--date ...]
//   ikllm template -m MODEL --list
//
// Variables, later ones winning (as refdata/templates/README.md and transformers): tools=None,
// documents=None, add_generation_prompt=False, the keys of --vars, then the keys of --case; keys
// starting with '_' are comments. The render goes to stdout byte for byte; a template error (syntax,
// raise_exception, type error, ...) exits with code 2 and the message on stderr.
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"

namespace cli {
namespace {

// Top-level members of a JSON object as raw text spans: enough to merge files and pick out the
// arguments of ikllm_chat_render; the library parses (and validates) the values themselves.
struct Member {
    std::string key_json;  // the key as written, quotes included
    std::string key;       // decoded enough to compare (escapes other than \" and \\ kept as is)
    std::string value;     // raw value text
};

size_t skip_ws(const std::string& s, size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    return i;
}

// Index just past the JSON string starting at s[i] == '"'.
size_t skip_string(const std::string& s, size_t i, const std::string& what) {
    for (++i; i < s.size(); ++i) {
        if (s[i] == '\\') ++i;
        else if (s[i] == '"') return i + 1;
    }
    die(what + ": unterminated string");
}

// Index just past the JSON value starting at s[i].
size_t skip_value(const std::string& s, size_t i, const std::string& what) {
    if (i >= s.size()) die(what + ": value expected");
    if (s[i] == '"') return skip_string(s, i, what);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        for (; i < s.size(); ++i) {
            if (s[i] == '"') {
                i = skip_string(s, i, what) - 1;
            } else if (s[i] == '{' || s[i] == '[') {
                ++depth;
            } else if (s[i] == '}' || s[i] == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        die(what + ": unbalanced brackets");
    }
    size_t j = i;
    while (j < s.size() && !std::strchr(",}] \t\r\n", s[j])) ++j;
    if (j == i) die(what + ": value expected");
    return j;
}

std::vector<Member> object_members(const std::string& text, const std::string& what) {
    std::vector<Member> out;
    size_t i = skip_ws(text, 0);
    if (i >= text.size() || text[i] != '{') die(what + ": not a JSON object");
    i = skip_ws(text, i + 1);
    if (i < text.size() && text[i] == '}') return out;
    for (;;) {
        if (i >= text.size() || text[i] != '"') die(what + ": object key expected");
        Member m;
        size_t e = skip_string(text, i, what);
        m.key_json = text.substr(i, e - i);
        for (size_t k = 1; k + 1 < m.key_json.size(); ++k) {
            if (m.key_json[k] == '\\' && (m.key_json[k + 1] == '"' || m.key_json[k + 1] == '\\')) ++k;
            m.key += m.key_json[k];
        }
        i = skip_ws(text, e);
        if (i >= text.size() || text[i] != ':') die(what + ": ':' expected");
        i = skip_ws(text, i + 1);
        e = skip_value(text, i, what);
        m.value = text.substr(i, e - i);
        out.push_back(std::move(m));
        i = skip_ws(text, e);
        if (i < text.size() && text[i] == ',') {
            i = skip_ws(text, i + 1);
            continue;
        }
        if (i < text.size() && text[i] == '}') break;
        die(what + ": ',' or '}' expected");
    }
    if (skip_ws(text, i + 1) != text.size()) die(what + ": text after the JSON object");
    return out;
}

}  // namespace

int cmd_template(int argc, char** argv) {
    Args a = parse(argc, argv, {"--list"});
    Loaded l;
    const bool use_model = a.has("-m");
    if (use_model) load(a, l, "", /*vocab_only=*/true);
    if (a.has("--list")) {
        if (!use_model) die("--list needs -m MODEL");
        const char* def = nullptr;
        if (ikllm_model_chat_template(l.model, nullptr, &def) == IKLLM_OK) std::printf("(default)\n");
        for (int32_t i = 0; i < ikllm_model_chat_template_count(l.model); ++i)
            std::printf("%s\n", ikllm_model_chat_template_name(l.model, i));
        return 0;
    }
    std::string tmpl;
    if (a.has("--template")) {
        tmpl = read_file(a.get("--template"));
    } else if (use_model) {
        const char* t = nullptr;
        const std::string name = a.get("--name");
        check(ikllm_model_chat_template(l.model, name.empty() ? nullptr : name.c_str(), &t), "template");
        tmpl = t;
    } else {
        die("usage: ikllm template --template T.jinja | -m MODEL [--name NAME]  [--vars V.json] [--case C.json] "
            "[--date YYYY-MM-DD]");
    }

    // Merge: a later file's key replaces the value but keeps its first position (Python dict.update).
    std::vector<std::pair<std::string, Member>> vars;
    for (const char* opt : {"--vars", "--case"}) {
        if (!a.has(opt)) continue;
        const std::string path = a.get(opt);
        // A sidecar is optional, as for the reference renderer: a missing --vars file adds nothing.
        if (std::string(opt) == "--vars" && !std::ifstream(path)) continue;
        for (Member& m : object_members(read_file(path), path)) {
            if (!m.key.empty() && m.key[0] == '_') continue;
            bool found = false;
            for (auto& v : vars)
                if (v.first == m.key) {
                    v.second = m;
                    found = true;
                }
            if (!found) vars.emplace_back(m.key, m);
        }
    }
    std::string messages, tools, extra = "{";
    bool have_messages = false, have_tools = false;
    int32_t add_gen = 0;
    for (const auto& [key, m] : vars) {
        if (key == "messages") {
            messages = m.value;
            have_messages = true;
        } else if (key == "tools" && m.value != "null") {
            tools = m.value;
            have_tools = true;
        } else if (key == "add_generation_prompt") {  // Python truthiness of the JSON value
            add_gen = !(m.value == "false" || m.value == "null" || m.value == "0" || m.value == "0.0" ||
                        m.value == "\"\"" || m.value == "[]" || m.value == "{}");
        } else if (key != "tools") {
            if (extra.size() > 1) extra += ", ";
            extra += m.key_json + ": " + m.value;
        }
    }
    extra += "}";

    ikllm_options* o = nullptr;
    check(ikllm_options_create(IKLLM_OPTIONS_CHAT, &o), "options");
    if (a.has("--date")) check(ikllm_options_set_string(o, "now", a.get("--date").c_str()), "--date");
    size_t needed = 0;
    std::string out(4096, '\0');
    ikllm_status st = IKLLM_OK;
    for (int attempt = 0; attempt < 2; ++attempt) {
        st = ikllm_chat_render(use_model ? l.model : nullptr, tmpl.c_str(), have_messages ? messages.c_str() : nullptr,
                               have_tools ? tools.c_str() : nullptr, extra.c_str(), add_gen, o, out.data(),
                               out.size(), &needed);
        if (st != IKLLM_ERR_BUFFER_TOO_SMALL) break;
        out.assign(needed, '\0');
    }
    ikllm_options_free(o);
    if (st == IKLLM_ERR_TEMPLATE) {
        std::fprintf(stderr, "%s\n", ikllm_last_error());
        return 2;
    }
    check(st, "render");
    std::fwrite(out.data(), 1, needed - 1, stdout);
    return 0;
}

}  // namespace cli
