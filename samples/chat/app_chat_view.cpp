// The main window: layout, the message list, the message box and the keyboard shortcuts.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include "app.h"
#include "text_blocks.h"

namespace chat {

namespace {
constexpr size_t kMaxInputBytes = 1u << 20;  // a paste beyond this is cut (and said so)
const ImVec4 kUserColor(0.45f, 0.70f, 1.00f, 1.0f);
const ImVec4 kAssistantColor(0.50f, 0.85f, 0.55f, 1.0f);
const ImVec4 kChatDimColor(0.62f, 0.62f, 0.66f, 1.0f);

bool enter_pressed() { return ImGui::IsKeyPressed(GLFW_KEY_ENTER) || ImGui::IsKeyPressed(GLFW_KEY_KP_ENTER); }
}  // namespace

// Enter sends, Shift+Enter inserts a newline (pasted newlines stay); pending replacements of the
// text (clear after send, script `type`) reach the widget's own buffer while it is being edited.
int input_callback(ImGuiInputTextCallbackData* data) {
    App* app = static_cast<App*>(data->UserData);
    if (data->EventFlag == ImGuiInputTextFlags_CallbackCharFilter) {
        if (data->EventChar == '\n' && enter_pressed() && !ImGui::GetIO().KeyShift) {
            app->send_requested_ = true;
            return 1;
        }
        return 0;
    }
    if (data->EventFlag == ImGuiInputTextFlags_CallbackAlways && app->input_replace_pending_) {
        data->DeleteChars(0, data->BufTextLen);
        data->InsertChars(0, app->input_replacement_.data(), app->input_replacement_.data() + app->input_replacement_.size());
        app->input_replace_pending_ = false;
    }
    return 0;
}

void App::draw() {
    poll_engine();
    handle_shortcuts();
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
    ImGui::Begin("##main", nullptr, flags);
    draw_toolbar();
    draw_notices();
    const float status_h = ImGui::GetFrameHeightWithSpacing();
    ImGui::BeginChild("sidebar", ImVec2(230 * fonts_.scale, -status_h), true);
    draw_sidebar();
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("chat", ImVec2(0, -status_h), false);
    draw_chat();
    ImGui::EndChild();
    draw_status_bar();
    ImGui::End();
    if (show_settings_) draw_settings();
    if (show_card_) draw_model_card();
}

void App::handle_shortcuts() {
    ImGuiIO& io = ImGui::GetIO();
    if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_N, false)) new_chat();
    if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
        if (pending_serial_ || loading()) {
            stop();
            // Swallow the key so a focused text box does not also revert its edit.
            io.KeysDownDuration[GLFW_KEY_ESCAPE] = -1.0f;
        } else if (editing_index_ >= 0) {
            editing_index_ = -1;
        }
    }
}

void App::draw_chat() {
    Conversation* c = active();
    if (!c) return;
    if (!app_state_.template_file.empty())
        ImGui::TextColored(kChatDimColor, "Chat template: %s", app_state_.template_file.c_str());
    else if (snap_.card && snap_.template_fallback)
        ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "This model has no chat template: the default ChatML template is used.");
    if (ImGui::CollapsingHeader("System prompt")) {
        ImGui::InputTextMultiline("##system", &c->system_prompt, ImVec2(-1, ImGui::GetTextLineHeight() * 3.5f));
        if (ImGui::IsItemDeactivatedAfterEdit()) save(*c);
    }
    const float input_h = ImGui::GetTextLineHeight() * 5 + ImGui::GetStyle().ItemSpacing.y * 2 +
                          ImGui::GetFrameHeightWithSpacing();
    ImGui::BeginChild("messages", ImVec2(0, -input_h), true);
    const bool at_bottom = ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - 4;
    if (c->messages.empty()) {
        ImGui::TextColored(kChatDimColor, snap_.card ? "Type a message below. Enter sends, Shift+Enter adds a line."
                                                 : "Open a model with the path field above, then type a message below.");
    }
    for (int i = 0; i < (int)c->messages.size(); ++i) draw_message(*c, i);
    if (scroll_to_bottom_ || (pending_serial_ && at_bottom)) ImGui::SetScrollHereY(1.0f);
    scroll_to_bottom_ = false;
    ImGui::EndChild();
    draw_input();
}

