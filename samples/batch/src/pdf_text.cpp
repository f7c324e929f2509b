#include "pdf_text.h"

#ifdef IKLLM_BATCH_HAVE_POPPLER
#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-page.h>

#include <memory>
#endif

namespace batch {

#ifdef IKLLM_BATCH_HAVE_POPPLER

namespace {
// Poppler prints parse warnings to stderr by default; a batch run reports them per document.
void quiet_poppler(const std::string&, void*) {}
}  // namespace

bool pdf_supported() { return true; }

bool pdf_to_text(const std::string& bytes, std::string* text, std::string* error) {
    poppler::set_debug_error_function(quiet_poppler, nullptr);
    std::unique_ptr<poppler::document> doc(
        poppler::document::load_from_raw_data(bytes.data(), (int)bytes.size()));
    if (!doc) {
        *error = "PDF could not be parsed";
        return false;
    }
    if (doc->is_locked()) {
        *error = "PDF is encrypted";
        return false;
    }
    text->clear();
    for (int i = 0; i < doc->pages(); ++i) {
        std::unique_ptr<poppler::page> page(doc->create_page(i));
        if (!page) continue;
        const poppler::byte_array utf8 = page->text().to_utf8();
        if (!text->empty()) *text += "\n\n";
        text->append(utf8.begin(), utf8.end());
    }
    return true;
}

#else

bool pdf_supported() { return false; }

bool pdf_to_text(const std::string&, std::string*, std::string* error) {
    *error = "PDF support not built";
    return false;
}

#endif

}  // namespace batch
