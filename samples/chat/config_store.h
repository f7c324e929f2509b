// Where the app keeps its files, and how: the config dir holds app.json (recent models, settings)
// and conversations/<id>.json. Every write goes to a temporary file that is renamed over the target,
// so a crash never leaves a half-written file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "conversation.h"

namespace chat {

// --config-dir wins, then $IKLLM_CHAT_CONFIG_DIR, then $XDG_CONFIG_HOME/ikllm-chat, then ~/.config/ikllm-chat.
std::string resolve_config_dir(const std::string& flag_value);

struct AppState {
    std::vector<std::string> recent_models;  // newest first
    std::map<std::string, std::string> settings;  // "kind.key" -> text value (only non-defaults)
    std::string active_conversation;
    int max_tokens = 512;
    std::string template_file;  // a Jinja chat template used instead of the model's ("" = the model's)
};

class ConfigStore {
public:
    explicit ConfigStore(std::string dir);
    const std::string& dir() const { return dir_; }

    // false with *error set when the file exists but cannot be read or parsed.
    bool load_state(AppState& out, std::string* error) const;
    bool save_state(const AppState& s, std::string* error) const;
    // Reads every conversations/*.json; unreadable files are skipped and named in *errors.
    std::vector<Conversation> load_conversations(std::vector<std::string>* errors) const;
    bool save_conversation(const Conversation& c, std::string* error) const;
    bool delete_conversation(const std::string& id) const;
    std::string conversation_path(const std::string& id) const;

private:
    std::string dir_;
};

// Writes text to path atomically (path.tmp.<pid>, fsync, rename). Creates missing parent dirs.
bool write_file_atomic(const std::string& path, const std::string& text, std::string* error);

}  // namespace chat
