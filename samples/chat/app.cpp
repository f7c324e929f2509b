// App state and actions: conversations, engine requests and their results, persistence.
#include "app.h"
#include "process_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ikllm.h"

namespace chat {

namespace {
constexpr size_t kMaxRecentModels = 8;
constexpr size_t kMaxNotices = 6;

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::Loading: return "loading";
        case Phase::Generating: return "generating";
        default: return "idle";
    }
}
}  // namespace

App::App(const std::string& config_dir, const Fonts& fonts)
    : store_(config_dir),
      fonts_(fonts),
      model_opts_(IKLLM_OPTIONS_MODEL),
      session_opts_(IKLLM_OPTIONS_SESSION),
      sampler_opts_(IKLLM_OPTIONS_SAMPLER) {
    if (!engine_.ok()) notify(Notice::Error, "the library did not start: " + engine_.init_error());
    std::string err;
    if (!store_.load_state(app_state_, &err)) notify(Notice::Warning, "settings not restored: " + err);
    const auto saved = app_state_.settings;  // set_option saves, which rewrites app_state_.settings
    for (const auto& [k, v] : saved) {
        std::string e;
        if (!set_option(k, v, &e)) notify(Notice::Warning, "saved setting " + k + " ignored: " + e);
    }
    std::vector<std::string> errors;
    convs_ = store_.load_conversations(&errors);
    for (const std::string& e : errors) notify(Notice::Warning, "conversation not restored: " + e);
    if (find(app_state_.active_conversation)) active_id_ = app_state_.active_conversation;
    else if (!convs_.empty()) active_id_ = convs_[sidebar_order().front()].id;
    else new_chat();
    if (!app_state_.recent_models.empty()) model_path_field_ = app_state_.recent_models.front();
}

// Closing during a reply: stop it and keep what was written so far (the engine member then cancels
// whatever still runs and joins its worker).
App::~App() {
    if (!pending_serial_) return;
    engine_.stop();
    const EngineSnapshot s = engine_.snapshot();
    Conversation* c = find(s.reply.conversation_id);
    if (!c || c->messages.empty() || c->messages.back().role != "assistant") return;
    Message& m = c->messages.back();
    m.content = s.reply.content;
    m.reasoning = s.reply.reasoning;
    m.stopped = true;
    if (m.content.empty() && m.reasoning.empty()) c->messages.pop_back();
    save(*c);
}

bool App::busy() const { return snap_.phase != Phase::Idle || pending_serial_ != 0; }
bool App::loading() const { return snap_.phase == Phase::Loading; }
size_t App::streamed_bytes() const {
    return pending_serial_ && snap_.reply.serial == pending_serial_
               ? snap_.reply.content.size() + snap_.reply.reasoning.size()
               : 0;
}

void App::notify(Notice::Level level, const std::string& text) {
    // A repeated message moves to the end instead of piling up.
    notices_.erase(std::remove_if(notices_.begin(), notices_.end(), [&](const Notice& n) { return n.text == text; }),
                   notices_.end());
    notices_.push_back({level, text, ++notice_counter_});
    if (notices_.size() > kMaxNotices) notices_.erase(notices_.begin());
    std::fprintf(stderr, "ikllm-chat: %s: %s\n", level == Notice::Error ? "error" : level == Notice::Warning ? "warning" : "info",
                 text.c_str());
}

Conversation* App::find(const std::string& id) {
    for (Conversation& c : convs_)
        if (c.id == id) return &c;
    return nullptr;
}
Conversation* App::active() { return find(active_id_); }

std::vector<int> App::sidebar_order() const {
    std::vector<int> idx(convs_.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = (int)i;
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return convs_[a].updated_ms > convs_[b].updated_ms; });
    return idx;
}

void App::save(Conversation& c) {
    c.updated_ms = now_ms();
    c.title = make_title(c);
    std::string err;
    if (!store_.save_conversation(c, &err)) notify(Notice::Error, "conversation not saved: " + err);
}

