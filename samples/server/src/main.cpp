// ikllm-server: an OpenAI-compatible HTTP server on the public ikllm C API.
//
//   ikllm-server -m MODEL.gguf [-c CTX] [-np SLOTS] [--host ADDR] [--port N] [--api-key KEY] ...
//
// main wires the parts together: options -> engine (model, sessions) -> scheduler thread ->
// HTTP routes; a signal thread turns SIGTERM/SIGINT into a graceful shutdown.
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "app.h"
#include "routes.h"

namespace {

using namespace server;
using Clock = std::chrono::steady_clock;

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read '" + path + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Waits for SIGTERM/SIGINT, then: stop taking requests, let running ones finish until the
// deadline, cancel the rest, stop the HTTP server.
void shutdown_on_signal(const sigset_t& set, App& app, httplib::Server& http) {
    int sig = 0;
    sigwait(&set, &sig);
    std::fprintf(stderr, "ikllm-server: signal %d: shutting down (up to %llds for running requests)\n", sig,
                 (long long)app.opts.shutdown_timeout_s);
    app.draining = true;
    app.scheduler.stop_accepting();
    const auto deadline = Clock::now() + std::chrono::seconds(app.opts.shutdown_timeout_s);
    while (Clock::now() < deadline && !app.scheduler.idle())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    app.scheduler.cancel_all();
    // Give handlers a moment to send their last bytes.
    const auto grace = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < grace && app.metrics.in_flight > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    http.stop();
}

int run(const ServerOptions& opts) {
    Engine engine;
    setup_engine(opts, engine);
    Metrics metrics;
    Scheduler::Config cfg;
    cfg.n_slots = (int)opts.n_parallel;
    cfg.n_ctx_slot = engine.n_ctx / cfg.n_slots;
    cfg.n_batch = engine.n_batch;
    cfg.max_queue = (size_t)opts.max_queue;
    if (cfg.n_ctx_slot < 2) throw std::runtime_error("-c is too small for -np slots");
    Scheduler scheduler(engine.model, engine.session, cfg, metrics);
    std::unique_ptr<Embedder> embedder;
    if (engine.embd_session)
        embedder = std::make_unique<Embedder>(engine.embd_session, engine.embd_ctx, engine.embd_seqs, metrics);
    ChatTemplate tmpl(engine.model, opts.chat_template_file.empty() ? "" : read_text(opts.chat_template_file),
                      opts.tool_format);
    ApiKeys keys(opts.api_keys);
    App app{opts, engine, scheduler, embedder.get(), tmpl, metrics, keys};
    app.max_prompt_tokens = opts.max_prompt_tokens > 0 ? (int)std::min<int64_t>(opts.max_prompt_tokens, cfg.n_ctx_slot - 1)
                                                       : cfg.n_ctx_slot - 1;
    app.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();

    httplib::Server http;
    // Each streaming client holds a worker thread for its whole response.
    const size_t workers = opts.http_threads > 0 ? (size_t)opts.http_threads : (size_t)(2 * opts.n_parallel + 16);
    http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
    http.set_payload_max_length((size_t)opts.max_body);
    http.set_read_timeout((time_t)opts.timeout_s, 0);
    http.set_write_timeout((time_t)opts.timeout_s, 0);
    if (!opts.static_path.empty() && !http.set_mount_point("/", opts.static_path))
        throw std::runtime_error("--path " + opts.static_path + " is not a directory");
    register_routes(http, app);
    // The packaged cpp-httplib listens with a backlog of 5: a burst of clients would see resets or
    // SYN retries. Remember the listening socket and listen() again with a deeper queue (Linux
    // updates the backlog of a listening socket).
    int listen_fd = -1;
    http.set_socket_options([&listen_fd](int fd) {
        httplib::default_socket_options(fd);
        if (listen_fd < 0) listen_fd = fd;
    });

    const int port = opts.port == 0 ? http.bind_to_any_port(opts.host) : (http.bind_to_port(opts.host, (int)opts.port) ? (int)opts.port : -1);
    if (port < 0) throw std::runtime_error("cannot listen on " + opts.host + ":" + std::to_string(opts.port));
    if (listen_fd >= 0) ::listen(listen_fd, 1024);
    std::fprintf(stderr, "ikllm-server: model %s, %d slots x %d tokens, tool format %s\n", engine.model_id.c_str(),
                 cfg.n_slots, cfg.n_ctx_slot, tmpl.tool_format().c_str());
    std::fprintf(stderr, "ikllm-server: listening on http://%s:%d\n", opts.host.c_str(), port);
    std::fflush(stderr);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    std::thread signals([&] { shutdown_on_signal(set, app, http); });
    const bool ok = http.listen_after_bind();
    if (!app.draining) pthread_kill(signals.native_handle(), SIGTERM);  // listen failed: end the signal thread
    signals.join();
    std::fprintf(stderr, "ikllm-server: stopped\n");
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    ServerOptions opts;
    std::string error;
    bool help = false;
    if (!parse_server_options(argc, argv, opts, &error, &help)) {
        std::fprintf(stderr, "ikllm-server: %s\n%s", error.c_str(), server_usage());
        return 2;
    }
    if (help) {
        std::fputs(server_usage(), stdout);
        return 0;
    }
    // Signals go to the signal thread only (every thread inherits this mask); a client that
    // vanishes must not kill the process through SIGPIPE.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);
    try {
        return run(opts);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ikllm-server: %s\n", e.what());
        return 1;
    }
}
