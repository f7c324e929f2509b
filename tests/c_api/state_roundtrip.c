/* Session state through the public header only: a chat-like session (prompt, sampled reply)
   is saved to a file together with its sampler (the prompt but its last token decoded), a fresh
   session and sampler restore it, and both continue with bit-identical logits and the same sampled tokens. A truncated file and a
   session of another KV type are refused and change nothing. argv[1] is the refdata folder;
   skipped when absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "ikllm.h"

#define CHECK(call)                                                                          \
    do {                                                                                     \
        ikllm_status st_ = (call);                                                           \
        if (st_ != IKLLM_OK) {                                                               \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, ikllm_last_error(), ikllm_status_name(st_)); \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)
#define EXPECT(cond)                                                  \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                 \
        }                                                             \
    } while (0)

#define N_STEPS 8

static int make(ikllm_model* model, const char* kv_type, ikllm_session** s, ikllm_sampler** smp) {
    ikllm_options* o = NULL;
    CHECK(ikllm_options_create(IKLLM_OPTIONS_SESSION, &o));
    CHECK(ikllm_options_set_int(o, "n_ctx", 128));
    CHECK(ikllm_options_set_int(o, "n_threads", 2));
    CHECK(ikllm_options_set_string(o, "kv_type", kv_type));
    CHECK(ikllm_session_create(model, o, s));
    ikllm_options_free(o);
    if (!smp) return 0;
    CHECK(ikllm_options_create(IKLLM_OPTIONS_SAMPLER, &o));
    CHECK(ikllm_options_set_int(o, "seed", 1234));
    CHECK(ikllm_options_set_float(o, "temperature", 1.2));
    CHECK(ikllm_options_set_float(o, "repeat_penalty", 1.3));
    CHECK(ikllm_sampler_create(model, o, smp));
    ikllm_options_free(o);
    return 0;
}

/* Decodes the prompt's last token, then samples and decodes N_STEPS tokens; records the tokens
   and every step's logits. */
static int generate(ikllm_session* s, ikllm_sampler* smp, ikllm_token last, int32_t n_vocab, ikllm_token* toks,
                    float* logits) {
    int step;
    CHECK(ikllm_session_decode(s, &last, NULL, NULL, NULL, 1, 0));
    for (step = 0; step < N_STEPS; ++step) {
        const float* l = NULL;
        CHECK(ikllm_sampler_sample(smp, s, -1, &toks[step]));
        CHECK(ikllm_session_decode(s, &toks[step], NULL, NULL, NULL, 1, 0));
        CHECK(ikllm_session_logits(s, -1, &l, NULL));
        memcpy(logits + (size_t)step * n_vocab, l, sizeof(float) * n_vocab);
    }
    return 0;
}

