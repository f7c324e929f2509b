// Readable text from HTML: tags dropped, script/style removed, entities decoded, blocks on lines.
#pragma once

#include <string>
#include <string_view>

namespace batch {

std::string html_to_text(std::string_view html);

}  // namespace batch
