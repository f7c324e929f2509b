#include "conversation.h"

#include <chrono>

namespace chat {

nlohmann::json to_json(const Conversation& c) {
    nlohmann::json msgs = nlohmann::json::array();
    for (const Message& m : c.messages) {
        nlohmann::json jm = {{"role", m.role}, {"content", m.content}};
        if (!m.reasoning.empty()) jm["reasoning"] = m.reasoning;
        if (m.stopped) jm["stopped"] = true;
        msgs.push_back(std::move(jm));
    }
    return {{"format", "ikllm-chat conversation 1"}, {"id", c.id},           {"title", c.title},
            {"system_prompt", c.system_prompt},      {"updated_ms", c.updated_ms}, {"messages", msgs}};
}

Conversation conversation_from_json(const nlohmann::json& j) {
    Conversation c;
    c.id = j.at("id").get<std::string>();
    c.title = j.value("title", std::string());
    c.system_prompt = j.value("system_prompt", std::string());
    c.updated_ms = j.value("updated_ms", int64_t{0});
    for (const auto& jm : j.at("messages")) {
        Message m;
        m.role = jm.at("role").get<std::string>();
        m.content = jm.value("content", std::string());
        m.reasoning = jm.value("reasoning", std::string());
        m.stopped = jm.value("stopped", false);
        c.messages.push_back(std::move(m));
    }
    return c;
}

std::string utf8_prefix(const std::string& s, size_t max_bytes) {
    if (s.size() <= max_bytes) return s;
    size_t n = max_bytes;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) --n;  // back off continuation bytes
    return s.substr(0, n);
}

std::string make_title(const Conversation& c) {
    for (const Message& m : c.messages) {
        if (m.role != "user") continue;
        std::string t = m.content;
        for (char& ch : t)
            if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
        const std::string cut = utf8_prefix(t, 40);
        return cut.size() < t.size() ? cut + "..." : cut;
    }
    return "New chat";
}

std::string new_conversation_id(int64_t ms, int counter) {
    std::string id = "c";
    id += std::to_string(ms);
    id += '-';
    id += std::to_string(counter);
    return id;
}

int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace chat
