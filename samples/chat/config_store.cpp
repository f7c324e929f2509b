#include "config_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace chat {

namespace fs = std::filesystem;

std::string resolve_config_dir(const std::string& flag_value) {
    if (!flag_value.empty()) return flag_value;
    if (const char* e = std::getenv("IKLLM_CHAT_CONFIG_DIR"); e && *e) return e;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/ikllm-chat";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.config/ikllm-chat";
}

bool write_file_atomic(const std::string& path, const std::string& text, std::string* error) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (error) *error = "cannot create " + tmp + ": " + std::strerror(errno);
        return false;
    }
    size_t off = 0;
    bool ok = true;
    while (ok && off < text.size()) {
        const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) off += (size_t)n;
    }
    ok = ok && ::fsync(fd) == 0;
    const int saved_errno = errno;
    ok = (::close(fd) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        if (error) *error = "cannot write " + path + ": " + std::strerror(ok ? errno : saved_errno);
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

namespace {
bool read_json(const std::string& path, nlohmann::json& out, std::string* error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (error) *error = "cannot read " + path;
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        out = nlohmann::json::parse(ss.str());
    } catch (const std::exception& e) {
        if (error) *error = path + ": " + e.what();
        return false;
    }
    return true;
}
}  // namespace

ConfigStore::ConfigStore(std::string dir) : dir_(std::move(dir)) {}

std::string ConfigStore::conversation_path(const std::string& id) const {
    return dir_ + "/conversations/" + id + ".json";
}

bool ConfigStore::load_state(AppState& out, std::string* error) const {
    const std::string path = dir_ + "/app.json";
    if (!fs::exists(path)) return true;
    nlohmann::json j;
    if (!read_json(path, j, error)) return false;
    try {
        out.recent_models = j.value("recent_models", std::vector<std::string>{});
        out.settings = j.value("settings", std::map<std::string, std::string>{});
        out.active_conversation = j.value("active_conversation", std::string());
        out.max_tokens = j.value("max_tokens", 512);
        out.template_file = j.value("template_file", std::string());
    } catch (const std::exception& e) {
        if (error) *error = path + ": " + e.what();
        return false;
    }
    return true;
}

bool ConfigStore::save_state(const AppState& s, std::string* error) const {
    const nlohmann::json j = {{"format", "ikllm-chat app 1"},
                              {"recent_models", s.recent_models},
                              {"settings", s.settings},
                              {"active_conversation", s.active_conversation},
                              {"max_tokens", s.max_tokens},
                              {"template_file", s.template_file}};
    return write_file_atomic(dir_ + "/app.json", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace), error);
}

std::vector<Conversation> ConfigStore::load_conversations(std::vector<std::string>* errors) const {
    std::vector<Conversation> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ + "/conversations", ec)) {
        if (e.path().extension() != ".json") continue;
        nlohmann::json j;
        std::string err;
        if (!read_json(e.path().string(), j, &err)) {
            if (errors) errors->push_back(err);
            continue;
        }
        try {
            out.push_back(conversation_from_json(j));
        } catch (const std::exception& ex) {
            if (errors) errors->push_back(e.path().string() + ": " + ex.what());
        }
    }
    return out;
}

bool ConfigStore::save_conversation(const Conversation& c, std::string* error) const {
    return write_file_atomic(conversation_path(c.id), to_json(c).dump(1, ' ', false, nlohmann::json::error_handler_t::replace), error);
}

bool ConfigStore::delete_conversation(const std::string& id) const {
    std::error_code ec;
    return fs::remove(conversation_path(id), ec);
}

}  // namespace chat
