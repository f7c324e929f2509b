#include "routes.h"

#include <optional>

#include "http_util.h"
#include "metrics.h"

namespace server {

namespace {

// Runs a handler, turning ApiError (and anything unexpected) into an OpenAI error response.
// count: hold an InFlight for the handler's run (streaming handlers hold their own).
httplib::Server::Handler guarded(App& app, std::function<void(const httplib::Request&, httplib::Response&, App&)> fn,
                                 bool count = true) {
    return [&app, fn, count](const httplib::Request& req, httplib::Response& res) {
        std::optional<InFlight> flight;
        if (count) flight.emplace(app.metrics);
        try {
            fn(req, res, app);
        } catch (const ApiError& e) {
            send_error(res, e);
        } catch (const nlohmann::json::exception& e) {
            // A JSON value of an unexpected type that validation let through is still the client's.
            send_error(res, bad_request(std::string("invalid request: ") + e.what()));
        } catch (const std::exception& e) {
            send_error(res, ApiError(500, "server_error", e.what()));
        }
    };
}

// The presented key: "Authorization: Bearer KEY" (OpenAI clients) or "X-Api-Key: KEY".
std::string presented_key(const httplib::Request& req) {
    const std::string auth = req.get_header_value("Authorization");
    const std::string bearer = "Bearer ";
    if (auth.size() > bearer.size() && auth.compare(0, bearer.size(), bearer) == 0) return auth.substr(bearer.size());
    return req.get_header_value("X-Api-Key");
}

}  // namespace

void register_routes(httplib::Server& http, App& app) {
    // Health and metrics stay open for load balancers and scrapers; everything else needs a key.
    http.set_pre_routing_handler([&app](const httplib::Request& req, httplib::Response& res) {
        if (!app.keys.enabled() || req.path == "/health" || req.path == "/metrics" || req.method == "OPTIONS")
            return httplib::Server::HandlerResponse::Unhandled;
        if (app.keys.accepts(presented_key(req))) return httplib::Server::HandlerResponse::Unhandled;
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, ApiError(401, "authentication_error", "invalid or missing API key", "", "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
    });
    // Errors httplib produces itself (no route, body too large, bad request line) get OpenAI bodies.
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 404)
            send_error(res, ApiError(404, "not_found_error", "no route for " + req.method + " " + req.path, "", "not_found"));
        else if (res.status == 413)
            send_error(res, ApiError(413, "invalid_request_error", "the request body is too large", "", "request_too_large"));
        else
            send_error(res, ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                                     "HTTP error " + std::to_string(res.status)));
    });
    http.set_logger([&app](const httplib::Request&, const httplib::Response& res) {
        (res.status >= 500 ? app.metrics.responses_5xx : res.status >= 400 ? app.metrics.responses_4xx
                                                                            : app.metrics.responses_2xx)++;
    });

    auto chat = guarded(app, [](auto& q, auto& r, App& a) { handle_generation(q, r, a, true); }, false);
    auto completion = guarded(app, [](auto& q, auto& r, App& a) { handle_generation(q, r, a, false); }, false);
    auto embeddings = guarded(app, handle_embeddings);
    auto models = guarded(app, handle_models);
    // The /v1 paths, plus the bare ones llama-server also answers.
    for (const char* prefix : {"/v1", ""}) {
        const std::string p = prefix;
        http.Post(p + "/chat/completions", chat);
        http.Post(p + "/completions", completion);
        http.Post(p + "/embeddings", embeddings);
        http.Get(p + "/models", models);
        http.Get(p + "/models/(.+)", models);
    }
    http.Post("/tokenize", guarded(app, handle_tokenize));
    http.Post("/detokenize", guarded(app, handle_detokenize));
    http.Get("/health", [&app](const httplib::Request&, httplib::Response& res) {
        if (app.draining)
            send_error(res, ApiError(503, "server_error", "the server is shutting down", "", "shutting_down"));
        else
            send_json(res, 200, {{"status", "ok"}});
    });
    http.Get("/metrics", [&app](const httplib::Request&, httplib::Response& res) {
        res.set_content(render_metrics(app.metrics, app.engine.model_id), "text/plain; version=0.0.4");
    });
}

}  // namespace server
