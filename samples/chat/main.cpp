// ikllm-chat: a desktop chat app on ikllm.h (Dear ImGui + GLFW + OpenGL 3).
//
//   ikllm-chat [--model PATH] [--config-dir DIR] [--script FILE] [--scale F] [--size WxH]
//
// The window and the frame loop live here; app.h has the application, engine.h the worker thread.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include "app.h"
#include "gl_funcs.h"
#include "script.h"

namespace {

struct Args {
    std::string model, config_dir, script;
    float scale = 0;  // 0: from the monitor's content scale
    int width = 1280, height = 760;
};

void usage() {
    std::printf(
        "usage: ikllm-chat [--model PATH] [--config-dir DIR] [--script FILE] [--scale F] [--size WxH]\n"
        "  --model PATH      open this model at start\n"
        "  --config-dir DIR  conversations and settings (default $IKLLM_CHAT_CONFIG_DIR, else\n"
        "                    $XDG_CONFIG_HOME/ikllm-chat, else ~/.config/ikllm-chat)\n"
        "  --script FILE     run the actions in FILE (see samples/chat/README.md), then quit\n"
        "  --scale F         UI scale (default: the monitor's content scale)\n");
}

bool parse_args(int argc, char** argv, Args& a) {
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (k == "-h" || k == "--help") return usage(), false;
        if ((k == "--model" || k == "--config-dir" || k == "--script" || k == "--scale" || k == "--size") && !(v = next())) {
            std::fprintf(stderr, "ikllm-chat: %s needs a value\n", k.c_str());
            return false;
        }
        if (k == "--model") a.model = v;
        else if (k == "--config-dir") a.config_dir = v;
        else if (k == "--script") a.script = v;
        else if (k == "--scale") a.scale = std::strtof(v, nullptr);
        else if (k == "--size") std::sscanf(v, "%dx%d", &a.width, &a.height);
        else {
            std::fprintf(stderr, "ikllm-chat: unknown argument %s\n", k.c_str());
            usage();
            return false;
        }
    }
    return true;
}

// DejaVu from Debian's fonts-dejavu-core, with the Latin, Greek and Cyrillic ranges it covers.
chat::Fonts load_fonts(float scale) {
    ImGuiIO& io = ImGui::GetIO();
    static const ImWchar ranges[] = {0x0020, 0x024F, 0x0370, 0x03FF, 0x0400, 0x052F, 0x2000, 0x206F,
                                     0x2190, 0x21FF, 0x2500, 0x25FF, 0xFFFD, 0xFFFD, 0};
    const char* dir = "/usr/share/fonts/truetype/dejavu/";
    const std::string sans = std::string(dir) + "DejaVuSans.ttf", mono = std::string(dir) + "DejaVuSansMono.ttf";
    chat::Fonts f;
    f.scale = scale;
    if (std::filesystem::exists(sans)) {
        f.body = io.Fonts->AddFontFromFileTTF(sans.c_str(), 16.0f * scale, nullptr, ranges);
        f.mono = std::filesystem::exists(mono) ? io.Fonts->AddFontFromFileTTF(mono.c_str(), 15.0f * scale, nullptr, ranges)
                                               : f.body;
    }
    if (!f.body) {
        std::fprintf(stderr, "ikllm-chat: %s not found (install fonts-dejavu-core); using the built-in font\n", sans.c_str());
        ImFontConfig cfg;
        cfg.SizePixels = 13.0f * scale;
        f.body = f.mono = io.Fonts->AddFontDefault(&cfg);
    }
    return f;
}

void set_style(float scale) {
    ImGui::StyleColorsDark();
    ImGuiStyle& s = ImGui::GetStyle();
    s.WindowRounding = 4;
    s.FrameRounding = 4;
    s.ChildRounding = 4;
    s.FramePadding = ImVec2(8, 5);
    s.ItemSpacing = ImVec2(8, 6);
    s.Colors[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.12f, 0.14f, 1.0f);
    s.Colors[ImGuiCol_ChildBg] = ImVec4(0.13f, 0.14f, 0.17f, 1.0f);
    s.ScaleAllSizes(scale);
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    if (!parse_args(argc, argv, args)) return 2;
    chat::ScriptRunner script;
    if (!args.script.empty()) {
        std::string err;
        if (!script.load(args.script, &err)) {
            std::fprintf(stderr, "ikllm-chat: %s\n", err.c_str());
            return 2;
        }
    }
    if (!glfwInit()) {
        std::fprintf(stderr, "ikllm-chat: cannot initialise GLFW (no display? run under Xvfb: xvfb-run -a ikllm-chat)\n");
        return 4;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 2);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    GLFWwindow* window = glfwCreateWindow(args.width, args.height, "ikllm chat", nullptr, nullptr);
    if (!window) {
        std::fprintf(stderr, "ikllm-chat: cannot create an OpenGL 3.2 window\n");
        glfwTerminate();
        return 4;
    }
    glfwMakeContextCurrent(window);
    glfwSwapInterval(1);
    chat::GlFuncs gl;
    if (!gl.load()) {
        std::fprintf(stderr, "ikllm-chat: OpenGL functions missing\n");
        return 4;
    }
    float scale = args.scale;
    if (scale <= 0) {
        float sx = 1, sy = 1;
        glfwGetWindowContentScale(window, &sx, &sy);
        scale = sx > 0.5f ? sx : 1.0f;
    }

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    const std::string config_dir = chat::resolve_config_dir(args.config_dir);
    std::filesystem::create_directories(config_dir);
    const std::string ini_path = config_dir + "/imgui.ini";
    io.IniFilename = script.active() ? nullptr : ini_path.c_str();  // scripted runs: same layout every time
    set_style(scale);
    const chat::Fonts fonts = load_fonts(scale);
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init("#version 150");

    int status = 0;
    {
        auto app = std::make_unique<chat::App>(config_dir, fonts);
        if (!args.model.empty()) app->open_model(args.model);
        auto last = std::chrono::steady_clock::now();
        while (!glfwWindowShouldClose(window) && !script.quit()) {
            const bool fast = script.active() || app->busy();
            if (fast) glfwPollEvents();
            else glfwWaitEventsTimeout(0.5);
            // At most ~60 frames per second: the worker thread needs the cores more than the UI.
            const auto frame_time = std::chrono::milliseconds(16);
            const auto now = std::chrono::steady_clock::now();
            if (fast && now - last < frame_time) std::this_thread::sleep_for(frame_time - (now - last));
            last = std::chrono::steady_clock::now();

            ImGui_ImplOpenGL3_NewFrame();
            ImGui_ImplGlfw_NewFrame();
            if (script.active()) script.before_frame(*app, window);
            ImGui::NewFrame();
            app->draw();
            ImGui::Render();
            int w = 0, h = 0;
            glfwGetFramebufferSize(window, &w, &h);
            gl.viewport(0, 0, w, h);
            gl.clear_color(0.08f, 0.09f, 0.10f, 1.0f);
            gl.clear(chat::kGlColorBufferBit);
            ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
            if (script.active()) script.after_render(*app, gl, w, h);
            glfwSwapBuffers(window);
        }
        status = script.exit_status();
        // The app goes first: its engine cancels a running load or reply and joins the worker.
    }
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
    return status;
}
