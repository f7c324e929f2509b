// POST /v1/embeddings, GET /v1/models, POST /tokenize, POST /detokenize.
#include "http_util.h"
#include "json_fields.h"
#include "requests.h"
#include "routes.h"

namespace server {

namespace {
std::vector<int32_t> tokens_of(const ikllm_model* model, const std::string& text, uint32_t flags) {
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
    std::vector<int32_t> toks(n);
    if (st == IKLLM_ERR_BUFFER_TOO_SMALL) st = ikllm_tokenize(model, text.data(), text.size(), flags, toks.data(), n, &n);
    if (st != IKLLM_OK) throw bad_request(std::string("tokenize: ") + ikllm_last_error());
    toks.resize(n);
    return toks;
}
}  // namespace

void handle_embeddings(const httplib::Request& req, httplib::Response& res, App& app) {
    app.metrics.requests_embedding++;
    if (!app.embedder)
        throw ApiError(501, "invalid_request_error", "embeddings are disabled on this server (--no-embeddings)", "",
                       "not_supported");
    const EmbeddingRequest r = parse_embedding_request(parse_body(req));
    const ikllm_model* model = app.engine.model;
    std::vector<std::vector<int32_t>> inputs = r.token_inputs;
    for (const auto& t : r.texts) inputs.push_back(tokens_of(model, t, IKLLM_TOKENIZE_ADD_SPECIAL | IKLLM_TOKENIZE_PARSE_SPECIAL));
    const int32_t n_vocab = ikllm_model_n_vocab(model);
    size_t total = 0;
    for (const auto& in : inputs) {
        if (in.empty()) throw bad_request("an input produced no tokens", "input", "invalid_value");
        if ((int)in.size() > app.embedder->max_tokens())
            throw bad_request("an input has " + std::to_string(in.size()) + " tokens; at most " +
                                  std::to_string(app.embedder->max_tokens()) + " are accepted",
                              "input", "context_length_exceeded");
        for (int32_t t : in)
            if (t < 0 || t >= n_vocab) throw bad_request("'input' holds a token id outside the vocabulary", "input", "invalid_value");
        total += in.size();
    }
    const auto vecs = app.embedder->embed(inputs);
    json data = json::array();
    for (size_t i = 0; i < vecs.size(); ++i) {
        json e = {{"object", "embedding"}, {"index", i}};
        if (r.base64)
            e["embedding"] = base64_encode(vecs[i].data(), vecs[i].size() * sizeof(float));
        else
            e["embedding"] = vecs[i];
        data.push_back(std::move(e));
    }
    send_json(res, 200,
              {{"object", "list"},
               {"data", data},
               {"model", app.engine.model_id},
               {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}});
}

void handle_models(const httplib::Request& req, httplib::Response& res, App& app) {
    app.metrics.requests_other++;
    // GET /v1/models/{id}: the one model, or 404.
    const bool one = req.matches.size() > 1;
    if (one && req.matches[1] != app.engine.model_id)
        throw ApiError(404, "not_found_error", "no model '" + std::string(req.matches[1]) + "'", "model", "model_not_found");
    const ikllm_model* m = app.engine.model;
    json model = {{"id", app.engine.model_id},
                  {"object", "model"},
                  {"created", app.created},
                  {"owned_by", "ikllm"},
                  {"meta",
                   {{"architecture", ikllm_model_architecture(m)},
                    {"n_params", ikllm_model_n_params(m)},
                    {"n_vocab", ikllm_model_n_vocab(m)},
                    {"n_ctx_train", ikllm_model_n_ctx_train(m)},
                    {"n_ctx", app.engine.n_ctx},
                    {"n_slots", app.scheduler.config().n_slots}}}};
    send_json(res, 200, one ? model : json{{"object", "list"}, {"data", json::array({model})}});
}

// llama-server's shapes: {"content": TEXT, "add_special": bool, "with_pieces": bool} -> {"tokens": [...]}.
void handle_tokenize(const httplib::Request& req, httplib::Response& res, App& app) {
    app.metrics.requests_other++;
    const json b = parse_body(req);
    fields::required(b, "content");
    const std::string text = *fields::string(b, "content");
    uint32_t flags = IKLLM_TOKENIZE_PARSE_SPECIAL;
    if (fields::boolean(b, "add_special").value_or(false)) flags |= IKLLM_TOKENIZE_ADD_SPECIAL;
    const auto toks = tokens_of(app.engine.model, text, flags);
    json out = json::array();
    if (fields::boolean(b, "with_pieces").value_or(false)) {
        for (int32_t t : toks) {
            char buf[256];
            size_t need = 0;
            std::string piece;
            if (ikllm_token_to_piece(app.engine.model, t, IKLLM_DETOK_RENDER_SPECIAL, buf, sizeof buf, &need) == IKLLM_OK)
                piece.assign(buf, need ? need - 1 : 0);
            out.push_back({{"id", t}, {"piece", piece}});
        }
    } else {
        out = toks;
    }
    send_json(res, 200, {{"tokens", out}});
}

void handle_detokenize(const httplib::Request& req, httplib::Response& res, App& app) {
    app.metrics.requests_other++;
    const json b = parse_body(req);
    const json& t = fields::required(b, "tokens");
    const int32_t n_vocab = ikllm_model_n_vocab(app.engine.model);
    std::vector<int32_t> toks;
    if (!t.is_array()) throw bad_request("'tokens' must be an array of token ids", "tokens", "invalid_type");
    for (auto& x : t) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= n_vocab)
            throw bad_request("'tokens' must hold token ids of the vocabulary", "tokens", "invalid_value");
        toks.push_back(x.get<int32_t>());
    }
    size_t need = 0;
    ikllm_detokenize(app.engine.model, toks.data(), toks.size(), 0, nullptr, 0, &need);
    std::string text(need, '\0');
    if (ikllm_detokenize(app.engine.model, toks.data(), toks.size(), 0, text.data(), need, &need) != IKLLM_OK)
        throw ApiError(500, "server_error", std::string("detokenize: ") + ikllm_last_error());
    text.resize(need ? need - 1 : 0);
    send_json(res, 200, {{"content", text}});
}

}  // namespace server