int main(int argc, char** argv) {
    char model_path[4096], state_path[512], cut_path[600];
    const char* tmp = getenv("TMPDIR");
    const char* prompt = "Once upon a time, in a quiet village by the sea, there lived";
    ikllm_lib* lib = NULL;
    ikllm_model* model = NULL;
    ikllm_session *a = NULL, *b = NULL, *other = NULL;
    ikllm_sampler *sa = NULL, *sb = NULL;
    ikllm_token toks[64], gen_a[N_STEPS], gen_b[N_STEPS], mine[64];
    size_t n_toks = 0, n_mine = 0, need = 0;
    float *log_a, *log_b;
    int32_t n_vocab, n_reused = -1;
    FILE* f;
    char* bytes;
    long size;

    if (argc < 2) return 0;
    snprintf(model_path, sizeof model_path, "%s/models/llama-tiny-f16.gguf", argv[1]);
    f = fopen(model_path, "rb");
    if (!f) {
        printf("reference data not present; skipping\n");
        return 0;
    }
    fclose(f);
    snprintf(state_path, sizeof state_path, "%s/ikllm_state_roundtrip_%ld.ikstate", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    snprintf(cut_path, sizeof cut_path, "%s.cut", state_path);

    CHECK(ikllm_lib_create(0, &lib));
    CHECK(ikllm_model_load(lib, model_path, NULL, NULL, NULL, NULL, &model));
    n_vocab = ikllm_model_n_vocab(model);
    log_a = malloc(sizeof(float) * n_vocab * N_STEPS);
    log_b = malloc(sizeof(float) * n_vocab * N_STEPS);
    EXPECT(log_a && log_b);

    if (make(model, "f16", &a, &sa)) return 1;
    CHECK(ikllm_tokenize(model, prompt, strlen(prompt), IKLLM_TOKENIZE_ADD_SPECIAL, toks, 64, &n_toks));
    /* An empty session reuses nothing: decode all of the prompt but its last token. */
    CHECK(ikllm_session_prompt_reuse(a, 0, toks, (int32_t)n_toks, &n_reused));
    EXPECT(n_reused == 0);
    CHECK(ikllm_session_decode(a, toks, NULL, NULL, NULL, (int32_t)n_toks - 1, 0));
    CHECK(ikllm_sampler_accept(sa, toks, n_toks));
    CHECK(ikllm_session_state_save_file(a, NULL, 0, sa, 0, state_path));
    /* The state in memory is the same size as the file. */
    EXPECT(ikllm_session_state_save(a, NULL, 0, sa, 0, NULL, 0, &need) == IKLLM_ERR_BUFFER_TOO_SMALL);
    if (generate(a, sa, toks[n_toks - 1], n_vocab, gen_a, log_a)) return 1;

    /* Restore into a fresh session and sampler (another seed would not matter: the RNG state is restored). */
    if (make(model, "f16", &b, &sb)) return 1;
    CHECK(ikllm_session_state_load_file(b, state_path, sb, 0));
    CHECK(ikllm_session_seq_tokens(b, 0, mine, 64, &n_mine));
    EXPECT(n_mine == n_toks - 1 && memcmp(mine, toks, n_mine * sizeof(ikllm_token)) == 0);
    if (generate(b, sb, toks[n_toks - 1], n_vocab, gen_b, log_b)) return 1;
    EXPECT(memcmp(gen_a, gen_b, sizeof gen_a) == 0);
    EXPECT(memcmp(log_a, log_b, sizeof(float) * n_vocab * N_STEPS) == 0);

    /* A truncated copy of the file is refused and leaves b as it was. */
    f = fopen(state_path, "rb");
    EXPECT(f != NULL);
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    EXPECT((size_t)size == need);
    fseek(f, 0, SEEK_SET);
    bytes = malloc((size_t)size);
    EXPECT(bytes && fread(bytes, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    f = fopen(cut_path, "wb");
    EXPECT(f && fwrite(bytes, 1, (size_t)size - 5, f) == (size_t)size - 5);
    fclose(f);
    EXPECT(ikllm_session_state_load_file(b, cut_path, sb, 0) == IKLLM_ERR_INVALID_FILE);
    EXPECT(strlen(ikllm_last_error()) > 0);
    EXPECT(ikllm_session_seq_pos_max(b, 0) == (int32_t)n_toks + N_STEPS - 1);
    EXPECT(ikllm_session_seq_pos_max(b, 0) == ikllm_session_seq_pos_max(a, 0));
    /* Another KV type: refused with IKLLM_ERR_INCOMPATIBLE_STATE. */
    if (make(model, "q8_0", &other, NULL)) return 1;
    EXPECT(ikllm_session_state_load(other, bytes, (size_t)size, NULL, 0) == IKLLM_ERR_INCOMPATIBLE_STATE);
    EXPECT(ikllm_session_seq_pos_max(other, 0) == -1);
    /* The prompt cache now finds the whole prompt in b (all but the last token are reused). */
    CHECK(ikllm_session_prompt_reuse(b, 0, toks, (int32_t)n_toks, &n_reused));
    EXPECT(n_reused == (int32_t)n_toks - 1);

    remove(state_path);
    remove(cut_path);
    free(bytes);
    free(log_a);
    free(log_b);
    ikllm_session_free(other);
    ikllm_sampler_free(sa);
    ikllm_sampler_free(sb);
    ikllm_session_free(a);
    ikllm_session_free(b);
    ikllm_model_free(model);
    ikllm_lib_free(lib);
    printf("state_roundtrip: ok\n");
    return 0;
}
