// Text of a PDF file through Debian's libpoppler-cpp (when the build found it).
#pragma once

#include <string>

namespace batch {

// True when this build can read PDFs.
bool pdf_supported();

// Extracts the text of every page (pages separated by a blank line). On failure returns false
// and sets *error ("PDF support not built" when poppler was missing at configure time).
bool pdf_to_text(const std::string& bytes, std::string* text, std::string* error);

}  // namespace batch
