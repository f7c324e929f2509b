// One assistant reply: render the conversation with the chat template, reuse the cached prefix of the
// KV cache (ikllm_session_prompt_reuse), decode the rest, then sample token by token, streaming the
// text through the incremental detokenizer (whole UTF-8 only) and the chat parser (reasoning split).
#include <chrono>

#include "engine.h"
#include "ikllm.h"
#include "option_table.h"

namespace chat {

namespace {

std::string render_prompt(const ikllm_model* model, const std::string& tmpl, const GenerateRequest& req,
                          std::string* error) {
    nlohmann::json msgs = nlohmann::json::array();
    if (!req.system_prompt.empty()) msgs.push_back({{"role", "system"}, {"content", req.system_prompt}});
    for (const Message& m : req.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    const std::string mj = msgs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    size_t needed = 0;
    ikllm_status st = ikllm_chat_render(model, tmpl.c_str(), mj.c_str(), nullptr, nullptr, 1, nullptr, nullptr, 0, &needed);
    std::string out;
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL) {
        out.assign(needed, '\0');
        st = ikllm_chat_render(model, tmpl.c_str(), mj.c_str(), nullptr, nullptr, 1, nullptr, out.data(), out.size(),
                               &needed);
        out.resize(needed ? needed - 1 : 0);
    }
    if (st != IKLLM_OK) *error = std::string("chat template: ") + ikllm_last_error();
    return out;
}

bool tokenize(const ikllm_model* model, const std::string& text, std::vector<ikllm_token>& out, std::string* error) {
    const uint32_t flags = IKLLM_TOKENIZE_ADD_SPECIAL | IKLLM_TOKENIZE_PARSE_SPECIAL;
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL || st == IKLLM_OK) {
        out.resize(n);
        st = ikllm_tokenize(model, text.data(), text.size(), flags, out.data(), out.size(), &n);
    }
    if (st != IKLLM_OK) {
        *error = std::string("tokenize: ") + ikllm_last_error();
        return false;
    }
    // A template that writes the BOS text itself makes the vocabulary's BOS come twice.
    const ikllm_token bos = ikllm_model_special_token(model, IKLLM_TOKEN_BOS);
    if (out.size() >= 2 && out[0] == bos && out[1] == bos) out.erase(out.begin());
    return true;
}

// The text tokens stand for, as the detokenizer writes it (keep_space: a SentencePiece leading
// space is kept, as in the middle of a stream).
std::string token_text(const ikllm_model* model, const ikllm_token* toks, size_t n, bool keep_space) {
    const uint32_t flags = IKLLM_DETOK_RENDER_SPECIAL | (keep_space ? IKLLM_DETOK_KEEP_LEADING_SPACE : 0u);
    size_t needed = 0;
    ikllm_detokenize(model, toks, n, flags, nullptr, 0, &needed);
    std::string s(needed, '\0');
    if (ikllm_detokenize(model, toks, n, flags, s.data(), s.size(), &needed) != IKLLM_OK) return "\x01";
    s.resize(needed ? needed - 1 : 0);
    return s;
}

// The index i where full[first..i) stands for exactly prompt[0, text_len), or 0 when no token
// boundary falls there. Text grows with the token count, so a binary search finds the candidate.
size_t token_boundary(const ikllm_model* model, const std::vector<ikllm_token>& full, size_t first,
                      const std::string& prompt, size_t text_len) {
    size_t lo = first, hi = full.size();  // largest i with text length <= text_len
    while (lo < hi) {
        const size_t mid = (lo + hi + 1) / 2;
        if (token_text(model, full.data() + first, mid - first, false).size() <= text_len) lo = mid;
        else hi = mid - 1;
    }
    if (lo == first) return 0;
    return prompt.compare(0, text_len, token_text(model, full.data() + first, lo - first, false)) == 0 ? lo : 0;
}

}  // namespace

