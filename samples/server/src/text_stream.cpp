#include "text_stream.h"

namespace server {

TextStream::TextStream(const ikllm_model* model, bool render_special, std::vector<std::string> stops)
    : stops_(std::move(stops)) {
    // Generated text continues the prompt, so its first piece keeps its leading space (as `ikllm run`).
    uint32_t flags = IKLLM_DETOK_KEEP_LEADING_SPACE | (render_special ? IKLLM_DETOK_RENDER_SPECIAL : 0u);
    ikllm_detok_create(model, flags, &detok_);
}

TextStream::~TextStream() { ikllm_detok_free(detok_); }

std::string TextStream::push(int32_t token) {
    if (stopped_ || !detok_) return "";
    const char* text = nullptr;
    size_t len = 0;
    if (ikllm_detok_push(detok_, token, &text, &len) == IKLLM_OK) held_.append(text, len);
    return release(false);
}

std::string TextStream::finish() {
    if (stopped_ || !detok_) return "";
    const char* text = nullptr;
    size_t len = 0;
    if (ikllm_detok_flush(detok_, &text, &len) == IKLLM_OK) held_.append(text, len);
    return release(true);
}

std::string TextStream::release(bool at_end) {
    // The earliest complete stop string ends the text.
    size_t cut = std::string::npos;
    for (const auto& s : stops_) cut = std::min(cut, held_.find(s));
    if (cut != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, cut);
        held_.clear();
        return out;
    }
    // Keep the longest tail that is the start of some stop string; it may still complete.
    size_t keep = 0;
    if (!at_end)
        for (const auto& s : stops_)
            for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
                if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
                    keep = n;
                    break;
                }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string token_piece(const ikllm_model* model, int32_t token) {
    char buf[256];
    size_t needed = 0;
    ikllm_status st = ikllm_token_to_piece(model, token, IKLLM_DETOK_RENDER_SPECIAL, buf, sizeof buf, &needed);
    // needed counts the terminating NUL.
    if (st == IKLLM_OK) return std::string(buf, needed ? needed - 1 : 0);
    if (st != IKLLM_ERR_BUFFER_TOO_SMALL) return "";
    std::string s(needed, '\0');
    if (ikllm_token_to_piece(model, token, IKLLM_DETOK_RENDER_SPECIAL, s.data(), s.size(), &needed) != IKLLM_OK)
        return "";
    s.resize(needed ? needed - 1 : 0);
    return s;
}

}  // namespace server
