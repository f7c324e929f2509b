// HTTP routes of the OpenAI-compatible API and the service endpoints.
#pragma once
#include <httplib.h>

#include "app.h"

namespace server {

// Installs every route, the API-key check, error bodies and response counting.
void register_routes(httplib::Server& http, App& app);

// Handlers, one file per group.
void handle_generation(const httplib::Request& req, httplib::Response& res, App& app, bool chat);
void handle_embeddings(const httplib::Request& req, httplib::Response& res, App& app);
void handle_models(const httplib::Request& req, httplib::Response& res, App& app);
void handle_tokenize(const httplib::Request& req, httplib::Response& res, App& app);
void handle_detokenize(const httplib::Request& req, httplib::Response& res, App& app);

}  // namespace server
