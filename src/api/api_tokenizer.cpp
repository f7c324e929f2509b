// C boundary for tokenization, detokenization and streaming text.
#include "api/api_internal.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

using namespace ikllm;

struct ikllm_detok {
    const ikllm_model* model = nullptr;  // retained while the detokenizer lives
    ~ikllm_detok() {
        if (model) ikllm::api::release(model);
    }
    uint32_t flags = 0;
    bool first = true;
    tok::Utf8Stream stream;
    std::string out;
};

namespace {
const tok::Tokenizer& tokenizer(const ikllm_model* m) {
    IKLLM_REQUIRE(m, "model is NULL");
    return *m->m->tokenizer;
}
void check_token(const tok::Tokenizer& t, ikllm_token id) {
    if (id < 0 || id >= t.n_vocab())
        fail(Status::invalid_argument, "token " + std::to_string(id) + " out of range [0, " + std::to_string(t.n_vocab()) + ")");
}
}  // namespace

extern "C" {

ikllm_status ikllm_tokenize(const ikllm_model* m, const char* text, size_t len, uint32_t flags, ikllm_token* out,
                            size_t capacity, size_t* n_tokens) {
    return api::guard([&] {
        const tok::Tokenizer& t = tokenizer(m);
        IKLLM_REQUIRE(text || len == 0, "text is NULL");
        IKLLM_REQUIRE((flags & ~3u) == 0, "unknown tokenize flags");
        IKLLM_REQUIRE(out || capacity == 0, "tokens is NULL");
        const std::vector<int32_t> ids = t.encode(std::string_view(text ? text : "", len),
                                                  flags & IKLLM_TOKENIZE_ADD_SPECIAL, flags & IKLLM_TOKENIZE_PARSE_SPECIAL);
        if (n_tokens) *n_tokens = ids.size();
        if (capacity < ids.size())
            fail(Status::buffer_too_small, "token buffer holds " + std::to_string(capacity) + ", " +
                 std::to_string(ids.size()) + " needed");
        std::copy(ids.begin(), ids.end(), out);
    });
}

ikllm_status ikllm_token_to_piece(const ikllm_model* m, ikllm_token token, uint32_t flags, char* buf, size_t size,
                                  size_t* needed) {
    return api::guard([&] {
        const tok::Tokenizer& t = tokenizer(m);
        check_token(t, token);
        const std::string p = t.piece(token, flags & IKLLM_DETOK_RENDER_SPECIAL);
        api::copy_out(p, buf, size, needed);
    });
}

ikllm_status ikllm_detokenize(const ikllm_model* m, const ikllm_token* tokens, size_t n, uint32_t flags, char* buf,
                              size_t size, size_t* needed) {
    return api::guard([&] {
        const tok::Tokenizer& t = tokenizer(m);
        IKLLM_REQUIRE(tokens || n == 0, "tokens is NULL");
        for (size_t i = 0; i < n; ++i) check_token(t, tokens[i]);
        const std::string raw = t.decode(tokens, n, !(flags & IKLLM_DETOK_KEEP_LEADING_SPACE),
                                         flags & IKLLM_DETOK_RENDER_SPECIAL);
        tok::Utf8Stream s;  // repair invalid UTF-8 into U+FFFD
        std::string text = s.feed(raw);
        text += s.flush();
        api::copy_out(text, buf, size, needed);
    });
}

ikllm_token ikllm_model_special_token(const ikllm_model* m, int32_t which) {
    if (!m) return -1;
    const tok::SpecialIds& s = m->m->tokenizer->special_ids();
    switch (which) {
        case IKLLM_TOKEN_BOS: return s.bos;
        case IKLLM_TOKEN_EOS: return s.eos;
        case IKLLM_TOKEN_EOT: return s.eot;
        case IKLLM_TOKEN_UNK: return s.unk;
        case IKLLM_TOKEN_PAD: return s.pad;
        case IKLLM_TOKEN_SEP: return s.sep;
        default: return -1;
    }
}

int32_t ikllm_token_is_eog(const ikllm_model* m, ikllm_token token) {
    if (!m || token < 0 || token >= m->m->tokenizer->n_vocab()) return 0;
    return m->m->tokenizer->is_eog(token) ? 1 : 0;
}

ikllm_status ikllm_detok_create(const ikllm_model* m, uint32_t flags, ikllm_detok** out) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(m && out, "NULL argument");
        IKLLM_REQUIRE((flags & ~3u) == 0, "unknown detok flags");
        auto d = std::make_unique<ikllm_detok>();
        d->flags = flags;
        d->model = api::retain(m);
        *out = d.release();
    });
}
void ikllm_detok_free(ikllm_detok* d) { delete d; }

ikllm_status ikllm_detok_push(ikllm_detok* d, ikllm_token token, const char** text, size_t* len) {
    return api::guard([&] {
        IKLLM_REQUIRE(d && text && len, "NULL argument");
        const tok::Tokenizer& t = tokenizer(d->model);
        check_token(t, token);
        // decode() of a single token applies the vocabulary's leading-space rule to the stream's first token.
        const bool strip = d->first && !(d->flags & IKLLM_DETOK_KEEP_LEADING_SPACE);
        std::string raw = t.decode(&token, 1, strip, d->flags & IKLLM_DETOK_RENDER_SPECIAL);
        if (!raw.empty()) d->first = false;
        d->out = d->stream.feed(raw);
        *text = d->out.c_str();
        *len = d->out.size();
    });
}

ikllm_status ikllm_detok_flush(ikllm_detok* d, const char** text, size_t* len) {
    return api::guard([&] {
        IKLLM_REQUIRE(d && text && len, "NULL argument");
        d->out = d->stream.flush();
        d->first = true;
        *text = d->out.c_str();
        *len = d->out.size();
    });
}

}  // extern "C"
