// The chat application: conversations, the engine, settings and every window of the UI. main.cpp
// owns the window and the frame loop; the script runner drives the same public actions a click or
// a key does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config_store.h"
#include "conversation.h"
#include "engine.h"
#include "option_table.h"

struct ImFont;
struct ImGuiInputTextCallbackData;

namespace chat {

struct Notice {
    enum Level { Info, Warning, Error } level = Info;
    std::string text;
    uint64_t id = 0;
};

struct Fonts {
    ImFont* body = nullptr;
    ImFont* mono = nullptr;
    float scale = 1.0f;
};

class App {
public:
    App(const std::string& config_dir, const Fonts& fonts);
    ~App();

    // Builds the whole UI for one frame (between ImGui::NewFrame and ImGui::Render).
    void draw();
    // True while something changes without user input (loading, generating): render continuously.
    bool busy() const;

    // Actions (buttons, keys and the script all end here).
    void open_model(const std::string& path);
    void cancel_load();
    void set_system_prompt(const std::string& text);
    void set_input(const std::string& text);   // replaces the text of the message box
    void send();                                // sends the message box as the next user message
    void stop();
    void new_chat();
    void select_chat(int index);                // in sidebar order
    void delete_chat(int index);
    void regenerate();                          // replaces the last reply
    void edit_and_resend(int message_index, const std::string& text);
    bool set_option(const std::string& kind_dot_key, const std::string& value, std::string* error);
    void show_window(const std::string& name, bool show);  // "settings", "card"
    void notify(Notice::Level level, const std::string& text);

    // State the script waits on and dumps.
    bool loading() const;
    bool reply_in_flight() const { return pending_serial_ != 0; }
    size_t streamed_bytes() const;  // of the reply in flight
    nlohmann::json state_json() const;

private:
    friend int input_callback(ImGuiInputTextCallbackData* data);
    void poll_engine();
    void apply_finished_reply(const EngineSnapshot& s);
    bool start_reply(Conversation& c);  // false (with a notice) when the request cannot be built
    Conversation* active();
    Conversation* find(const std::string& id);
    void save(Conversation& c);
    void save_state();
    void remember_model(const std::string& path);
    std::vector<int> sidebar_order() const;

    // UI pieces (app_panels.cpp / app_chat_view.cpp).
    void draw_toolbar();
    void draw_notices();
    void draw_sidebar();
    void draw_chat();
    void draw_message(Conversation& c, int index);
    void draw_text(const std::string& text);
    void draw_input();
    void draw_status_bar();
    void draw_settings();
    void draw_model_card();
    void handle_shortcuts();

    ConfigStore store_;
    AppState app_state_;
    Fonts fonts_;
    Engine engine_;
    EngineSnapshot snap_;  // refreshed each frame
    OptionTable model_opts_, session_opts_, sampler_opts_;

    std::vector<Conversation> convs_;
    std::string active_id_;
    int id_counter_ = 0;

    std::string model_path_field_;
    std::string input_;
    std::string input_replacement_;
    bool input_replace_pending_ = false;
    bool input_focus_pending_ = false;
    bool send_requested_ = false;
    int editing_index_ = -1;
    std::string edit_buffer_;

    uint64_t pending_serial_ = 0;  // the reply being written, 0 when none
    uint64_t seen_load_serial_ = 0;
    std::string last_loaded_path_;
    bool scroll_to_bottom_ = false;

    std::vector<Notice> notices_;
    uint64_t notice_counter_ = 0;
    bool show_settings_ = false, show_card_ = false;
};

}  // namespace chat
