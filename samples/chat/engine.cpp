#include "engine.h"

#include "ikllm.h"
#include "option_table.h"

namespace chat {

const char* Engine::fallback_template() {
    // ChatML: the most widely used convention, readable when a model was not trained on any.
    return "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
           "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
           "{% endif %}";
}

Engine::Engine() {
    if (ikllm_lib_create(0, &lib_) != IKLLM_OK) {
        init_error_ = ikllm_last_error();
        lib_ = nullptr;
        return;
    }
    // Leave a core to the UI thread (and a software GL renderer): worker threads that wait on each
    // other slow down badly when the machine is oversubscribed. Settings > n_threads overrides it.
    const unsigned cores = std::thread::hardware_concurrency();
    ikllm_lib_set_default_threads(lib_, cores > 1 ? (int32_t)cores - 1 : 1);
    worker_ = std::thread([this] { run(); });
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        quit_ = true;
        queue_.clear();
        cancel_upto_ = next_serial_;
        cancel_ = 1;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    free_model();
    ikllm_lib_free(lib_);
}

void Engine::clear_history() {
    history_text_.clear();
    history_tokens_.clear();
    checkpoints_.clear();
}

void Engine::free_model() {
    clear_history();
    ikllm_session_free(session_);
    session_ = nullptr;
    session_options_.clear();
    ikllm_model_free(model_);
    model_ = nullptr;
}

void Engine::load(const std::string& path, const OptionValues& model_options) {
    std::lock_guard<std::mutex> lock(mu_);
    // A new model replaces everything: cancel what runs or waits.
    cancel_upto_ = next_serial_ - 1;
    cancel_ = 1;
    queue_.clear();
    if (state_.reply.active && state_.phase != Phase::Generating) {  // its queued job was just dropped
        state_.reply.active = false;
        state_.reply.finished = true;
        state_.reply.stopped = true;
    }
    Job j{Job::Load, path, model_options, {}, next_serial_++};
    state_.phase = Phase::Loading;
    state_.loading_path = path;
    state_.load_progress = 0;
    queue_.push_back(std::move(j));
    cv_.notify_all();
}

uint64_t Engine::generate(const GenerateRequest& req) {
    std::lock_guard<std::mutex> lock(mu_);
    Job j{Job::Generate, "", {}, req, next_serial_++};
    state_.reply = ReplyState{};
    state_.reply.conversation_id = req.conversation_id;
    state_.reply.active = true;
    state_.reply.serial = j.serial;
    queue_.push_back(std::move(j));
    cv_.notify_all();
    return state_.reply.serial;
}

void Engine::stop() {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_upto_ = next_serial_ - 1;
    cancel_ = 1;
}

EngineSnapshot Engine::snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
}

void Engine::run() {
    for (;;) {
        Job job;
        bool cancelled = false;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return quit_ || !queue_.empty(); });
            if (quit_) return;
            job = std::move(queue_.front());
            queue_.pop_front();
            cancelled = job.serial <= cancel_upto_;
            if (!cancelled) cancel_ = 0;
        }
        if (job.kind == Job::Load) {
            if (cancelled) {
                std::lock_guard<std::mutex> lock(mu_);
                state_.phase = Phase::Idle;
                state_.load_error = "loading cancelled";
                state_.load_serial++;
                continue;
            }
            do_load(job);
        } else {
            if (cancelled) {
                finish_reply("", true);
                continue;
            }
            {
                std::lock_guard<std::mutex> lock(mu_);
                state_.phase = Phase::Generating;
            }
            do_generate(job);
        }
    }
}

namespace {
struct LoadProgress {
    std::mutex* mu;
    EngineSnapshot* state;
};
int32_t on_load_progress(void* user, float p) {
    auto* lp = static_cast<LoadProgress*>(user);
    std::lock_guard<std::mutex> lock(*lp->mu);
    lp->state->load_progress = p;
    return 0;  // cancelling goes through the cancel flag
}
}  // namespace

void Engine::do_load(const Job& job) {
    free_model();
    {
        std::lock_guard<std::mutex> lock(mu_);
        state_.phase = Phase::Loading;
        state_.card.reset();
        state_.ctx_used = state_.ctx_total = 0;
        state_.kv_bytes = 0;
    }
    std::string error;
    ikllm_options* opts = make_options(IKLLM_OPTIONS_MODEL, job.model_options, &error);
    ikllm_model* m = nullptr;
    if (opts) {
        LoadProgress lp{&mu_, &state_};
        const ikllm_status st = ikllm_model_load(lib_, job.path.c_str(), opts, on_load_progress, &lp, &cancel_, &m);
        if (st == IKLLM_CANCELLED) error = "loading cancelled";
        else if (st != IKLLM_OK) error = std::string(ikllm_status_name(st)) + ": " + ikllm_last_error();
        ikllm_options_free(opts);
    }
    std::shared_ptr<ModelCard> card;
    bool fallback = false;
    if (m) {
        model_ = m;
        card = std::make_shared<ModelCard>(collect_model_card(m, job.path));
        const char* t = nullptr;
        fallback = ikllm_model_chat_template(m, nullptr, &t) != IKLLM_OK;
        template_ = fallback ? fallback_template() : t;
    }
    std::lock_guard<std::mutex> lock(mu_);
    state_.phase = Phase::Idle;
    state_.load_error = error;
    state_.card = card;
    state_.template_fallback = fallback;
    state_.load_serial++;
}

bool Engine::ensure_session(const OptionValues& session_options, std::string* error) {
    if (session_ && session_options == session_options_) return true;
    clear_history();
    ikllm_session_free(session_);
    session_ = nullptr;
    ikllm_options* o = make_options(IKLLM_OPTIONS_SESSION, session_options, error);
    if (!o) return false;
    const ikllm_status st = ikllm_session_create(model_, o, &session_);
    ikllm_options_free(o);
    if (st != IKLLM_OK) {
        *error = std::string("session: ") + ikllm_last_error();
        return false;
    }
    ikllm_session_set_cancel_flag(session_, &cancel_);
    session_options_ = session_options;
    std::string kv_type = "f16";
    if (auto it = session_options.find("kv_type"); it != session_options.end()) kv_type = it->second;
    uint64_t per_token = 0;
    ikllm_model_kv_bytes_per_token(model_, kv_type.c_str(), &per_token);
    std::lock_guard<std::mutex> lock(mu_);
    state_.ctx_total = ikllm_session_n_ctx(session_);
    state_.ctx_used = 0;
    state_.kv_type = kv_type;
    state_.kv_bytes = per_token * (uint64_t)state_.ctx_total;
    return true;
}

void Engine::finish_reply(const std::string& error, bool stopped, const std::string& notice) {
    std::lock_guard<std::mutex> lock(mu_);
    // A load queued behind this reply (a model opened while it streamed) is already under way.
    state_.phase = !queue_.empty() && queue_.front().kind == Job::Load ? Phase::Loading : Phase::Idle;
    state_.reply.error = error;
    state_.reply.stopped = stopped;
    state_.reply.notice = notice;
    state_.reply.active = false;
    state_.reply.finished = true;
}

}  // namespace chat
