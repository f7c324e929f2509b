// What the HTTP handlers share: options, engine, scheduler, embedder, chat template, metrics and
// keys. Built once in main and passed by reference (no globals).
#pragma once
#include <atomic>

#include "api_keys.h"
#include "chat_prompt.h"
#include "embedder.h"
#include "engine_setup.h"
#include "metrics.h"
#include "scheduler.h"
#include "server_options.h"

namespace server {

struct App {
    const ServerOptions& opts;
    Engine& engine;
    Scheduler& scheduler;
    Embedder* embedder;  // NULL with --no-embeddings
    const ChatTemplate& chat_template;
    Metrics& metrics;
    const ApiKeys& keys;
    int max_prompt_tokens = 0;
    long long created = 0;  // unix time the server started (the model's "created")
    std::atomic<bool> draining{false};
};

}  // namespace server
