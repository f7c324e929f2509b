// Conversations as the app keeps them: plain data plus their JSON form (one file each on disk).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace chat {

struct Message {
    std::string role;       // "user" or "assistant" (the system prompt lives in Conversation)
    std::string content;
    std::string reasoning;  // <think> text split off by the library's chat parser
    bool stopped = false;   // the reply was cut by Stop
};

struct Conversation {
    std::string id;  // file name stem; unique within the config dir
    std::string title;
    std::string system_prompt;
    std::vector<Message> messages;
    int64_t updated_ms = 0;  // for sorting the sidebar, newest first
};

nlohmann::json to_json(const Conversation& c);
// Throws nlohmann::json::exception on a malformed document.
Conversation conversation_from_json(const nlohmann::json& j);

// A short title from the first user message ("New chat" when there is none), cut on a UTF-8 boundary.
std::string make_title(const Conversation& c);
// A new id from the clock (milliseconds) and a caller counter, e.g. "c1763912345678-0".
std::string new_conversation_id(int64_t now_ms, int counter);
int64_t now_ms();
// Cuts s to at most max_bytes without splitting a UTF-8 sequence.
std::string utf8_prefix(const std::string& s, size_t max_bytes);

}  // namespace chat