void App::draw_message(Conversation& c, int i) {
    Message& m = c.messages[i];
    const bool last = i + 1 == (int)c.messages.size();
    const bool streaming = last && pending_serial_ && m.role == "assistant" && snap_.reply.conversation_id == c.id;
    ImGui::PushID(i);
    ImGui::TextColored(m.role == "user" ? kUserColor : kAssistantColor, "%s", m.role == "user" ? "You" : "Assistant");
    if (streaming) {
        ImGui::SameLine();
        ImGui::TextColored(kChatDimColor, "writing... (Esc stops)");
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("Copy")) ImGui::SetClipboardText(m.content.c_str());
    if (!pending_serial_ && m.role == "user") {
        ImGui::SameLine();
        if (ImGui::SmallButton("Edit")) {
            editing_index_ = i;
            edit_buffer_ = m.content;
        }
    }
    if (!pending_serial_ && last && m.role == "assistant") {
        ImGui::SameLine();
        if (ImGui::SmallButton("Regenerate")) regenerate();
    }
    if (!m.reasoning.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, kChatDimColor);
        if (ImGui::TreeNode("reasoning", streaming && m.content.empty() ? "Thinking..." : "Reasoning")) {
            draw_text(m.reasoning);
            ImGui::TreePop();
        }
        ImGui::PopStyleColor();
    }
    if (editing_index_ == i) {
        ImGui::InputTextMultiline("##edit", &edit_buffer_, ImVec2(-1, ImGui::GetTextLineHeight() * 4));
        if (ImGui::Button("Send edited")) edit_and_resend(i, edit_buffer_);
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) editing_index_ = -1;
    } else if (m.content.empty() && streaming) {
        ImGui::TextColored(kChatDimColor, "...");
    } else {
        draw_text(m.content);
    }
    if (!streaming && m.content.empty() && !m.reasoning.empty() && editing_index_ != i)
        ImGui::TextColored(kChatDimColor, "(no answer after the reasoning: expand it above)");
    if (m.stopped) ImGui::TextColored(kChatDimColor, "(stopped)");
    ImGui::Spacing();
    ImGui::Separator();
    ImGui::PopID();
}

// Prose wraps; fenced code uses the monospace font on a darker background.
void App::draw_text(const std::string& text) {
    for (const TextBlock& b : split_blocks(text)) {
        ImGui::PushTextWrapPos(0.0f);
        if (!b.code) {
            ImGui::TextUnformatted(b.text.data(), b.text.data() + b.text.size());
            ImGui::PopTextWrapPos();
            continue;
        }
        ImDrawList* dl = ImGui::GetWindowDrawList();
        dl->ChannelsSplit(2);
        dl->ChannelsSetCurrent(1);
        ImGui::Indent(6 * fonts_.scale);
        ImGui::BeginGroup();
        if (!b.lang.empty()) ImGui::TextColored(kChatDimColor, "%s", b.lang.c_str());
        ImGui::PushFont(fonts_.mono);
        ImGui::TextUnformatted(b.text.data(), b.text.data() + b.text.size());
        ImGui::PopFont();
        ImGui::EndGroup();
        ImGui::Unindent(6 * fonts_.scale);
        ImVec2 a = ImGui::GetItemRectMin(), z = ImGui::GetItemRectMax();
        a.x -= 6 * fonts_.scale;
        a.y -= 3 * fonts_.scale;
        z.x = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
        z.y += 3 * fonts_.scale;
        dl->ChannelsSetCurrent(0);
        dl->AddRectFilled(a, z, IM_COL32(20, 22, 28, 255), 4 * fonts_.scale);
        dl->ChannelsMerge();
        ImGui::PopTextWrapPos();
        ImGui::Dummy(ImVec2(0, 2 * fonts_.scale));
    }
}

void App::draw_input() {
    const float button_w = 90 * fonts_.scale;
    const float h = ImGui::GetTextLineHeight() * 5;
    if (input_focus_pending_) {
        ImGui::SetKeyboardFocusHere();
        input_focus_pending_ = false;
    }
    const ImGuiInputTextFlags flags = ImGuiInputTextFlags_CallbackCharFilter | ImGuiInputTextFlags_CallbackAlways;
    ImGui::InputTextMultiline("##input", &input_, ImVec2(-button_w - ImGui::GetStyle().ItemSpacing.x, h), flags,
                              input_callback, this);
    if (!ImGui::IsItemActive()) input_replace_pending_ = false;  // input_ already holds the text
    if (input_.size() > kMaxInputBytes) {
        const size_t was = input_.size();
        set_input(utf8_prefix(input_, kMaxInputBytes));
        notify(Notice::Warning, "the pasted text (" + std::to_string(was) + " bytes) was cut to 1 MiB");
    }
    ImGui::SameLine();
    ImGui::BeginGroup();
    if (pending_serial_) {
        if (ImGui::Button("Stop", ImVec2(button_w, 0))) stop();
    } else {
        ImGui::BeginDisabled(!snap_.card);
        if (ImGui::Button("Send", ImVec2(button_w, 0))) send_requested_ = true;
        ImGui::EndDisabled();
        ImGui::BeginDisabled(snap_.phase != Phase::Idle);
        if (ImGui::Button("New chat", ImVec2(button_w, 0))) new_chat();
        ImGui::EndDisabled();
    }
    ImGui::EndGroup();
    if (input_.size() > 16384)
        ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "long message: %zu bytes (it must fit in the context)", input_.size());
    else
        ImGui::TextColored(kChatDimColor, "Enter: send   Shift+Enter: new line   Ctrl+N: new chat   Esc: stop");
    if (send_requested_) {
        send_requested_ = false;
        send();
    }
}

}  // namespace chat
