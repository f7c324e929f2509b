// Saves the back buffer (after rendering, before the swap) as a PNG.
#pragma once

#include <string>

#include "gl_funcs.h"

namespace chat {

// false with *error set when the pixels cannot be read or the file cannot be written.
bool save_screenshot(const GlFuncs& gl, int width, int height, const std::string& path, std::string* error);

}  // namespace chat
