#include "requests.h"

#include "api_error.h"
#include "json_fields.h"

namespace server {

namespace {

constexpr int64_t kMaxTokensLimit = 1 << 24;

void parse_sampling(const json& b, SamplingParams& s) {
    s.temperature = fields::number(b, "temperature", 0, 100);
    s.top_p = fields::number(b, "top_p", 0, 1);
    s.min_p = fields::number(b, "min_p", 0, 1);
    s.typical_p = fields::number(b, "typical_p", 0, 1);
    s.presence_penalty = fields::number(b, "presence_penalty", -2, 2);
    s.frequency_penalty = fields::number(b, "frequency_penalty", -2, 2);
    s.repeat_penalty = fields::number(b, "repeat_penalty", 0, 10);
    s.top_k = fields::integer(b, "top_k", 0, 1000000000);
    s.seed = fields::integer(b, "seed", INT64_MIN, INT64_MAX);
    s.penalty_last_n = fields::integer(b, "repeat_last_n", -1, 1000000000);
    if (auto g = fields::string(b, "grammar")) s.grammar = *g;
    s.ignore_eos = fields::boolean(b, "ignore_eos").value_or(false);
}

// Fields shared by chat and text completions.
void parse_common(const json& b, GenRequest& r) {
    if (!b.is_object()) throw bad_request("the request body must be a JSON object");
    if (auto m = fields::string(b, "model")) r.model = *m;
    if (auto n = fields::integer(b, "n", 1, 128); n && *n != 1)
        throw bad_request("only n = 1 is supported", "n", "unsupported_value");
    r.stream = fields::boolean(b, "stream").value_or(false);
    r.cache_prompt = fields::boolean(b, "cache_prompt").value_or(true);
    if (auto it = b.find("stream_options"); it != b.end() && !it->is_null()) {
        if (!it->is_object()) throw bad_request("'stream_options' must be an object", "stream_options", "invalid_type");
        r.include_usage = fields::boolean(*it, "include_usage").value_or(false);
    }
    auto mt = fields::integer(b, "max_completion_tokens", 0, kMaxTokensLimit);
    if (!mt) mt = fields::integer(b, "max_tokens", 0, kMaxTokensLimit);
    if (!mt) mt = fields::integer(b, "n_predict", -1, kMaxTokensLimit);  // llama-server spelling
    if (mt) r.max_tokens = *mt;
    if (auto it = b.find("stop"); it != b.end() && !it->is_null()) {
        if (it->is_string()) {
            r.stop.push_back(it->get<std::string>());
        } else if (it->is_array() && it->size() <= 16) {
            for (auto& s : *it) {
                if (!s.is_string()) throw bad_request("'stop' must hold strings", "stop", "invalid_type");
                r.stop.push_back(s.get<std::string>());
            }
        } else {
            throw bad_request("'stop' must be a string or an array of at most 16 strings", "stop", "invalid_type");
        }
        for (auto& s : r.stop)
            if (s.empty()) throw bad_request("'stop' strings must not be empty", "stop", "invalid_value");
    }
    parse_sampling(b, r.sampling);
}

void parse_response_format(const json& b, SamplingParams& s) {
    auto it = b.find("response_format");
    if (it == b.end() || it->is_null()) return;
    const json& rf = *it;
    if (!rf.is_object()) throw bad_request("'response_format' must be an object", "response_format", "invalid_type");
    const std::string type = fields::string(rf, "type").value_or("text");
    if (type == "text") return;
    if (!s.grammar.empty())
        throw bad_request("'response_format' and 'grammar' are exclusive", "response_format", "invalid_value");
    if (type == "json_object") {
        // llama-server also accepts a "schema" here; plain OpenAI means "any JSON object".
        auto sc = rf.find("schema");
        s.json_schema = sc != rf.end() && sc->is_object() ? sc->dump() : R"({"type": "object"})";
    } else if (type == "json_schema") {
        auto js = rf.find("json_schema");
        if (js == rf.end() || !js->is_object())
            throw bad_request("'response_format.json_schema' must be an object", "response_format.json_schema",
                              "invalid_type");
        auto sc = js->find("schema");
        if (sc == js->end() || sc->is_null()) {
            s.json_schema = "{}";
        } else if (sc->is_object() || sc->is_boolean()) {
            s.json_schema = sc->dump();
        } else {
            throw bad_request("'response_format.json_schema.schema' must be an object",
                              "response_format.json_schema.schema", "invalid_type");
        }
    } else {
        throw bad_request("'response_format.type' must be text, json_object or json_schema", "response_format.type",
                          "invalid_value");
    }
}

// Message content as one string: a string, null, or text parts.
std::string content_text(const json& content, const std::string& where) {
    if (content.is_null()) return "";
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw bad_request(where + " must be a string or an array of parts", where, "invalid_type");
    std::string out;
    for (auto& part : content) {
        if (!part.is_object() || fields::string(part, "type").value_or("") != "text")
            throw bad_request(where + ": only text parts are supported", where, "unsupported_value");
        out += fields::string(part, "text").value_or("");
    }
    return out;
}

json normalise_message(const json& m, size_t i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_request(where + " must be an object", where, "invalid_type");
    auto role = fields::string(m, "role");
    if (!role) throw bad_request(where + ".role is required", where + ".role", "missing_required_parameter");
    if (*role == "developer") *role = "system";  // newer OpenAI name of the system role
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool")
        throw bad_request(where + ".role must be system, developer, user, assistant or tool", where + ".role",
                          "invalid_value");
    json out = {{"role", *role}};
    auto c = m.find("content");
    out["content"] = content_text(c == m.end() ? json() : *c, where + ".content");
    if (auto rc = fields::string(m, "reasoning_content")) out["reasoning_content"] = *rc;
    if (auto n = fields::string(m, "name")) out["name"] = *n;
    if (auto id = fields::string(m, "tool_call_id")) out["tool_call_id"] = *id;
    if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
        if (!tc->is_array()) throw bad_request(where + ".tool_calls must be an array", where + ".tool_calls", "invalid_type");
        json calls = json::array();
        for (auto& call : *tc) {
            if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
                throw bad_request(where + ".tool_calls entries need a function object", where + ".tool_calls",
                                  "invalid_type");
            const json& f = call["function"];
            json fn = {{"name", fields::string(f, "name").value_or("")}};
            // Templates index into the arguments, so a JSON string holding an object becomes that object.
            json args = f.contains("arguments") ? f["arguments"] : json::object();
            if (args.is_string()) {
                json parsed = json::parse(args.get<std::string>(), nullptr, false);
                if (!parsed.is_discarded()) args = parsed;
            }
            fn["arguments"] = args;
            json c2 = {{"type", "function"}, {"function", fn}};
            if (auto id = fields::string(call, "id")) c2["id"] = *id;
            calls.push_back(c2);
        }
        out["tool_calls"] = calls;
    }
    return out;
}

void parse_tools(const json& b, GenRequest& r) {
    if (auto t = b.find("tools"); t != b.end() && !t->is_null()) {
        if (!t->is_array()) throw bad_request("'tools' must be an array", "tools", "invalid_type");
        for (size_t i = 0; i < t->size(); ++i) {
            const json& tool = (*t)[i];
            const std::string where = "tools[" + std::to_string(i) + "]";
            if (!tool.is_object() || fields::string(tool, "type").value_or("function") != "function" ||
                !tool.contains("function") || !tool["function"].is_object() || !fields::string(tool["function"], "name"))
                throw bad_request(where + " must be {\"type\": \"function\", \"function\": {\"name\": ...}}", where,
                                  "invalid_type");
            auto p = tool["function"].find("parameters");
            if (p != tool["function"].end() && !p->is_null() && !p->is_object())
                throw bad_request(where + ".function.parameters must be an object", where + ".function.parameters",
                                  "invalid_type");
        }
        if (!t->empty()) r.tools = *t;
    }
    auto tc = b.find("tool_choice");
    if (tc == b.end() || tc->is_null()) return;
    if (tc->is_string()) {
        const std::string s = tc->get<std::string>();
        if (s == "auto") r.tool_choice = ToolChoice::Auto;
        else if (s == "none") r.tool_choice = ToolChoice::None;
        else if (s == "required") r.tool_choice = ToolChoice::Required;
        else throw bad_request("'tool_choice' must be auto, none, required or a function", "tool_choice", "invalid_value");
    } else if (tc->is_object() && tc->contains("function") && (*tc)["function"].is_object() &&
               fields::string((*tc)["function"], "name")) {
        r.tool_choice = ToolChoice::Named;
        r.tool_choice_name = *fields::string((*tc)["function"], "name");
    } else {
        throw bad_request("'tool_choice' must be auto, none, required or a function", "tool_choice", "invalid_type");
    }
    if (r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named) {
        if (r.tools.is_null()) throw bad_request("'tool_choice' needs 'tools'", "tool_choice", "invalid_value");
        if (r.tool_choice == ToolChoice::Named) {
            bool found = false;
            for (auto& t : r.tools) found |= t["function"]["name"] == r.tool_choice_name;
            if (!found) throw bad_request("'tool_choice' names a function not in 'tools'", "tool_choice", "invalid_value");
        }
    }
}

void parse_logprobs_chat(const json& b, GenRequest& r) {
    r.logprobs = fields::boolean(b, "logprobs").value_or(false);
    if (auto n = fields::integer(b, "top_logprobs", 0, 20)) {
        if (!r.logprobs) throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
        r.top_logprobs = (int)*n;
    }
}

}  // namespace

