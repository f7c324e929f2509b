// The few OpenGL calls the app makes itself, looked up through GLFW (no GL development package or
// loader library needed; the ImGui OpenGL3 backend has its own loader).
#pragma once

#include <GLFW/glfw3.h>

namespace chat {

struct GlFuncs {
    using Viewport = void (*)(int, int, int, int);
    using ClearColor = void (*)(float, float, float, float);
    using Clear = void (*)(unsigned);
    using PixelStorei = void (*)(unsigned, int);
    using ReadBuffer = void (*)(unsigned);
    using ReadPixels = void (*)(int, int, int, int, unsigned, unsigned, void*);
    Viewport viewport = nullptr;
    ClearColor clear_color = nullptr;
    Clear clear = nullptr;
    PixelStorei pixel_storei = nullptr;
    ReadBuffer read_buffer = nullptr;
    ReadPixels read_pixels = nullptr;

    // Needs a current context. false when a function is missing.
    bool load() {
        viewport = (Viewport)glfwGetProcAddress("glViewport");
        clear_color = (ClearColor)glfwGetProcAddress("glClearColor");
        clear = (Clear)glfwGetProcAddress("glClear");
        pixel_storei = (PixelStorei)glfwGetProcAddress("glPixelStorei");
        read_buffer = (ReadBuffer)glfwGetProcAddress("glReadBuffer");
        read_pixels = (ReadPixels)glfwGetProcAddress("glReadPixels");
        return viewport && clear_color && clear && pixel_storei && read_buffer && read_pixels;
    }
};

// GL enum values used above (from the OpenGL specification).
constexpr unsigned kGlColorBufferBit = 0x00004000;
constexpr unsigned kGlPackAlignment = 0x0D05;
constexpr unsigned kGlBack = 0x0405;
constexpr unsigned kGlRgba = 0x1908;
constexpr unsigned kGlUnsignedByte = 0x1401;

}  // namespace chat
