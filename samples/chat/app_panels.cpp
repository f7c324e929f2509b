// Toolbar (model path, recent models, load progress), notices, sidebar, status bar, and the
// Settings and Model card windows.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "app.h"
#include "process_memory.h"
#include "ikllm.h"

namespace chat {

namespace {
const ImVec4 kErrorColor(1.0f, 0.45f, 0.40f, 1.0f);
const ImVec4 kWarnColor(1.0f, 0.80f, 0.30f, 1.0f);
const ImVec4 kDimColor(0.62f, 0.62f, 0.66f, 1.0f);

void help_marker(const std::string& doc) {
    ImGui::SameLine();
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
        ImGui::TextUnformatted(doc.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}
}  // namespace

void App::draw_toolbar() {
    const bool is_loading = loading();
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Model");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.45f);
    const bool enter = ImGui::InputTextWithHint("##model_path", "/path/to/model.gguf", &model_path_field_,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    ImGui::BeginDisabled(is_loading);
    if (ImGui::Button("Open") || (enter && !is_loading)) open_model(model_path_field_);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120 * fonts_.scale);
    if (ImGui::BeginCombo("##recent", "Recent", ImGuiComboFlags_HeightLarge)) {
        if (app_state_.recent_models.empty()) ImGui::TextDisabled("no recent models");
        for (const std::string& p : app_state_.recent_models)
            if (ImGui::Selectable(p.c_str())) open_model(p);
        ImGui::EndCombo();
    }
    ImGui::EndDisabled();
    ImGui::SameLine();
    if (is_loading) {
        ImGui::ProgressBar(snap_.load_progress, ImVec2(160 * fonts_.scale, 0));
        ImGui::SameLine();
        if (ImGui::Button("Cancel")) cancel_load();
    } else if (snap_.card) {
        ImGui::AlignTextToFramePadding();
        ImGui::TextColored(kDimColor, "%s, %s params", snap_.card->architecture.c_str(),
                           format_count(snap_.card->n_params).c_str());
    }
    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - 210 * fonts_.scale);
    if (ImGui::Button("Model card")) show_card_ = !show_card_;
    ImGui::SameLine();
    if (ImGui::Button("Settings")) show_settings_ = !show_settings_;
}

void App::draw_notices() {
    for (size_t i = 0; i < notices_.size();) {
        const Notice& n = notices_[i];
        ImGui::PushID((int)n.id);
        if (ImGui::SmallButton("x")) {
            notices_.erase(notices_.begin() + i);
            ImGui::PopID();
            continue;
        }
        ImGui::SameLine();
        const ImVec4 col = n.level == Notice::Error ? kErrorColor : n.level == Notice::Warning ? kWarnColor : kDimColor;
        ImGui::PushStyleColor(ImGuiCol_Text, col);
        ImGui::PushTextWrapPos(0);
        // Long messages (huge pastes, template errors) are cut for display; the log has them whole.
        const std::string shown = n.text.size() > 400 ? utf8_prefix(n.text, 400) + "..." : n.text;
        ImGui::TextUnformatted(shown.c_str());
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
        ImGui::PopID();
        ++i;
    }
}

void App::draw_sidebar() {
    if (ImGui::Button("+ New chat  (Ctrl+N)", ImVec2(-1, 0))) new_chat();
    ImGui::Separator();
    const auto order = sidebar_order();
    for (int k = 0; k < (int)order.size(); ++k) {
        const Conversation& c = convs_[order[k]];
        ImGui::PushID(c.id.c_str());
        const bool writing = pending_serial_ && snap_.reply.conversation_id == c.id;
        const std::string label = (writing ? "* " : "") + (c.title.empty() ? std::string("New chat") : c.title);
        if (ImGui::Selectable(label.c_str(), c.id == active_id_)) select_chat(k);
        if (ImGui::BeginPopupContextItem("menu")) {
            if (ImGui::MenuItem("Delete")) delete_chat(k);
            ImGui::EndPopup();
        }
        ImGui::PopID();
    }
}

void App::draw_status_bar() {
    const ReplyState& r = snap_.reply;
    const int decoded = r.prompt_tokens - r.reused_tokens;
    const double pp = r.prompt_seconds > 0 ? decoded / r.prompt_seconds : 0;
    const double tg = r.generate_seconds > 0 ? r.generated_tokens / r.generate_seconds : 0;
    const uint64_t model_bytes = snap_.card ? snap_.card->size_bytes : 0;
    ImGui::Separator();
    ImGui::TextColored(kDimColor,
                       "prompt %d tok (%d reused) %.1f tok/s | generated %d tok %.1f tok/s | context %d / %d | "
                       "model %s, KV %s (%s), RSS %s",
                       r.prompt_tokens, r.reused_tokens, pp, r.generated_tokens, tg, snap_.ctx_used, snap_.ctx_total,
                       format_bytes(model_bytes).c_str(), format_bytes(snap_.kv_bytes).c_str(), snap_.kv_type.c_str(),
                       format_bytes(resident_bytes()).c_str());
}

void App::draw_settings() {
    ImGui::SetNextWindowSize(ImVec2(560 * fonts_.scale, 560 * fonts_.scale), ImGuiCond_FirstUseEver);
    if (!ImGui::Begin("Settings", &show_settings_)) return ImGui::End();
    ImGui::TextWrapped("Listed by the library (ikllm_option_info). Sampling applies to the next reply; session "
                       "settings rebuild the context on the next reply; model settings apply on the next load.");
    ImGui::SetNextItemWidth(160 * fonts_.scale);
    if (ImGui::InputInt("max reply tokens", &app_state_.max_tokens)) save_state();
    help_marker("Longest reply in tokens; 0 = until the model ends it or the context is full (an app setting).");
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.6f);
    if (ImGui::InputTextWithHint("chat template file", "(the model's own template)", &app_state_.template_file))
        save_state();
    help_marker("A Jinja chat template (.jinja) used instead of the model's, e.g. for a model that has none. "
                "Read when a message is sent; rendered by ikllm_chat_render.");
    const struct {
        const char* title;
        OptionTable* table;
    } groups[] = {{"Sampling", &sampler_opts_}, {"Session (context, threads, KV cache)", &session_opts_},
                  {"Model loading (placement)", &model_opts_}};
    for (const auto& g : groups) {
        if (!ImGui::CollapsingHeader(g.title, g.table == &sampler_opts_ ? ImGuiTreeNodeFlags_DefaultOpen : 0)) continue;
        ImGui::PushID(g.title);
        for (OptionField& f : g.table->fields()) {
            ImGui::PushID(f.name.c_str());
            bool changed = false;
            if (f.is_flag()) {
                bool on = f.value == "1";
                if (ImGui::Checkbox(f.name.c_str(), &on)) {
                    f.value = std::string(1, on ? '1' : '0');
                    changed = true;
                }
            } else {
                ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.5f);
                changed = ImGui::InputText(f.name.c_str(), &f.value);
            }
            std::string doc = f.doc + "\ndefault: " + (f.default_value.empty() ? "(empty)" : f.default_value);
            if (!f.min.empty() || !f.max.empty()) doc += "\nrange: [" + f.min + ", " + f.max + "]";
            help_marker(doc);
            if (f.value != f.default_value) {
                ImGui::SameLine();
                if (ImGui::SmallButton("reset")) {
                    f.value = f.default_value;
                    changed = true;
                }
            }
            if (changed) {
                g.table->validate(f);
                save_state();
            }
            if (!f.error.empty()) ImGui::TextColored(kErrorColor, "%s", f.error.c_str());
            ImGui::PopID();
        }
        ImGui::PopID();
    }
    ImGui::End();
}