GenRequest parse_chat_request(const json& b) {
    GenRequest r;
    r.chat = true;
    parse_common(b, r);
    parse_response_format(b, r.sampling);
    parse_logprobs_chat(b, r);
    const json& msgs = fields::required(b, "messages");
    if (!msgs.is_array() || msgs.empty())
        throw bad_request("'messages' must be a non-empty array", "messages", "invalid_type");
    for (size_t i = 0; i < msgs.size(); ++i) r.messages.push_back(normalise_message(msgs[i], i));
    parse_tools(b, r);
    if (auto k = b.find("chat_template_kwargs"); k != b.end() && !k->is_null()) {
        if (!k->is_object())
            throw bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs", "invalid_type");
        r.template_kwargs = *k;
    }
    return r;
}

GenRequest parse_completion_request(const json& b) {
    GenRequest r;
    parse_common(b, r);
    parse_response_format(b, r.sampling);
    // Completions: logprobs is the number of alternatives per token (0..20).
    if (auto lp = b.find("logprobs"); lp != b.end() && !lp->is_null() && !lp->is_boolean()) {
        r.logprobs = true;
        r.top_logprobs = (int)*fields::integer(b, "logprobs", 0, 20);
    } else if (lp != b.end() && lp->is_boolean()) {
        r.logprobs = lp->get<bool>();
    }
    r.echo = fields::boolean(b, "echo").value_or(false);
    const json& p = fields::required(b, "prompt");
    auto is_ids = [](const json& a) {
        if (!a.is_array() || a.empty()) return false;
        for (auto& t : a)
            if (!t.is_number_integer()) return false;
        return true;
    };
    if (p.is_string()) {
        r.prompt_text = p.get<std::string>();
    } else if (is_ids(p)) {
        for (auto& t : p) r.prompt_tokens.push_back(t.get<int32_t>());
    } else if (p.is_array() && p.size() == 1 && (p[0].is_string() || is_ids(p[0]))) {
        if (p[0].is_string()) r.prompt_text = p[0].get<std::string>();
        else for (auto& t : p[0]) r.prompt_tokens.push_back(t.get<int32_t>());
    } else {
        throw bad_request("'prompt' must be a string, an array of token ids, or an array holding one of them",
                          "prompt", "invalid_type");
    }
    return r;
}

