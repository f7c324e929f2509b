// POST /v1/chat/completions and /v1/completions: request -> prompt tokens -> job on the
// scheduler -> streamed (SSE) or whole response.
#include <chrono>
#include <memory>
#include <thread>

#include "generation_output.h"
#include "http_util.h"
#include "peer_watch.h"
#include "routes.h"
#include "sampler_factory.h"

namespace server {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);

std::vector<int32_t> tokenize(const ikllm_model* model, const std::string& text, uint32_t flags) {
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
    std::vector<int32_t> toks(n);
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL)
        st = ikllm_tokenize(model, text.data(), text.size(), flags, toks.data(), toks.size(), &n);
    if (st != IKLLM_OK) throw bad_request(std::string("tokenize: ") + ikllm_last_error(), "prompt");
    toks.resize(n);
    return toks;
}

// Everything a generation needs before it is queued.
struct Prepared {
    GenRequest req;
    std::string prompt_text;
    std::shared_ptr<Job> job;
};

Prepared prepare(const httplib::Request& hreq, App& app, bool chat) {
    Prepared p;
    const json body = parse_body(hreq);
    p.req = chat ? parse_chat_request(body) : parse_completion_request(body);
    GenRequest& r = p.req;
    const ikllm_model* model = app.engine.model;
    std::vector<int32_t> toks;
    if (chat) {
        p.prompt_text = app.chat_template.render(r);
        toks = tokenize(model, p.prompt_text, IKLLM_TOKENIZE_ADD_SPECIAL | IKLLM_TOKENIZE_PARSE_SPECIAL);
        // A template that writes the BOS text itself would give two BOS tokens.
        const int32_t bos = ikllm_model_special_token(model, IKLLM_TOKEN_BOS);
        if (toks.size() >= 2 && toks[0] == bos && toks[1] == bos) toks.erase(toks.begin());
        if (r.sampling.grammar.empty() && r.sampling.json_schema.empty()) {
            r.sampling.grammar = app.chat_template.tool_call_grammar(r);
            if (!r.sampling.grammar.empty() && app.chat_template.tool_format() != "llama3")
                r.sampling.grammar_root = "tool-call-root";
        }
    } else if (!r.prompt_tokens.empty()) {
        const int32_t n_vocab = ikllm_model_n_vocab(model);
        for (int32_t t : r.prompt_tokens)
            if (t < 0 || t >= n_vocab) throw bad_request("'prompt' holds a token id outside the vocabulary", "prompt", "invalid_value");
        toks = r.prompt_tokens;
        size_t need = 0;
        ikllm_detokenize(model, toks.data(), toks.size(), 0, nullptr, 0, &need);
        p.prompt_text.assign(need, '\0');
        if (ikllm_detokenize(model, toks.data(), toks.size(), 0, p.prompt_text.data(), need, &need) == IKLLM_OK)
            p.prompt_text.resize(need ? need - 1 : 0);
    } else {
        p.prompt_text = r.prompt_text;
        // As `ikllm run`: BOS as the vocabulary asks; special-token text in the prompt is matched.
        toks = tokenize(model, r.prompt_text, IKLLM_TOKENIZE_ADD_SPECIAL | IKLLM_TOKENIZE_PARSE_SPECIAL);
    }
    if (toks.empty()) throw bad_request("the prompt is empty", chat ? "messages" : "prompt", "invalid_value");
    if ((int)toks.size() > app.max_prompt_tokens)
        throw bad_request("the prompt has " + std::to_string(toks.size()) + " tokens; this server accepts at most " +
                              std::to_string(app.max_prompt_tokens),
                          chat ? "messages" : "prompt", "context_length_exceeded");
    auto job = std::make_shared<Job>();
    job->prompt = std::move(toks);
    const int64_t room = (int64_t)app.scheduler.config().n_ctx_slot - (int64_t)job->prompt.size();
    int64_t max_tokens = r.max_tokens >= 0 ? r.max_tokens : app.opts.n_predict >= 0 ? app.opts.n_predict : room;
    job->max_tokens = std::min(max_tokens, room);
    job->want_logprobs = r.logprobs;
    job->reuse_prefix = r.cache_prompt;
    job->top_logprobs = r.top_logprobs;
    job->sampler = make_sampler(model, r.sampling);
    p.job = std::move(job);
    return p;
}