void App::save_state() {
    app_state_.active_conversation = active_id_;
    app_state_.settings.clear();
    for (const OptionTable* t : {&model_opts_, &session_opts_, &sampler_opts_}) {
        const char* prefix = t == &model_opts_ ? "model." : t == &session_opts_ ? "session." : "sampler.";
        for (const auto& [k, v] : t->non_defaults()) app_state_.settings[prefix + k] = v;
    }
    std::string err;
    if (!store_.save_state(app_state_, &err)) notify(Notice::Error, "settings not saved: " + err);
}

void App::remember_model(const std::string& path) {
    auto& r = app_state_.recent_models;
    r.erase(std::remove(r.begin(), r.end(), path), r.end());
    r.insert(r.begin(), path);
    if (r.size() > kMaxRecentModels) r.resize(kMaxRecentModels);
    save_state();
}

// ---- actions -------------------------------------------------------------------------------
void App::open_model(const std::string& path) {
    if (path.empty()) return notify(Notice::Warning, "type a model path first");
    if (pending_serial_) engine_.stop();
    model_path_field_ = path;
    engine_.load(path, model_opts_.non_defaults());
    snap_ = engine_.snapshot();
}

void App::cancel_load() {
    if (loading()) engine_.stop();
}

void App::set_system_prompt(const std::string& text) {
    if (Conversation* c = active()) {
        c->system_prompt = text;
        save(*c);
    }
}

void App::set_input(const std::string& text) {
    input_ = text;
    input_replacement_ = text;  // reaches the widget's own buffer if it is being edited
    input_replace_pending_ = true;
    input_focus_pending_ = true;
}

