#include "chat/chat_template.h"

#include <ctime>
#include <new>

#include "chat/jinja_error.h"
#include "chat/jinja_parser.h"
#include "chat/py_json.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"
#include "core/error.h"

namespace ikllm::chat {

namespace {

std::string describe(const JinjaError& e) {
    std::string msg = e.type + ": " + e.message;
    if (e.line > 0) msg += " (template line " + std::to_string(e.line) + ")";
    return msg;
}

DateTime local_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    return DateTime{tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec};
}

Value parse_input(std::string_view json, const char* what) {
    try {
        return json_parse(json);
    } catch (const JinjaError& e) {
        fail(Status::invalid_argument, std::string("chat template ") + what + " is not valid JSON: " + e.message);
    }
}

Value token_value(const std::string& s, const char* what) {
    if (!py::valid_utf8(s)) fail(Status::invalid_argument, std::string(what) + " is not valid UTF-8");
    return Value::string(s);
}

}  // namespace

ChatTemplate::ChatTemplate(std::string_view source) {
    if (!py::valid_utf8(source)) fail(Status::template_error, "TemplateSyntaxError: template is not valid UTF-8");
    try {
        body_ = std::make_shared<const Body>(parse_template(source));
    } catch (const JinjaError& e) {
        fail(Status::template_error, describe(e));
    } catch (const std::bad_alloc&) {
        fail(Status::out_of_memory, "out of memory while parsing the chat template");
    }
}

std::string ChatTemplate::render(const RenderRequest& r) const {
    auto globals = std::make_shared<Scope>();
    install_globals(*globals);
    auto root = std::make_shared<Scope>(globals);
    root->vars["tools"] = Value::none();
    root->vars["documents"] = Value::none();
    root->vars["add_generation_prompt"] = Value::boolean(false);
    if (r.bos_token) root->vars["bos_token"] = token_value(*r.bos_token, "bos_token");
    if (r.eos_token) root->vars["eos_token"] = token_value(*r.eos_token, "eos_token");
    if (!r.extra_vars_json.empty()) {
        Value extra = parse_input(r.extra_vars_json, "variables");
        if (!extra.is_dict()) fail(Status::invalid_argument, "chat template variables must be a JSON object");
        for (const auto& kv : extra.dict_data().items) root->vars[kv.first.str()] = kv.second;
    }
    if (!r.messages_json.empty()) root->vars["messages"] = parse_input(r.messages_json, "messages");
    if (!r.tools_json.empty()) root->vars["tools"] = parse_input(r.tools_json, "tools");
    root->vars["add_generation_prompt"] = Value::boolean(r.add_generation_prompt);
    try {
        Interp in(r.limits, r.now ? *r.now : local_now());
        return in.render(*body_, root);
    } catch (const JinjaError& e) {
        fail(Status::template_error, describe(e));
    } catch (const std::bad_alloc&) {
        fail(Status::out_of_memory, "out of memory while rendering the chat template");
    } catch (const ikllm::Error&) {
        throw;
    } catch (const std::exception& e) {
        fail(Status::template_error, std::string("TemplateError: ") + e.what());
    }
}

std::string render(std::string_view template_text, std::string_view messages_json, std::string_view tools_json,
                   bool add_generation_prompt, std::string_view extra_vars_json,
                   const std::optional<std::string>& bos_token, const std::optional<std::string>& eos_token,
                   const std::optional<DateTime>& now) {
    RenderRequest r;
    r.messages_json = std::string(messages_json);
    r.tools_json = std::string(tools_json);
    r.add_generation_prompt = add_generation_prompt;
    r.extra_vars_json = std::string(extra_vars_json);
    r.bos_token = bos_token;
    r.eos_token = eos_token;
    r.now = now;
    return ChatTemplate(template_text).render(r);
}

RenderRequest load_template_case(std::string_view sidecar_json, std::string_view case_json, const DateTime& now) {
    auto merged = std::make_shared<DictData>();
    for (std::string_view text : {sidecar_json, case_json}) {
        if (text.empty()) continue;
        Value v = parse_input(text, "case file");
        if (!v.is_dict()) fail(Status::invalid_argument, "a template case file must hold a JSON object");
        for (const auto& kv : v.dict_data().items)
            if (kv.first.str().empty() || kv.first.str()[0] != '_') merged->set(kv.first, kv.second);
    }
    RenderRequest r;
    r.now = now;
    JsonDumpOptions opt;
    auto extra = std::make_shared<DictData>();
    for (const auto& kv : merged->items) {
        const std::string& key = kv.first.str();
        if (key == "bos_token" || key == "eos_token") {
            if (!kv.second.is_string()) fail(Status::invalid_argument, key + " must be a string");
            (key == "bos_token" ? r.bos_token : r.eos_token) = kv.second.str();
        } else if (key == "messages") {
            r.messages_json = json_dumps(kv.second, opt);
        } else if (key == "tools" && !kv.second.is_none()) {
            r.tools_json = json_dumps(kv.second, opt);
        } else if (key == "add_generation_prompt") {
            r.add_generation_prompt = truthy(kv.second);
        } else if (key != "tools") {
            extra->set(kv.first, kv.second);
        }
    }
    if (!extra->items.empty()) r.extra_vars_json = json_dumps(Value::dict(extra), opt);
    return r;
}

}  // namespace ikllm::chat