// Tokens for the prompt. The whole prompt is tokenized; when a checkpoint's text starts it and a
// token boundary of that tokenization falls exactly at its end, the history's tokens replace the
// part before it, so the model's own generated tokens (which rarely re-tokenize identically) stay
// in the KV cache and are reused.
bool Engine::prompt_tokens(const std::string& prompt, std::vector<ikllm_token>& out, std::string* error) {
    if (!tokenize(model_, prompt, out, error)) return false;
    // The BOS the tokenizer added is not part of the prompt text.
    const ikllm_token bos = ikllm_model_special_token(model_, IKLLM_TOKEN_BOS);
    const size_t first = !out.empty() && out[0] == bos && history_tokens_.size() && history_tokens_[0] == bos ? 1 : 0;
    for (auto cp = checkpoints_.rbegin(); cp != checkpoints_.rend(); ++cp) {
        if (cp->text_len >= prompt.size() || prompt.compare(0, cp->text_len, history_text_, 0, cp->text_len) != 0)
            continue;
        const size_t i = token_boundary(model_, out, first, prompt, cp->text_len);
        if (i == 0) continue;
        std::vector<ikllm_token> spliced(history_tokens_.begin(), history_tokens_.begin() + (long)cp->n_tokens);
        spliced.insert(spliced.end(), out.begin() + (long)i, out.end());
        out.swap(spliced);
        // Checkpoints past this one describe text the new prompt replaces.
        checkpoints_.erase(cp.base(), checkpoints_.end());
        return true;
    }
    checkpoints_.clear();
    return true;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void Engine::do_generate(const Job& job) {
    const GenerateRequest& req = job.request;
    if (!model_) return finish_reply("no model is loaded: open one first", false);
    std::string error;
    if (!ensure_session(req.session_options, &error)) return finish_reply(error, false);

    const std::string& tmpl = req.template_override.empty() ? template_ : req.template_override;
    const std::string prompt = render_prompt(model_, tmpl, req, &error);
    if (!error.empty()) return finish_reply(error, false);
    std::vector<ikllm_token> toks;
    if (!prompt_tokens(prompt, toks, &error)) return finish_reply(error, false);
    const int n_ctx = ikllm_session_n_ctx(session_);
    if (toks.empty()) return finish_reply("the prompt produced no tokens", false);
    if ((int64_t)toks.size() >= n_ctx) {
        return finish_reply("the conversation is " + std::to_string(toks.size()) + " tokens but the context holds " +
                                std::to_string(n_ctx) + ": shorten the message, start a new chat or raise n_ctx in Settings",
                            false);
    }

    // Prompt: keep the longest cached prefix, decode only the rest.
    const auto t0 = std::chrono::steady_clock::now();
    int32_t reused = 0;
    if (ikllm_session_prompt_reuse(session_, 0, toks.data(), (int32_t)toks.size(), &reused) != IKLLM_OK)
        return finish_reply(std::string("prompt cache: ") + ikllm_last_error(), false);
    ikllm_status st = ikllm_session_decode(session_, toks.data() + reused, nullptr, nullptr, nullptr,
                                           (int32_t)toks.size() - reused, 0);
    const double prompt_s = seconds_since(t0);
    {
        std::lock_guard<std::mutex> lock(mu_);
        state_.reply.prompt_tokens = (int)toks.size();
        state_.reply.reused_tokens = reused;
        state_.reply.prompt_seconds = prompt_s;
        state_.ctx_used = ikllm_session_seq_pos_max(session_, 0) + 1;
    }
    if (st != IKLLM_OK) {
        // The cache holds the reused prefix only (a failed decode changes nothing).
        ikllm_session_seq_remove(session_, 0, reused, -1);
        clear_history();
        if (st == IKLLM_CANCELLED) return finish_reply("", true);
        return finish_reply(std::string("decode: ") + ikllm_last_error(), false);
    }
    history_text_ = prompt;
    history_tokens_ = toks;
    checkpoints_.push_back({prompt.size(), toks.size()});

    ikllm_options* so = make_options(IKLLM_OPTIONS_SAMPLER, req.sampler_options, &error);
    if (!so) return finish_reply("sampler: " + error, false);
    ikllm_sampler* sampler = nullptr;
    st = ikllm_sampler_create(model_, so, &sampler);
    ikllm_options_free(so);
    if (st != IKLLM_OK) return finish_reply(std::string("sampler: ") + ikllm_last_error(), false);
    ikllm_sampler_accept_v2(sampler, toks.data(), toks.size(), IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR);

    ikllm_chat_parser* parser = nullptr;
    ikllm_detok* detok = nullptr;
    // No tools are offered, so tool-call syntax stays plain text; special tokens are rendered
    // because some families' reasoning markers are special tokens.
    if (ikllm_chat_parser_create(model_, nullptr, tmpl.c_str(), prompt.c_str(), IKLLM_CHAT_PARSE_NO_TOOLS,
                                 &parser) != IKLLM_OK ||
        ikllm_detok_create(model_, IKLLM_DETOK_KEEP_LEADING_SPACE | IKLLM_DETOK_RENDER_SPECIAL, &detok) != IKLLM_OK) {
        error = std::string("stream setup: ") + ikllm_last_error();
        ikllm_chat_parser_free(parser);
        ikllm_sampler_free(sampler);
        return finish_reply(error, false);
    }

    auto publish = [&](int generated) {
        const char *content = "", *reasoning = "";
        size_t nc = 0, nr = 0;
        ikllm_chat_parser_text(parser, IKLLM_CHAT_TEXT_CONTENT, &content, &nc);
        ikllm_chat_parser_text(parser, IKLLM_CHAT_TEXT_REASONING, &reasoning, &nr);
        std::lock_guard<std::mutex> lock(mu_);
        state_.reply.content.assign(content, nc);
        state_.reply.reasoning.assign(reasoning, nr);
        state_.reply.generated_tokens = generated;
        state_.ctx_used = ikllm_session_seq_pos_max(session_, 0) + 1;
    };

    const auto t1 = std::chrono::steady_clock::now();
    std::string reply_text;  // the streamed text with nothing dropped (the parser trims and splits)
    int generated = 0;
    bool stopped = false;
    std::string notice;
    const char* text;
    size_t len;
    for (;;) {
        if (cancel_) {
            stopped = true;
            break;
        }
        if (req.max_tokens > 0 && generated >= req.max_tokens) {
            notice = "the reply reached the token limit (" + std::to_string(req.max_tokens) + ", see Settings)";
            break;
        }
        ikllm_token tok;
        if (ikllm_sampler_sample(sampler, session_, -1, &tok) != IKLLM_OK) {
            error = std::string("sample: ") + ikllm_last_error();
            break;
        }
        if (ikllm_token_is_eog(model_, tok)) break;
        ikllm_detok_push(detok, tok, &text, &len);
        ikllm_chat_parser_push(parser, text, len, nullptr, nullptr);
        reply_text.append(text, len);
        ++generated;
        st = ikllm_session_decode(session_, &tok, nullptr, nullptr, nullptr, 1, 0);
        if (st == IKLLM_CONTEXT_FULL) {
            notice = "the context is full (" + std::to_string(n_ctx) + " tokens): start a new chat or raise n_ctx";
            break;
        }
        if (st == IKLLM_CANCELLED) {
            stopped = true;
            break;
        }
        if (st != IKLLM_OK) {
            error = std::string("decode: ") + ikllm_last_error();
            break;
        }
        history_tokens_.push_back(tok);
        publish(generated);
        std::lock_guard<std::mutex> lock(mu_);
        state_.reply.generate_seconds = seconds_since(t1);
    }
    ikllm_detok_flush(detok, &text, &len);
    ikllm_chat_parser_push(parser, text, len, nullptr, nullptr);
    // The cache now holds the prompt and the decoded reply tokens. When those tokens stand for
    // exactly the streamed text, the prompt plus that text (trimmed, as the parser's content is and
    // as the next render writes it) ends a checkpoint: the next turn keeps the model's own tokens.
    reply_text.append(text, len);
    const std::vector<ikllm_token> reply_toks(history_tokens_.begin() + (long)toks.size(), history_tokens_.end());
    if (!reply_toks.empty() && token_text(model_, reply_toks.data(), reply_toks.size(), true) == reply_text) {
        const size_t b = reply_text.find_first_not_of(" \t\r\n"), e = reply_text.find_last_not_of(" \t\r\n");
        history_text_ += b == std::string::npos ? "" : reply_text.substr(b, e + 1 - b);
        checkpoints_.push_back({history_text_.size(), history_tokens_.size()});
    }
    ikllm_chat_parser_finish(parser, nullptr, nullptr, nullptr, nullptr);
    publish(generated);
    {
        std::lock_guard<std::mutex> lock(mu_);
        state_.reply.generate_seconds = seconds_since(t1);
    }
    ikllm_detok_free(detok);
    ikllm_chat_parser_free(parser);
    ikllm_sampler_free(sampler);
    finish_reply(error, stopped, notice);
}

}  // namespace chat
