#include "screenshot.h"

#include <cstring>
#include <vector>

#include <stb_image_write.h>

namespace chat {

bool save_screenshot(const GlFuncs& gl, int w, int h, const std::string& path, std::string* error) {
    if (w <= 0 || h <= 0) {
        *error = "screenshot: the window has no size";
        return false;
    }
    std::vector<unsigned char> px((size_t)w * h * 4);
    gl.pixel_storei(kGlPackAlignment, 1);
    gl.read_buffer(kGlBack);
    gl.read_pixels(0, 0, w, h, kGlRgba, kGlUnsignedByte, px.data());
    // GL rows go bottom-up; PNG rows top-down. Alpha is forced opaque.
    std::vector<unsigned char> rgb((size_t)w * h * 3);
    for (int y = 0; y < h; ++y) {
        const unsigned char* src = px.data() + (size_t)(h - 1 - y) * w * 4;
        unsigned char* dst = rgb.data() + (size_t)y * w * 3;
        for (int x = 0; x < w; ++x) std::memcpy(dst + x * 3, src + x * 4, 3);
    }
    if (!stbi_write_png(path.c_str(), w, h, 3, rgb.data(), w * 3)) {
        *error = "screenshot: cannot write " + path;
        return false;
    }
    return true;
}

}  // namespace chat
