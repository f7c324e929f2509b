/* An application's view: only ikllm.h. Loads a model, tokenizes, decodes two sequences in one
   batch, samples and streams text. argv[1] is the refdata folder; skipped when absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ikllm.h"

#define CHECK(call)                                                                          \
    do {                                                                                     \
        ikllm_status st_ = (call);                                                           \
        if (st_ != IKLLM_OK) {                                                               \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, ikllm_last_error(), ikllm_status_name(st_)); \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

int main(int argc, char** argv) {
    char path[4096];
    FILE* probe;
    ikllm_lib* lib = NULL;
    ikllm_model* model = NULL;
    ikllm_session* session = NULL;
    ikllm_options* opts = NULL;
    ikllm_sampler* sampler = NULL;
    ikllm_detok* detok = NULL;
    const char* prompts[2] = {"The quick brown fox", "Once upon a time"};
    ikllm_token toks[2][64];
    size_t n[2];
    ikllm_token batch[128];
    int32_t seq[128], want[128], out_index[2];
    int32_t total = 0, s, i, step, n_vocab = 0;
    const float* logits = NULL;

    if (argc < 2) return 0;
    snprintf(path, sizeof path, "%s/models/llama-tiny-f16.gguf", argv[1]);
    probe = fopen(path, "rb");
    if (!probe) {
        printf("reference data not present; skipping\n");
        return 0;
    }
    fclose(probe);
    if (ikllm_abi_version() != IKLLM_ABI_VERSION) return 1;

    CHECK(ikllm_lib_create(0, &lib));
    CHECK(ikllm_model_load(lib, path, NULL, NULL, NULL, NULL, &model));
    CHECK(ikllm_options_create(IKLLM_OPTIONS_SESSION, &opts));
    CHECK(ikllm_options_set_int(opts, "n_ctx", 256));
    CHECK(ikllm_options_set_int(opts, "n_seq_max", 2));
    CHECK(ikllm_session_create(model, opts, &session));
    ikllm_options_free(opts);

    for (s = 0; s < 2; ++s) {
        CHECK(ikllm_tokenize(model, prompts[s], strlen(prompts[s]), IKLLM_TOKENIZE_ADD_SPECIAL, toks[s], 64, &n[s]));
        for (i = 0; i < (int32_t)n[s]; ++i) {
            batch[total] = toks[s][i];
            seq[total] = s;
            want[total] = i == (int32_t)n[s] - 1;
            if (want[total]) out_index[s] = total;
            ++total;
        }
    }
    CHECK(ikllm_session_decode(session, batch, NULL, seq, want, total, 0));
    CHECK(ikllm_session_logits(session, out_index[1], &logits, &n_vocab));
    if (n_vocab != ikllm_model_n_vocab(model)) return 1;

    CHECK(ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &opts));
    CHECK(ikllm_options_set_float(opts, "temperature", 0.0));
    CHECK(ikllm_sampler_create(model, opts, &sampler));
    ikllm_options_free(opts);
    CHECK(ikllm_detok_create(model, 0, &detok));
    for (step = 0; step < 8; ++step) {
        ikllm_token next[2];
        int32_t nseq[2] = {0, 1}, nwant[2] = {1, 1};
        const char* text;
        size_t len;
        for (s = 0; s < 2; ++s) CHECK(ikllm_sampler_sample(sampler, session, step == 0 ? out_index[s] : s, &next[s]));
        CHECK(ikllm_detok_push(detok, next[1], &text, &len));
        fwrite(text, 1, len, stdout);
        CHECK(ikllm_session_decode(session, next, NULL, nseq, nwant, 2, 0));
    }
    printf("\n");
    if (ikllm_session_seq_pos_max(session, 0) != (int32_t)n[0] + 7) return 1;
    ikllm_detok_free(detok);
    ikllm_sampler_free(sampler);
    ikllm_session_free(session);
    ikllm_model_free(model);
    ikllm_lib_free(lib);
    printf("c_api_example: ok\n");
    return 0;
}
