#include "text_blocks.h"

namespace chat {

std::vector<TextBlock> split_blocks(const std::string& text) {
    std::vector<TextBlock> out;
    TextBlock cur;
    size_t pos = 0;
    auto flush = [&] {
        while (!cur.text.empty() && cur.text.back() == '\n') cur.text.pop_back();
        if (!cur.text.empty() || cur.code) out.push_back(cur);
        cur = TextBlock{};
    };
    while (pos <= text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        const std::string line = text.substr(pos, eol - pos);
        size_t lead = line.find_first_not_of(' ');
        if (lead != std::string::npos && lead < 4 && line.compare(lead, 3, "```") == 0) {
            const bool opening = !cur.code;
            flush();
            cur.code = opening;
            if (opening) {
                cur.lang = line.substr(lead + 3);
                while (!cur.lang.empty() && (cur.lang.back() == ' ' || cur.lang.back() == '\r')) cur.lang.pop_back();
            }
        } else {
            cur.text += line;
            if (eol < text.size()) cur.text += '\n';
        }
        if (eol >= text.size()) break;
        pos = eol + 1;
    }
    flush();
    return out;
}

}  // namespace chat
