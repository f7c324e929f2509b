// Splits a message into prose and fenced code blocks (``` lines) so code can be drawn in a
// monospace font on its own background. An unclosed fence (still streaming) runs to the end.
#pragma once

#include <string>
#include <vector>

namespace chat {

struct TextBlock {
    bool code = false;
    std::string lang;  // the word after the opening fence, if any
    std::string text;
};

std::vector<TextBlock> split_blocks(const std::string& text);

}  // namespace chat