void submit(App& app, const std::shared_ptr<Job>& job) {
    const auto st = app.scheduler.submit(job);
    if (st == Scheduler::Submit::Ok) return;
    app.metrics.requests_rejected++;
    if (st == Scheduler::Submit::QueueFull)
        throw ApiError(503, "server_error", "the server is busy: too many requests are waiting; retry later", "",
                       "server_busy");
    throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
}

std::string sse(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

void respond_streaming(httplib::Response& res, App& app, std::shared_ptr<Prepared> p, PeerWatch peer,
                       std::shared_ptr<InFlight> flight) {
    auto out = std::make_shared<GenerationOutput>(app, p->req, p->prompt_text, (int)p->job->prompt.size());
    auto opened = std::make_shared<bool>(false);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");  // nginx: pass events on at once
    res.set_chunked_content_provider(
        "text/event-stream",
        [p, out, opened, peer](size_t, httplib::DataSink& sink) {
            Job& job = *p->job;
            std::vector<json> chunks;
            if (!*opened) {
                *opened = true;
                chunks = out->opening_chunks();
            }
            std::vector<TokenEvent> events;
            std::string error;
            const Finish fin = job.wait(events, kPoll, &error);
            out->add(events, &chunks);
            if (out->stop_string_hit()) job.stop_early();
            const bool done = fin != Finish::None || out->stop_string_hit();
            std::string data;
            for (auto& c : chunks) data += sse(c);
            if (done) {
                if (fin == Finish::Error) {
                    data += sse(json::parse(error_body(ApiError(500, "server_error", error))));
                } else {
                    chunks.clear();
                    out->finish(fin, job.n_cached(), &chunks);
                    for (auto& c : chunks) data += sse(c);
                }
                data += "data: [DONE]\n\n";
            }
            // A failed write or a hang-up means the client left: free its slot now.
            if ((!data.empty() && !sink.write(data.data(), data.size())) || !peer.alive()) {
                job.cancel();
                return false;
            }
            if (done) sink.done();
            return true;
        },
        [p, flight](bool success) {
            if (!success) p->job->cancel();
        });
}

void respond_whole(httplib::Response& res, App& app, Prepared& p, const PeerWatch& peer) {
    Job& job = *p.job;
    GenerationOutput out(app, p.req, p.prompt_text, (int)job.prompt.size());
    std::vector<TokenEvent> events;
    std::string error;
    Finish fin = Finish::None;
    while (fin == Finish::None) {
        events.clear();
        fin = job.wait(events, kPoll, &error);
        out.add(events, nullptr);
        if (out.stop_string_hit()) {
            job.stop_early();
            fin = Finish::Stop;
        } else if (fin == Finish::None && !peer.alive()) {
            job.cancel();  // nobody will read the answer
            fin = Finish::Cancelled;
        }
    }
    if (fin == Finish::Error) throw ApiError(500, "server_error", error);
    if (fin == Finish::Cancelled && app.draining)
        throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
    out.finish(fin, job.n_cached(), nullptr);
    send_json(res, 200, out.response());
}

}  // namespace

void handle_generation(const httplib::Request& req, httplib::Response& res, App& app, bool chat) {
    (chat ? app.metrics.requests_chat : app.metrics.requests_completion)++;
    // Until the response is complete: a stream outlives this function inside the response.
    auto flight = std::make_shared<InFlight>(app.metrics);
    if (app.draining) throw ApiError(503, "server_error", "the server is shutting down", "", "shutting_down");
    auto p = std::make_shared<Prepared>(prepare(req, app, chat));
    PeerWatch peer(req.remote_addr, req.remote_port, req.local_port);
    submit(app, p->job);
    if (p->req.stream)
        respond_streaming(res, app, p, peer, flight);
    else
        respond_whole(res, app, *p, peer);
}

}  // namespace server
