#include "generation_output.h"

#include <chrono>

#include "http_util.h"

namespace server {

namespace {
json bytes_of(const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back((int)c);
    return b;
}
const char* finish_name(Finish f) {
    switch (f) {
        case Finish::Length: return "length";
        default: return "stop";
    }
}
}  // namespace

GenerationOutput::GenerationOutput(const App& app, const GenRequest& req, const std::string& prompt_text, int n_prompt)
    : app_(app),
      req_(req),
      id_(random_id(req.chat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      n_prompt_(n_prompt),
      text_(app.engine.model, req.chat, req.stop) {
    if (req.chat) {
        uint32_t flags = 0;
        if (req.tools.is_null() || req.tool_choice == ToolChoice::None) flags |= IKLLM_CHAT_PARSE_NO_TOOLS;
        const auto& t = app.chat_template;
        ikllm_chat_parser_create(app.engine.model, t.tool_format().c_str(), t.text().c_str(), prompt_text.c_str(), flags,
                                 &parser_);
    } else {
        completion_logprobs_ = {{"tokens", json::array()},
                                 {"token_logprobs", json::array()},
                                 {"top_logprobs", json::array()},
                                 {"text_offset", json::array()}};
        if (req.echo) {
            completion_text_ = prompt_text;
            text_offset_ = prompt_text.size();  // offsets count from the start of the returned text
        }
    }
}

GenerationOutput::~GenerationOutput() { ikllm_chat_parser_free(parser_); }

json GenerationOutput::chunk(json choice) const {
    return {{"id", id_},
            {"object", req_.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", created_},
            {"model", app_.engine.model_id},
            {"choices", json::array({std::move(choice)})}};
}

std::vector<json> GenerationOutput::opening_chunks() {
    std::vector<json> out;
    if (req_.chat) {
        out.push_back(chunk({{"index", 0},
                             {"delta", {{"role", "assistant"}, {"content", ""}}},
                             {"logprobs", nullptr},
                             {"finish_reason", nullptr}}));
    } else if (req_.echo && !completion_text_.empty()) {
        out.push_back(chunk({{"index", 0}, {"text", completion_text_}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    }
    return out;
}

// Routes newly final text into the output: through the chat parser (content, reasoning, tool
// calls) or straight into the completion text. delta (may be NULL) receives the stream delta.
void GenerationOutput::take_text(const std::string& text, json* delta) {
    if (!req_.chat) {
        completion_text_ += text;
        if (delta && !text.empty()) (*delta)["text"] = text;
        return;
    }
    if (!parser_) {
        if (delta && !text.empty()) (*delta)["content"] = text;
        message_["content"] = message_.value("content", "") + text;
        return;
    }
    const char* d = nullptr;
    size_t len = 0;
    if (ikllm_chat_parser_push(parser_, text.data(), text.size(), &d, &len) != IKLLM_OK || !delta) return;
    json dj = json::parse(std::string(d, len), nullptr, false);
    if (dj.is_object()) delta->update(dj);
}

json GenerationOutput::logprob_entry(const TokenEvent& ev) const {
    const std::string piece = token_piece(app_.engine.model, ev.token);
    json top = json::array();
    for (const auto& t : ev.top) {
        const std::string p = token_piece(app_.engine.model, t.token);
        top.push_back({{"token", p}, {"logprob", t.logprob}, {"bytes", bytes_of(p)}});
    }
    return {{"token", piece}, {"logprob", ev.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}};
}

void GenerationOutput::add_completion_logprobs(const TokenEvent& ev) {
    const std::string piece = token_piece(app_.engine.model, ev.token);
    completion_logprobs_["tokens"].push_back(piece);
    completion_logprobs_["token_logprobs"].push_back(ev.logprob);
    json top = json::object();
    for (const auto& t : ev.top) top[token_piece(app_.engine.model, t.token)] = t.logprob;
    completion_logprobs_["top_logprobs"].push_back(top);
    completion_logprobs_["text_offset"].push_back(text_offset_);
    text_offset_ += piece.size();
}

void GenerationOutput::add(const std::vector<TokenEvent>& events, std::vector<json>* chunks) {
    for (const auto& ev : events) {
        if (text_.stopped()) break;
        ++n_completion_;
        json delta = json::object();
        take_text(text_.push(ev.token), &delta);
        json lp = nullptr;
        if (req_.logprobs) {
            if (req_.chat) {
                json e = logprob_entry(ev);
                logprobs_content_.push_back(e);
                lp = {{"content", json::array({e})}};
            } else {
                add_completion_logprobs(ev);
                lp = completion_logprobs_;  // the stream chunk carries this token's entry only
                for (auto& [k, v] : lp.items()) v = json::array({v.back()});
            }
        }
        if (!chunks || (delta.empty() && lp.is_null())) continue;
        if (req_.chat) {
            if (delta.contains("tool_calls"))
                for (auto& c : delta["tool_calls"])
                    if (!c.contains("id")) c["id"] = random_id("call_");
            chunks->push_back(chunk({{"index", 0}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", nullptr}}));
        } else {
            chunks->push_back(chunk({{"index", 0}, {"text", delta.value("text", "")}, {"logprobs", lp}, {"finish_reason", nullptr}}));
        }
    }
}

void GenerationOutput::finish(Finish how, int n_cached, std::vector<json>* chunks) {
    n_cached_ = n_cached;
    const bool by_stop_string = text_.stopped();
    json delta = json::object();
    take_text(text_.finish(), &delta);
    if (req_.chat && parser_) {
        const char *d = nullptr, *m = nullptr;
        size_t dl = 0, ml = 0;
        if (ikllm_chat_parser_finish(parser_, &d, &dl, &m, &ml) == IKLLM_OK) {
            json dj = json::parse(std::string(d, dl), nullptr, false);
            if (dj.is_object())
                for (auto& [k, v] : dj.items()) {
                    if (k == "tool_calls" && delta.contains(k)) {
                        for (auto& c : v) delta[k].push_back(c);
                    } else if (v.is_string() && delta.contains(k)) {
                        delta[k] = delta[k].get<std::string>() + v.get<std::string>();
                    } else {
                        delta[k] = v;
                    }
                }
            message_ = json::parse(std::string(m, ml), nullptr, false);
            if (!message_.is_object()) message_ = json::object();
        }
    }
    if (req_.chat && delta.contains("tool_calls"))
        for (auto& c : delta["tool_calls"])
            if (!c.contains("id")) c["id"] = random_id("call_");
    const bool tool_calls = req_.chat && message_.contains("tool_calls") && !message_["tool_calls"].empty();
    finish_reason_ = tool_calls ? "tool_calls" : by_stop_string ? "stop" : finish_name(how);
    if (!chunks) return;
    if (!delta.empty()) {
        if (req_.chat)
            chunks->push_back(chunk({{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
        else
            chunks->push_back(chunk({{"index", 0}, {"text", delta.value("text", "")}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    }
    if (req_.chat)
        chunks->push_back(chunk({{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", finish_reason_}}));
    else
        chunks->push_back(chunk({{"index", 0}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", finish_reason_}}));
    if (req_.include_usage) {
        json u = chunk(nullptr);
        u["choices"] = json::array();
        u["usage"] = {{"prompt_tokens", n_prompt_},
                      {"completion_tokens", n_completion_},
                      {"total_tokens", n_prompt_ + n_completion_},
                      {"prompt_tokens_details", {{"cached_tokens", n_cached_}}}};
        chunks->push_back(u);
    }
}

json GenerationOutput::response() const {
    json usage = {{"prompt_tokens", n_prompt_},
                  {"completion_tokens", n_completion_},
                  {"total_tokens", n_prompt_ + n_completion_},
                  {"prompt_tokens_details", {{"cached_tokens", n_cached_}}}};
    json choice = {{"index", 0}, {"finish_reason", finish_reason_}};
    if (req_.chat) {
        json msg = {{"role", "assistant"}};
        const std::string content = message_.value("content", "");
        json calls = message_.value("tool_calls", json::array());
        msg["content"] = content.empty() && !calls.empty() ? json(nullptr) : json(content);
        const std::string reasoning = message_.value("reasoning_content", "");
        if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
        if (!calls.empty()) {
            for (auto& c : calls)
                if (!c.contains("id") || c["id"] == "") c["id"] = random_id("call_");
            msg["tool_calls"] = calls;
        }
        choice["message"] = msg;
        choice["logprobs"] = req_.logprobs ? json{{"content", logprobs_content_}} : json(nullptr);
    } else {
        choice["text"] = completion_text_;
        choice["logprobs"] = req_.logprobs ? completion_logprobs_ : json(nullptr);
    }
    return {{"id", id_},
            {"object", req_.chat ? "chat.completion" : "text_completion"},
            {"created", created_},
            {"model", app_.engine.model_id},
            {"choices", json::array({choice})},
            {"usage", usage}};
}

}  // namespace server