bool App::start_reply(Conversation& c) {
    GenerateRequest req;
    req.conversation_id = c.id;
    req.system_prompt = c.system_prompt;
    req.messages = c.messages;
    req.session_options = session_opts_.non_defaults();
    req.sampler_options = sampler_opts_.non_defaults();
    req.max_tokens = app_state_.max_tokens;
    if (!app_state_.template_file.empty()) {
        std::ifstream in(app_state_.template_file, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        if (!in || ss.str().empty()) {
            notify(Notice::Error, "cannot read the chat template file " + app_state_.template_file + " (Settings)");
            return false;
        }
        req.template_override = ss.str();
    }
    c.messages.push_back({"assistant", "", "", false});
    pending_serial_ = engine_.generate(req);
    scroll_to_bottom_ = true;
    save(c);
    return true;
}

void App::send() {
    Conversation* c = active();
    if (!c || pending_serial_) return;
    if (input_.find_first_not_of(" \t\r\n") == std::string::npos) return;
    if (!snap_.card) return notify(Notice::Warning, "open a model first (path field above)");
    if (session_opts_.has_errors() || sampler_opts_.has_errors())
        return notify(Notice::Error, "fix the settings marked in red first");
    std::string text = input_;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
    c->messages.push_back({"user", text, "", false});
    if (!start_reply(*c)) {
        c->messages.pop_back();
        return;
    }
    set_input("");
    input_focus_pending_ = true;
}

void App::stop() {
    if (pending_serial_ || loading()) engine_.stop();
}

void App::new_chat() {
    Conversation* cur = active();
    if (cur && cur->messages.empty()) return;  // already on an empty chat
    Conversation c;
    c.id = new_conversation_id(now_ms(), id_counter_++);
    c.title = "New chat";
    c.updated_ms = now_ms();
    if (cur) c.system_prompt = cur->system_prompt;
    convs_.push_back(c);
    active_id_ = c.id;
    editing_index_ = -1;
    save(convs_.back());
    save_state();
    input_focus_pending_ = true;
}

void App::select_chat(int index) {
    const auto order = sidebar_order();
    if (index < 0 || index >= (int)order.size()) return notify(Notice::Warning, "no chat " + std::to_string(index));
    active_id_ = convs_[order[index]].id;
    editing_index_ = -1;
    scroll_to_bottom_ = true;
    save_state();
}

void App::delete_chat(int index) {
    const auto order = sidebar_order();
    if (index < 0 || index >= (int)order.size()) return;
    const std::string id = convs_[order[index]].id;
    if (pending_serial_ && snap_.reply.conversation_id == id) return notify(Notice::Warning, "stop the reply first");
    store_.delete_conversation(id);
    convs_.erase(convs_.begin() + order[index]);
    if (active_id_ == id) {
        active_id_.clear();
        if (!convs_.empty()) active_id_ = convs_[sidebar_order().front()].id;
        else new_chat();
    }
    save_state();
}

void App::regenerate() {
    Conversation* c = active();
    if (!c || pending_serial_ || !snap_.card) return;
    if (c->messages.empty() || c->messages.back().role != "assistant") return;
    Message last = c->messages.back();
    c->messages.pop_back();
    if (!start_reply(*c)) c->messages.push_back(last);
}

void App::edit_and_resend(int i, const std::string& text) {
    Conversation* c = active();
    if (!c || pending_serial_) return;
    if (!snap_.card) return notify(Notice::Warning, "open a model first (path field above)");
    if (i < 0 || i >= (int)c->messages.size() || c->messages[i].role != "user")
        return notify(Notice::Warning, "message " + std::to_string(i) + " is not a user message");
    // Everything before the edited message stays, so its tokens are reused from the KV cache.
    Conversation before = *c;
    c->messages.resize(i);
    c->messages.push_back({"user", text, "", false});
    if (!start_reply(*c)) *c = before;
    else editing_index_ = -1;
}

bool App::set_option(const std::string& kind_dot_key, const std::string& value, std::string* error) {
    const size_t dot = kind_dot_key.find('.');
    const std::string kind = kind_dot_key.substr(0, dot), key = dot == std::string::npos ? "" : kind_dot_key.substr(dot + 1);
    if (kind == "app" && key == "template_file") {
        app_state_.template_file = value;
        save_state();
        return true;
    }
    if (kind == "app" && key == "max_tokens") {
        try {
            app_state_.max_tokens = std::stoi(value);
        } catch (const std::exception&) {
            if (error) *error = "max_tokens: not an integer";
            return false;
        }
        save_state();
        return true;
    }
    OptionTable* t = kind == "model" ? &model_opts_ : kind == "session" ? &session_opts_ : kind == "sampler" ? &sampler_opts_ : nullptr;
    if (!t) {
        if (error) *error = "unknown settings group '" + kind + "' (model, session, sampler, app)";
        return false;
    }
    const bool ok = t->set(key, value, error);
    if (ok) save_state();
    return ok;
}

void App::show_window(const std::string& name, bool show) {
    if (name == "settings") show_settings_ = show;
    else if (name == "card") show_card_ = show;
}

// ---- engine results -----------------------------------------------------------------------
void App::poll_engine() {
    snap_ = engine_.snapshot();
    if (snap_.load_serial != seen_load_serial_) {
        seen_load_serial_ = snap_.load_serial;
        if (!snap_.load_error.empty()) {
            notify(snap_.load_error == "loading cancelled" ? Notice::Info : Notice::Error,
                   "cannot open " + snap_.loading_path + ": " + snap_.load_error);
        } else if (snap_.card) {
            last_loaded_path_ = snap_.card->path;
            remember_model(snap_.card->path);
            notify(Notice::Info, "loaded " + snap_.card->path);
            if (snap_.template_fallback)
                notify(Notice::Warning, "this model has no chat template: using the default ChatML template "
                                        "(<|im_start|>role ... <|im_end|>)");
        }
    }
    if (!pending_serial_ || snap_.reply.serial != pending_serial_) return;
    Conversation* c = find(snap_.reply.conversation_id);
    if (c && !c->messages.empty() && c->messages.back().role == "assistant") {
        c->messages.back().content = snap_.reply.content;
        c->messages.back().reasoning = snap_.reply.reasoning;
    }
    if (snap_.reply.finished) apply_finished_reply(snap_);
}

void App::apply_finished_reply(const EngineSnapshot& s) {
    pending_serial_ = 0;
    Conversation* c = find(s.reply.conversation_id);
    if (!c) return;
    if (!c->messages.empty() && c->messages.back().role == "assistant") {
        Message& m = c->messages.back();
        m.stopped = s.reply.stopped;
        if (m.content.empty() && m.reasoning.empty() && (!s.reply.error.empty() || s.reply.stopped)) {
            c->messages.pop_back();
            // The failed turn's message goes back into the box so nothing typed is lost.
            if (!s.reply.error.empty() && !c->messages.empty() && c->messages.back().role == "user" && input_.empty()) {
                set_input(c->messages.back().content);
                c->messages.pop_back();
            }
        }
    }
    if (!s.reply.error.empty()) notify(Notice::Error, s.reply.error);
    else if (!s.reply.notice.empty()) notify(Notice::Info, s.reply.notice);
    save(*c);
}

// ---- state for scripts and tests -------------------------------------------------------------
nlohmann::json App::state_json() const {
    nlohmann::json j;
    j["phase"] = phase_name(snap_.phase);
    j["load_progress"] = snap_.load_progress;
    j["model_loaded"] = (bool)snap_.card;
    j["model_path"] = snap_.card ? snap_.card->path : "";
    j["template_fallback"] = snap_.template_fallback;
    j["template_file"] = app_state_.template_file;
    if (snap_.card) {
        const ModelCard& k = *snap_.card;
        nlohmann::json types = nlohmann::json::array();
        for (const auto& t : k.tensor_types) types.push_back({{"type", t.type}, {"count", t.count}, {"bytes", t.bytes}});
        j["card"] = {{"architecture", k.architecture}, {"name", k.name},      {"n_params", k.n_params},
                     {"size_bytes", k.size_bytes},     {"n_layer", k.n_layer}, {"n_ctx_train", k.n_ctx_train},
                     {"placement", k.placement},       {"kv_bytes_per_token_f16", k.kv_bytes_per_token_f16},
                     {"tensor_types", types},          {"has_template", k.has_template}, {"meta_count", k.meta.size()}};
    }
    j["reply_in_flight"] = pending_serial_ != 0;
    const ReplyState& r = snap_.reply;
    j["last_reply"] = {{"prompt_tokens", r.prompt_tokens},      {"reused_tokens", r.reused_tokens},
                       {"generated_tokens", r.generated_tokens}, {"prompt_seconds", r.prompt_seconds},
                       {"generate_seconds", r.generate_seconds}, {"stopped", r.stopped},
                       {"error", r.error},                       {"notice", r.notice}};
    j["context"] = {{"used", snap_.ctx_used}, {"total", snap_.ctx_total}, {"kv_bytes", snap_.kv_bytes}};
    j["rss_bytes"] = resident_bytes();
    nlohmann::json convs = nlohmann::json::array();
    for (int i : sidebar_order())
        convs.push_back({{"id", convs_[i].id}, {"title", convs_[i].title}, {"n_messages", convs_[i].messages.size()}});
    j["conversations"] = convs;
    j["active_id"] = active_id_;
    for (const Conversation& c : convs_)
        if (c.id == active_id_) j["active"] = to_json(c);
    nlohmann::json notes = nlohmann::json::array();
    for (const Notice& n : notices_)
        notes.push_back({{"level", n.level == Notice::Error ? "error" : n.level == Notice::Warning ? "warning" : "info"},
                         {"text", n.text}});
    j["notices"] = notes;
    j["input_bytes"] = input_.size();
    j["recent_models"] = app_state_.recent_models;
    nlohmann::json errs = nlohmann::json::object();
    for (const OptionTable* t : {&model_opts_, &session_opts_, &sampler_opts_})
        for (const OptionField& f : t->fields())
            if (!f.error.empty()) errs[f.name] = f.error;
    j["settings_errors"] = errs;
    j["config_dir"] = store_.dir();
    return j;
}

}  // namespace chat
