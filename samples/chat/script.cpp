#include "script.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <imgui.h>

#include "app.h"
#include "config_store.h"
#include "screenshot.h"

namespace chat {

namespace {
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            const char n = s[++i];
            out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
        } else {
            out += s[i];
        }
    }
    return out;
}

// Word `cmd` and the rest of the line after one space.
void split_command(const std::string& line, std::string& cmd, std::string& rest) {
    const size_t sp = line.find(' ');
    cmd = line.substr(0, sp);
    rest = sp == std::string::npos ? "" : line.substr(sp + 1);
}

double number_or(const std::string& s, double def) {
    if (s.empty()) return def;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    return end && *end == '\0' ? v : def;
}

// Text for `paste-big`: numbered lines of words, so it tokenizes like prose.
std::string big_text(size_t bytes) {
    std::string out;
    out.reserve(bytes + 64);
    for (size_t line = 0; out.size() < bytes; ++line)
        out += "line " + std::to_string(line) + ": the quick brown fox jumps over the lazy dog\n";
    out.resize(bytes);
    return out;
}
}  // namespace

bool ScriptRunner::load(const std::string& path, std::string* error) {
    std::ifstream in(path);
    if (!in) {
        *error = "cannot read script " + path;
        return false;
    }
    for (std::string l; std::getline(in, l);) {
        if (!l.empty() && l.back() == '\r') l.pop_back();
        lines_.push_back(l);
    }
    if (lines_.empty()) lines_.push_back("quit");
    return true;
}

void ScriptRunner::fail(const std::string& what) {
    failed_ = true;
    std::fprintf(stderr, "ikllm-chat script line %d: %s\n", line_no_, what.c_str());
}

bool ScriptRunner::parse_key(const std::string& spec, KeyPress& k) {
    k = KeyPress{};
    std::string s = spec;
    for (;;) {
        if (s.rfind("ctrl+", 0) == 0) k.ctrl = true, s = s.substr(5);
        else if (s.rfind("shift+", 0) == 0) k.shift = true, s = s.substr(6);
        else break;
    }
    if (s == "enter") k.key = GLFW_KEY_ENTER;
    else if (s == "esc") k.key = GLFW_KEY_ESCAPE;
    else if (s.size() == 1 && s[0] >= 'a' && s[0] <= 'z') k.key = GLFW_KEY_A + (s[0] - 'a');
    return k.key >= 0;
}

void ScriptRunner::before_frame(App& app, GLFWwindow* window) {
    ImGuiIO& io = ImGui::GetIO();
    // Finish a key press started on an earlier frame: hold one frame, then release.
    if (key_.key >= 0) {
        if (key_.frames_left-- > 0) {
            io.KeysDown[key_.key] = true;
            io.KeyCtrl = key_.ctrl;
            io.KeyShift = key_.shift;
            return;
        }
        io.KeysDown[key_.key] = false;
        io.KeyCtrl = io.KeyShift = false;
        key_ = KeyPress{};
        return;
    }
    if (!screenshot_path_.empty() || quit_) return;
    // Run actions until one has to wait for a later frame.
    while (pc_ < lines_.size() && step(app, window)) {
        ++pc_;
        started_ = false;
        frames_ = 0;
        if (key_.key >= 0 || !screenshot_path_.empty() || quit_) return;
    }
    if (pc_ >= lines_.size()) quit_ = true;
}

bool ScriptRunner::step(App& app, GLFWwindow* window) {
    line_no_ = (int)pc_ + 1;
    std::string line = lines_[pc_];
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.erase(line.begin());
    if (line.empty() || line[0] == '#') return true;
    std::string cmd, rest;
    split_command(line, cmd, rest);
    const double now = glfwGetTime();
    if (!started_) {
        started_ = true;
        deadline_ = 0;
        frames_ = 0;
    }
    ++frames_;
    auto wait_until = [&](bool done, double seconds, const char* what) {
        if (deadline_ == 0) deadline_ = now + seconds;
        if (done) return true;
        if (now > deadline_) {
            fail(std::string(what) + " timed out after " + std::to_string(seconds) + " s");
            return true;
        }
        return false;
    };

    if (cmd == "open") {
        app.open_model(rest);
    } else if (cmd == "wait-load") {
        return frames_ > 1 && wait_until(!app.loading(), number_or(rest, 60), "wait-load");
    } else if (cmd == "cancel-load") {
        app.cancel_load();
    } else if (cmd == "type") {
        app.set_input(unescape(rest));
    } else if (cmd == "paste-big") {
        // Frame 1: clipboard + focus; frame 3: Ctrl+V into the focused box.
        if (frames_ == 1) {
            glfwSetClipboardString(window, big_text((size_t)number_or(rest, 1 << 20)).c_str());
            app.set_input("");
            return false;
        }
        if (frames_ < 3) return false;
        parse_key("ctrl+v", key_);
        key_.frames_left = 1;
    } else if (cmd == "key") {
        if (!parse_key(rest, key_)) fail("unknown key '" + rest + "'");
        else key_.frames_left = 1;
    } else if (cmd == "system") {
        app.set_system_prompt(unescape(rest));
    } else if (cmd == "send") {
        app.send();
    } else if (cmd == "stop") {
        app.stop();
    } else if (cmd == "new-chat") {
        app.new_chat();
    } else if (cmd == "select-chat") {
        app.select_chat((int)number_or(rest, 0));
    } else if (cmd == "regenerate") {
        app.regenerate();
    } else if (cmd == "edit") {
        std::string idx, text;
        split_command(rest, idx, text);
        app.edit_and_resend((int)number_or(idx, -1), unescape(text));
    } else if (cmd == "set") {
        std::string key, value, err;
        split_command(rest, key, value);
        if (!app.set_option(key, value, &err)) app.notify(Notice::Error, "setting " + key + ": " + err);
    } else if (cmd == "wait-reply") {
        return frames_ > 1 && wait_until(!app.reply_in_flight(), number_or(rest, 60), "wait-reply");
    } else if (cmd == "wait-stream") {
        std::string bytes, secs;
        split_command(rest, bytes, secs);
        const size_t want = (size_t)number_or(bytes, 1);
        return wait_until(app.streamed_bytes() >= want || (frames_ > 1 && !app.reply_in_flight()),
                          number_or(secs, 60), "wait-stream");
    } else if (cmd == "sleep") {
        if (deadline_ == 0) deadline_ = now + number_or(rest, 1);
        return now >= deadline_;
    } else if (cmd == "show") {
        std::string name, on;
        split_command(rest, name, on);
        app.show_window(name, on != "0");
    } else if (cmd == "screenshot") {
        // Let the layout settle for a few frames, then capture after the next render.
        if (frames_ < 4) return false;
        screenshot_path_ = rest;
    } else if (cmd == "dump-state") {
        std::string err;
        if (!write_file_atomic(rest, app.state_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace), &err))
            fail(err);
    } else if (cmd == "quit") {
        glfwSetWindowShouldClose(window, GLFW_TRUE);  // the same path as the window's close button
        quit_ = true;
    } else {
        fail("unknown action '" + cmd + "'");
    }
    return true;
}

void ScriptRunner::after_render(App& app, const GlFuncs& gl, int w, int h) {
    if (screenshot_path_.empty()) return;
    std::string err;
    if (!save_screenshot(gl, w, h, screenshot_path_, &err)) fail(err);
    screenshot_path_.clear();
}

}  // namespace chat