EmbeddingRequest parse_embedding_request(const json& b) {
    if (!b.is_object()) throw bad_request("the request body must be a JSON object");
    EmbeddingRequest r;
    if (auto m = fields::string(b, "model")) r.model = *m;
    const std::string fmt = fields::string(b, "encoding_format").value_or("float");
    if (fmt != "float" && fmt != "base64")
        throw bad_request("'encoding_format' must be float or base64", "encoding_format", "invalid_value");
    r.base64 = fmt == "base64";
    const json& in = fields::required(b, "input");
    auto ids = [](const json& a, std::vector<int32_t>& out) {
        if (!a.is_array() || a.empty()) return false;
        for (auto& t : a) {
            if (!t.is_number_integer()) return false;
            out.push_back(t.get<int32_t>());
        }
        return true;
    };
    std::vector<int32_t> one;
    if (in.is_string()) {
        r.texts.push_back(in.get<std::string>());
    } else if (ids(in, one)) {
        r.token_inputs.push_back(one);
    } else if (in.is_array() && !in.empty()) {
        for (auto& x : in) {
            std::vector<int32_t> t;
            if (x.is_string() && r.token_inputs.empty()) r.texts.push_back(x.get<std::string>());
            else if (ids(x, t) && r.texts.empty()) r.token_inputs.push_back(t);
            else throw bad_request("'input' must be a string, an array of strings, or token-id arrays", "input", "invalid_type");
        }
    } else {
        throw bad_request("'input' must be a non-empty string or array", "input", "invalid_type");
    }
    if (r.texts.size() + r.token_inputs.size() > 2048)
        throw bad_request("'input' may hold at most 2048 entries", "input", "invalid_value");
    for (auto& t : r.texts)
        if (t.empty()) throw bad_request("'input' strings must not be empty", "input", "invalid_value");
    return r;
}

}  // namespace server
