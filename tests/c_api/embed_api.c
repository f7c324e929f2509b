/* Sentence embeddings as an application gets them through ikllm.h: two texts in one batch (one
   sequence each), last-token pooling, no logits. Checks each embedding is the L2-normalised
   hidden state of its sequence's last token and that the LM head was skipped.
   argv[1] is the refdata folder; skipped when absent. */
#include <stdio.h>
#include <string.h>

#include "ikllm.h"

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        ikllm_status st_ = (call);                                                                   \
        if (st_ != IKLLM_OK) {                                                                       \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, ikllm_last_error(), ikllm_status_name(st_)); \
            return 1;                                                                                \
        }                                                                                            \
    } while (0)

/* C tests link only ikllm (no libm): square root by Newton's method, absolute value by hand. */
static double root(double x) {
    double r = x > 1 ? x : 1;
    int i;
    for (i = 0; i < 60; ++i) r = 0.5 * (r + x / r);
    return r;
}
static double absd(double x) { return x < 0 ? -x : x; }

int main(int argc, char** argv) {
    char path[4096];
    FILE* probe;
    ikllm_lib* lib = NULL;
    ikllm_model* model = NULL;
    ikllm_session* session = NULL;
    ikllm_options* opts = NULL;
    const char* texts[2] = {"The quick brown fox", "A sentence to embed, a little longer than the first"};
    ikllm_token batch[256];
    int32_t seq[256], want[256], last_index[2];
    int32_t total = 0, s, j, n_embd = 0;
    size_t n;
    const float *emb = NULL, *hidden = NULL, *logits = NULL;

    if (argc < 2) return 0;
    snprintf(path, sizeof path, "%s/models/qwen3-tiny-f16.gguf", argv[1]);
    probe = fopen(path, "rb");
    if (!probe) {
        printf("reference data not present; skipping\n");
        return 0;
    }
    fclose(probe);

    CHECK(ikllm_lib_create(0, &lib));
    CHECK(ikllm_model_load(lib, path, NULL, NULL, NULL, NULL, &model));
    CHECK(ikllm_options_create(IKLLM_OPTIONS_SESSION, &opts));
    CHECK(ikllm_options_set_int(opts, "n_ctx", 256));
    CHECK(ikllm_options_set_int(opts, "n_seq_max", 2));
    CHECK(ikllm_options_set_int(opts, "embeddings", 1));
    CHECK(ikllm_options_set_string(opts, "pooling", "last"));
    CHECK(ikllm_session_create(model, opts, &session));
    ikllm_options_free(opts);
    if (ikllm_session_pooling(session) != IKLLM_POOLING_LAST) return 1;

    for (s = 0; s < 2; ++s) {
        CHECK(ikllm_tokenize(model, texts[s], strlen(texts[s]), IKLLM_TOKENIZE_ADD_SPECIAL, batch + total, 128, &n));
        for (j = 0; j < (int32_t)n; ++j) {
            seq[total + j] = s;
            want[total + j] = 0; /* embeddings only: skip the LM head */
        }
        total += (int32_t)n;
        last_index[s] = total - 1;
    }
    CHECK(ikllm_session_decode(session, batch, NULL, seq, want, total, 0));
    if (ikllm_session_logits(session, -1, &logits, NULL) != IKLLM_ERR_INVALID_ARGUMENT) return 1;

    for (s = 0; s < 2; ++s) {
        double norm = 0, hnorm = 0;
        CHECK(ikllm_session_embeddings(session, s, &emb, &n_embd));
        CHECK(ikllm_session_hidden_state(session, last_index[s], &hidden, NULL));
        if (n_embd != ikllm_model_n_embd(model)) return 1;
        for (j = 0; j < n_embd; ++j) {
            norm += (double)emb[j] * emb[j];
            hnorm += (double)hidden[j] * hidden[j];
        }
        if (absd(root(norm) - 1.0) > 1e-5) {
            fprintf(stderr, "embedding %d has norm %g\n", s, root(norm));
            return 1;
        }
        for (j = 0; j < n_embd; ++j)
            if (absd(emb[j] - hidden[j] / root(hnorm)) > 1e-6) {
                fprintf(stderr, "embedding %d differs from its last hidden state at %d\n", s, j);
                return 1;
            }
    }
    ikllm_session_free(session);
    ikllm_model_free(model);
    ikllm_lib_free(lib);
    printf("embed_api: ok\n");
    return 0;
}