void App::draw_model_card() {
    ImGui::SetNextWindowSize(ImVec2(600 * fonts_.scale, 520 * fonts_.scale), ImGuiCond_FirstUseEver);
    if (!ImGui::Begin("Model card", &show_card_)) return ImGui::End();
    if (!snap_.card) {
        ImGui::TextDisabled("No model loaded.");
        return ImGui::End();
    }
    const ModelCard& k = *snap_.card;
    if (ImGui::BeginTable("card", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
        auto row = [](const char* a, const std::string& b) {
            ImGui::TableNextRow();
            ImGui::TableSetColumnIndex(0);
            ImGui::TextUnformatted(a);
            ImGui::TableSetColumnIndex(1);
            ImGui::TextWrapped("%s", b.c_str());
        };
        row("file", k.path);
        row("name", k.name.empty() ? "(none)" : k.name);
        row("architecture", k.architecture);
        row("parameters", format_count(k.n_params) + " (" + std::to_string(k.n_params) + ")");
        row("size on disk", format_bytes(k.size_bytes));
        row("layers / embedding", std::to_string(k.n_layer) + " / " + std::to_string(k.n_embd));
        row("vocabulary", std::to_string(k.n_vocab) + " tokens");
        row("training context", std::to_string(k.n_ctx_train) + " tokens");
        row("KV cache (f16)", format_bytes(k.kv_bytes_per_token_f16) + " per token, " +
                                  format_bytes(k.kv_bytes_per_token_f16 * (uint64_t)k.n_ctx_train) + " at the training context");
        // Before the first reply there is no session yet: estimate the KV cache from the n_ctx setting (f16).
        std::string kv = format_bytes(snap_.kv_bytes) + " (" + snap_.kv_type + ", " + std::to_string(snap_.ctx_total) + " tokens)";
        if (snap_.kv_bytes == 0) {
            const OptionField* n_ctx = session_opts_.find("n_ctx");
            const uint64_t n = n_ctx && n_ctx->error.empty() ? std::strtoull(n_ctx->value.c_str(), nullptr, 10) : 0;
            kv = "about " + format_bytes(k.kv_bytes_per_token_f16 * n) + " (f16, " + std::to_string(n) + " tokens)";
        }
        row("memory needed", "weights " + format_bytes(k.size_bytes) + " + KV cache " + kv);
        row("placement", k.placement);
        row("chat template", k.has_template ? "yes" : "none (the default ChatML template is used)");
        ImGui::EndTable();
    }
    if (ImGui::CollapsingHeader("Tensor types", ImGuiTreeNodeFlags_DefaultOpen)) {
        ImGui::Text("%d tensors", k.n_tensors);
        for (const TensorTypeRow& t : k.tensor_types)
            ImGui::BulletText("%s: %d tensors, %s", t.type.c_str(), t.count, format_bytes(t.bytes).c_str());
    }
    if (ImGui::CollapsingHeader("Metadata")) {
        for (const auto& [key, value] : k.meta) {
            ImGui::TextColored(kDimColor, "%s", key.c_str());
            ImGui::SameLine();
            ImGui::PushTextWrapPos(0);
            ImGui::TextUnformatted(value.c_str());
            ImGui::PopTextWrapPos();
        }
    }
    ImGui::End();
}

}  // namespace chat
