// Scripted mode (`ikllm-chat --script FILE`): one action per line, run against the live UI between
// frames, for tests and demos. Actions:
//   open PATH | wait-load [SECONDS] | cancel-load
//   system TEXT (system prompt of the chat) | type TEXT (\n, \t, \\ escapes) | paste-big BYTES (through the clipboard and Ctrl+V)
//   key SPEC (enter, shift+enter, esc, ctrl+n, ctrl+v) | send | stop | new-chat | select-chat INDEX
//   regenerate | edit INDEX TEXT | set GROUP.KEY VALUE (groups: model, session, sampler, app)
//   wait-reply [SECONDS] | wait-stream [BYTES] [SECONDS] | sleep SECONDS
//   show settings|card [0|1] | screenshot PNG_PATH | dump-state JSON_PATH | quit
// Blank lines and lines starting with # are skipped. A wait that times out or a failed action makes
// the exit status 3 (the script goes on, so later dumps still show what happened).
#pragma once

#include <string>
#include <vector>

#include "gl_funcs.h"

namespace chat {

class App;

class ScriptRunner {
public:
    bool load(const std::string& path, std::string* error);
    bool active() const { return !lines_.empty(); }
    // After the backend's NewFrame, before ImGui::NewFrame: runs actions, may inject keys.
    void before_frame(App& app, GLFWwindow* window);
    // After rendering, before the swap: takes a pending screenshot.
    void after_render(App& app, const GlFuncs& gl, int fb_width, int fb_height);
    bool quit() const { return quit_; }
    int exit_status() const { return failed_ ? 3 : 0; }

private:
    struct KeyPress {
        int key = -1;
        bool ctrl = false, shift = false;
        int frames_left = 0;  // pressed this many frames, then released
    };
    bool step(App& app, GLFWwindow* window);  // false: the current action waits
    void fail(const std::string& what);
    bool parse_key(const std::string& spec, KeyPress& out);

    std::vector<std::string> lines_;
    size_t pc_ = 0;
    int line_no_ = 0;
    bool started_ = false;   // the current action has begun (waits)
    double deadline_ = 0;    // for waits
    int frames_ = 0;         // frames waited within the current action
    KeyPress key_;
    std::string screenshot_path_;
    bool quit_ = false, failed_ = false;
};

}  // namespace chat
