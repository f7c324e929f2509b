/*
 * ikllm.h - the C interface of ikllm, an embeddable LLM inference engine for GGUF models.
 *
 * THREADING CONTRACT
 *   - An ikllm_lib handle may be used from any thread; its setters are not meant to race
 *     with calls that use it (configure it first, then share it).
 *   - A loaded ikllm_model is immutable: share it freely across threads and sessions.
 *     Free it only after every session created from it has been freed.
 *   - An ikllm_session, ikllm_sampler or ikllm_detok is used by ONE thread at a time
 *     (different objects may be used concurrently by different threads).
 *   - The log callback may be called from library worker threads.
 *
 * CONVENTIONS
 *   - Every fallible call returns an ikllm_status; IKLLM_OK (0) is success. After a failure,
 *     ikllm_last_error() on the SAME thread returns a message (valid until the next failing
 *     call on that thread). Bindings for runtimes that move goroutines/tasks between OS threads
 *     should use ikllm_last_error_copy() right after the call inside the same native call.
 *   - Out-handles are set to NULL on failure. Every create/load has a free that accepts NULL.
 *   - Strings are UTF-8, NUL-terminated unless a length is passed. Text the library produces
 *     is always valid UTF-8.
 *   - Borrowed outputs (const char* / const float* returned through out-parameters) say how
 *     long they stay valid. Memory the library allocates for the caller is released with
 *     ikllm_free().
 *   - Caller buffers: a call that writes into (buf, buf_size) always reports the size needed
 *     (for text: bytes including the terminating NUL) in *needed, and returns
 *     IKLLM_ERR_BUFFER_TOO_SMALL if buf_size was not enough (buf may be NULL with size 0 to
 *     query). Arrays of tokens follow the same rule with element counts.
 *   - Booleans are int32_t (0 = false, non-zero = true). No structs are passed by value.
 *   - Options are set by string key on an ikllm_options object (typed setters); unknown keys and
 *     out-of-range values are errors; ikllm_option_info() lists every key with type, default,
 *     range and a one-line description.
 *   - Enumerations are append-only with explicit values. `flags` arguments must be 0 unless
 *     documented otherwise. A shipped signature never changes; new variants get a _v2 suffix.
 */
#ifndef IKLLM_H
#define IKLLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define IKLLM_API __declspec(dllexport)
#else
#  define IKLLM_API __attribute__((visibility("default")))
#endif

/* ---- versions ------------------------------------------------------------------------ */
#define IKLLM_VERSION_MAJOR 0
#define IKLLM_VERSION_MINOR 1
#define IKLLM_VERSION_PATCH 0
#define IKLLM_VERSION_NUMBER (IKLLM_VERSION_MAJOR * 10000 + IKLLM_VERSION_MINOR * 100 + IKLLM_VERSION_PATCH)
/* ABI major: part of the shared library's SONAME (libikllm.so.0). */
#define IKLLM_ABI_VERSION 0

IKLLM_API int32_t ikllm_version_number(void);     /* IKLLM_VERSION_NUMBER of the loaded library */
IKLLM_API int32_t ikllm_abi_version(void);        /* IKLLM_ABI_VERSION of the loaded library */
IKLLM_API const char* ikllm_version_string(void); /* static string, e.g. "0.1.0" */

/* ---- status codes ------------------------------------------------------------------ */
typedef int32_t ikllm_status;
#define IKLLM_OK 0
#define IKLLM_ERR_INVALID_ARGUMENT 1   /* NULL handle, bad option value, out-of-range id/position */
#define IKLLM_ERR_IO 2                 /* file cannot be opened/read/written */
#define IKLLM_ERR_INVALID_FILE 3       /* corrupt, truncated or inconsistent model file */
#define IKLLM_ERR_UNSUPPORTED 4        /* valid but unsupported (architecture, tensor type, ...) */
#define IKLLM_ERR_OUT_OF_MEMORY 5
#define IKLLM_CANCELLED 6              /* a cancel flag/callback stopped the call; see call docs */
#define IKLLM_CONTEXT_FULL 7           /* the KV cache has no room for the batch; state unchanged */
#define IKLLM_END_OF_GENERATION 8      /* informational outcome of generation helpers */
#define IKLLM_ERR_BUFFER_TOO_SMALL 9   /* *needed says how much is required */
#define IKLLM_ERR_NOT_FOUND 10         /* metadata key / tensor / option not present */
#define IKLLM_ERR_INTERNAL 11
#define IKLLM_ERR_GRAMMAR 12
#define IKLLM_ERR_TEMPLATE 13
#define IKLLM_ERR_INCOMPATIBLE_STATE 14

/* Static name of a status ("IKLLM_OK", "IKLLM_ERR_IO", ...). */
IKLLM_API const char* ikllm_status_name(ikllm_status status);
/* Message of the last failing call on this thread ("" if none). Valid until the next failure. */
IKLLM_API const char* ikllm_last_error(void);
/* Status of the last failing call on this thread (IKLLM_OK if none). */
IKLLM_API ikllm_status ikllm_last_error_status(void);
/* Copies the last error message into buf (same buffer rules as above). */
IKLLM_API ikllm_status ikllm_last_error_copy(char* buf, size_t buf_size, size_t* needed);
/* Structured detail of the last failure, when known: tensor name ("" otherwise), file offset and
   bytes needed (UINT64_MAX when unknown). The string is valid until the next failure. */
IKLLM_API const char* ikllm_last_error_tensor(void);
IKLLM_API uint64_t ikllm_last_error_offset(void);
IKLLM_API uint64_t ikllm_last_error_bytes_needed(void);

/* Frees memory the library allocated for the caller (NULL is fine). */
IKLLM_API void ikllm_free(void* ptr);

/* ---- library instance ------------------------------------------------------------- */
typedef struct ikllm_lib ikllm_lib;

#define IKLLM_LOG_DEBUG 0
#define IKLLM_LOG_INFO 1
#define IKLLM_LOG_WARN 2
#define IKLLM_LOG_ERROR 3
/* Called with a NUL-terminated message without trailing newline. May run on worker threads. */
typedef void (*ikllm_log_fn)(void* user_data, int32_t level, const char* message);

/* Creates a library instance: log sink (none by default: nothing is printed), thread
   defaults, available backends. flags must be 0. */
IKLLM_API ikllm_status ikllm_lib_create(uint32_t flags, ikllm_lib** out_lib);
/* Drops the caller's handle. NULL is fine. Models loaded through it keep the instance alive
   (its log sink included) until the last of them is freed. */
IKLLM_API void ikllm_lib_free(ikllm_lib* lib);
/* fn NULL disables logging. Messages below min_level are dropped. */
IKLLM_API ikllm_status ikllm_lib_set_log(ikllm_lib* lib, ikllm_log_fn fn, void* user_data, int32_t min_level);
/* Default thread count for new sessions (0 = number of cores). */
IKLLM_API ikllm_status ikllm_lib_set_default_threads(ikllm_lib* lib, int32_t n_threads);

/* ---- options ------------------------------------------------------------------------ */
typedef struct ikllm_options ikllm_options;

#define IKLLM_OPTIONS_MODEL 0    /* for ikllm_model_load */
#define IKLLM_OPTIONS_SESSION 1  /* for ikllm_session_create */
#define IKLLM_OPTIONS_SAMPLER 2  /* for ikllm_sampler_create */
#define IKLLM_OPTIONS_QUANTIZE 3 /* for ikllm_quantize */
#define IKLLM_OPTIONS_CHAT 4     /* for ikllm_chat_render */

#define IKLLM_OPTION_INT 0
#define IKLLM_OPTION_FLOAT 1
#define IKLLM_OPTION_STRING 2

/* An options object of one kind holding every key at its default. */
IKLLM_API ikllm_status ikllm_options_create(int32_t kind, ikllm_options** out_options);
IKLLM_API void ikllm_options_free(ikllm_options* options);
/* Setters check the key exists for this kind, has this type (an int is accepted for a float
   option) and the value is in range; otherwise IKLLM_ERR_INVALID_ARGUMENT / IKLLM_ERR_NOT_FOUND. */
IKLLM_API ikllm_status ikllm_options_set_int(ikllm_options* options, const char* key, int64_t value);
IKLLM_API ikllm_status ikllm_options_set_float(ikllm_options* options, const char* key, double value);
IKLLM_API ikllm_status ikllm_options_set_string(ikllm_options* options, const char* key, const char* value);
/* Sets from text ("512", "0.8", "f16"), converting to the key's type: handy for CLIs and GUIs. */
IKLLM_API ikllm_status ikllm_options_set_from_text(ikllm_options* options, const char* key, const char* value);
IKLLM_API ikllm_status ikllm_options_get_int(const ikllm_options* options, const char* key, int64_t* out_value);
IKLLM_API ikllm_status ikllm_options_get_float(const ikllm_options* options, const char* key, double* out_value);
/* Borrowed: valid until the option is set again or the object is freed. */
IKLLM_API ikllm_status ikllm_options_get_string(const ikllm_options* options, const char* key, const char** out_value);

/* Number of options of a kind, and their description. All strings are static. */
IKLLM_API int32_t ikllm_option_count(int32_t kind);
IKLLM_API ikllm_status ikllm_option_info(int32_t kind, int32_t index, const char** out_name, int32_t* out_type,
                                         const char** out_default, const char** out_min, const char** out_max,
                                         const char** out_doc);

/* ---- model ------------------------------------------------------------------------ */
typedef struct ikllm_model ikllm_model;
typedef int32_t ikllm_token;

/* Progress in [0,1]. Return non-zero to cancel the load. Called on the loading thread. */
typedef int32_t (*ikllm_progress_fn)(void* user_data, float progress);

/* Loads a GGUF model (single file or the first part of a split set). By default (model option
   use_mmap -1) the file is read into memory on transparent huge pages when it fits in 3/4 of the
   available memory and nothing needs a mapping, else memory-mapped. options may be NULL (defaults). progress may be NULL. cancel_flag may be NULL;
   when it becomes non-zero (from any thread) the load stops with IKLLM_CANCELLED. The library
   reads the flag atomically; set it with an atomic store (C11 atomic_store, C++ std::atomic_ref,
   __atomic_store_n) so that the write is not a data race.
   On failure nothing stays allocated and *out_model is NULL. */
IKLLM_API ikllm_status ikllm_model_load(ikllm_lib* lib, const char* path, const ikllm_options* options,
                                        ikllm_progress_fn progress, void* progress_user_data,
                                        const volatile int32_t* cancel_flag, ikllm_model** out_model);
/* Drops the caller's handle (NULL is fine): the handle must not be used afterwards. Sessions and
   detokenizers made from the model keep it alive and keep working until they are freed too; the
   memory is released when the last of them goes. */
IKLLM_API void ikllm_model_free(ikllm_model* model);

/* Model-owned strings below are valid until ikllm_model_free. */
IKLLM_API const char* ikllm_model_architecture(const ikllm_model* model);
IKLLM_API const char* ikllm_model_name(const ikllm_model* model); /* general.name or "" */
IKLLM_API uint64_t ikllm_model_n_params(const ikllm_model* model);
IKLLM_API uint64_t ikllm_model_size_bytes(const ikllm_model* model);
IKLLM_API int32_t ikllm_model_n_vocab(const ikllm_model* model);
IKLLM_API int32_t ikllm_model_n_ctx_train(const ikllm_model* model);
IKLLM_API int32_t ikllm_model_n_embd(const ikllm_model* model);
IKLLM_API int32_t ikllm_model_n_layer(const ikllm_model* model);
/* How the weights were placed in memory (mmap, huge pages, NUMA policy): one line, model-owned. */
IKLLM_API const char* ikllm_model_placement(const ikllm_model* model);
/* KV-cache bytes per token for the given cache type name ("f16", "f32", ...). */
IKLLM_API ikllm_status ikllm_model_kv_bytes_per_token(const ikllm_model* model, const char* kv_type,
                                                      uint64_t* out_bytes);

/* GGUF metadata: count, key by index, and any value rendered as text (arrays abbreviated
   unless flags has IKLLM_META_FULL). */
#define IKLLM_META_FULL 1u
IKLLM_API int32_t ikllm_model_meta_count(const ikllm_model* model);
IKLLM_API const char* ikllm_model_meta_key(const ikllm_model* model, int32_t index); /* NULL if out of range */
IKLLM_API ikllm_status ikllm_model_meta_value(const ikllm_model* model, const char* key, uint32_t flags,
                                              char* buf, size_t buf_size, size_t* needed);

/* Tensors: count and per-index info. ne has 4 entries (unused dims = 1). */
IKLLM_API int32_t ikllm_model_tensor_count(const ikllm_model* model);
IKLLM_API ikllm_status ikllm_model_tensor_info(const ikllm_model* model, int32_t index, const char** out_name,
                                               int32_t* out_type, int64_t* out_ne4, uint64_t* out_bytes);
/* Decodes a whole tensor to float32 (rows of ne[0] values, row-major over ne[1..3]).
   capacity and *needed count floats. */
IKLLM_API ikllm_status ikllm_model_tensor_dequantize(const ikllm_model* model, const char* name, float* out,
                                                     size_t capacity, size_t* needed);
/* Static name of a tensor type id ("q4_K", "iq4_k_r4"); NULL if unknown. */
IKLLM_API const char* ikllm_type_name(int32_t type);

/* ---- devices and memory planning (docs/placement.md) ---------------------------------- */
/* Model options n_gpu_layers, tensor_split and tensor_placement choose a device per weight
   tensor: the last n_gpu_layers layers go to the GPUs (more than the layer count: the output head
   too), each GPU taking a contiguous run of them in device order, sized by the shares of
   tensor_split ("3,1"; empty: in proportion to each GPU's free memory; the head goes with the
   last layer); then the rules "REGEX=DEVICE,REGEX=DEVICE" (DEVICE: CPU or CUDA<n>, any case;
   first match wins, searched in the tensor name) override. Row-interleaved layouts (_R4/_R8)
   whose repack only moves bits go to a GPU converted to their plain type; other tensors a GPU
   cannot run, and requests for a GPU that is not available, stay on the CPU with a line in the
   placement report (not an error). Activations crossing between GPUs go through host memory.

   Devices holding the model's weights: index 0 is always "CPU", then the GPUs in use in device
   order ("CUDA0", "CUDA1", ...; the first GPU also when none holds weights). The number of
   devices (0 for NULL): */
IKLLM_API int32_t ikllm_model_device_count(const ikllm_model* model);
/* Name of device `index` ("CPU", "CUDA0"), model-owned; NULL when out of range. */
IKLLM_API const char* ikllm_model_device_name(const ikllm_model* model, int32_t index);
/* Bytes of weights held by device `index` (0 when out of range). */
IKLLM_API uint64_t ikllm_model_device_weight_bytes(const ikllm_model* model, int32_t index);
/* Device index (into the list above) of a weight tensor named as in the file.
   IKLLM_ERR_NOT_FOUND for a name the model does not have. */
IKLLM_API ikllm_status ikllm_model_tensor_device(const ikllm_model* model, const char* name, int32_t* out_device);
/* What placement could not do as asked, one line per item joined by '\n' ("" when nothing):
   rules that matched no tensor, GPU requests without a GPU, tensors kept on the CPU because the
   GPU has no kernel for their type. Model-owned, valid until ikllm_model_free. */
IKLLM_API const char* ikllm_model_placement_report(const ikllm_model* model);

/* GPUs this library instance can use. The CUDA backend is a plug-in (libikllm-cuda.so beside
   libikllm.so, or the path in $IKLLM_CUDA_PLUGIN; "none" disables it), looked for on the first
   of these calls or the first model load that asks for a GPU; without the plug-in, a driver or
   a GPU the count is 0 and ikllm_lib_gpu_status says why -- never an error. */
IKLLM_API int32_t ikllm_lib_gpu_count(ikllm_lib* lib);
/* One line, lib-owned, valid until ikllm_lib_free: "CUDA: 1 device: CUDA0: NVIDIA H100 80GB HBM3
   (sm_90, 79.1 GiB)" or the reason there is none ("CUDA: plug-in libikllm-cuda.so not loaded (...)",
   "CUDA: CUDA unavailable: ..."). */
IKLLM_API const char* ikllm_lib_gpu_status(ikllm_lib* lib);
/* Capabilities of GPU `index` as a JSON object, released with ikllm_free:
   {"name": "CUDA0", "description": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
    "memory_total": bytes, "memory_free": bytes, "memory_bandwidth": peak bytes per second of device
    memory (0 when unknown)}. IKLLM_ERR_NOT_FOUND when index is out of range. */
IKLLM_API ikllm_status ikllm_lib_gpu_info(ikllm_lib* lib, int32_t index, char** out_json);

/* Memory plan of a model file without loading its weights: reads the GGUF index only.
   model_options may be NULL (defaults: all on the CPU); else IKLLM_OPTIONS_MODEL, whose
   n_gpu_layers, tensor_split and tensor_placement give the placement to plan. session_options may
   be NULL (defaults); else IKLLM_OPTIONS_SESSION, whose n_ctx, n_batch and kv_type size the KV
   cache and the activation scratch, and offload_min_batch the first GPU's buffer for streamed host
   weights ("stream"). The GPUs planned for are this machine's when it has any, else
   hypothetical ones ("CUDA0", or one per tensor_split share) assumed to run every weight type
   except row-interleaved (_R4/_R8...) layouts: planning works on machines without a GPU.
   vram_budget > 0 also asks for a suggestion: the placement that puts the most on the GPUs, each
   within vram_budget bytes (everything but the routed experts first, then whole layers' experts
   from the last layer down, each on its layer's GPU while that fits; else whole layers
   ngl-style). flags: 0, or IKLLM_PLAN_AUTO_BUDGET: a suggestion for this machine's GPUs, each
   within its free memory less min(512 MiB, a tenth) for what the plan does not count (the CUDA
   context); vram_budget is then ignored, and a machine without a GPU gives
   IKLLM_ERR_INVALID_ARGUMENT.
   *out_json receives a JSON object (release it with ikllm_free; NULL on failure):
     {"architecture", "n_layer", "n_ctx", "n_batch", "offload_min_batch", "kv_type", "kv_bytes_per_token", "gpu" (the first),
      "gpus": [names], "gpu_available",
      "requested": {"n_gpu_layers", "tensor_placement", "tensor_split": [shares], "devices": [{"name",
                    "weights", "kv", "scratch", "stream", "total"}...], "report": [lines]},
      "suggestion" (only when vram_budget > 0 or IKLLM_PLAN_AUTO_BUDGET): {"vram_budget" (the first
                    GPU's), "vram_budgets": [per GPU], "n_gpu_layers", "tensor_placement",
                    "strategy", "expert_layers_on_gpu", "fits", "devices": [...], "report": [...]}}
   Byte counts are integers; "scratch" is an estimate (formula in docs/placement.md). Errors:
   IKLLM_ERR_INVALID_ARGUMENT (bad rules or shares, options of the wrong kind), IKLLM_ERR_IO,
   IKLLM_ERR_INVALID_FILE, IKLLM_ERR_UNSUPPORTED (architecture). */
#define IKLLM_PLAN_AUTO_BUDGET 1u
IKLLM_API ikllm_status ikllm_plan(ikllm_lib* lib, const char* path, const ikllm_options* model_options,
                                  const ikllm_options* session_options, uint64_t vram_budget, uint32_t flags,
                                  char** out_json);

/* ---- tokenizer ------------------------------------------------------------------------ */
#define IKLLM_TOKENIZE_ADD_SPECIAL 1u    /* add BOS/EOS as the vocabulary asks */
#define IKLLM_TOKENIZE_PARSE_SPECIAL 2u  /* match special-token text (e.g. "<|im_start|>") */

/* Tokenizes text (length text_len bytes; any bytes accepted). Writes up to capacity ids;
   *n_tokens receives the count needed (IKLLM_ERR_BUFFER_TOO_SMALL when capacity < count). */
IKLLM_API ikllm_status ikllm_tokenize(const ikllm_model* model, const char* text, size_t text_len, uint32_t flags,
                                      ikllm_token* tokens, size_t capacity, size_t* n_tokens);

#define IKLLM_DETOK_RENDER_SPECIAL 1u      /* write special tokens' text (default: skip them) */
#define IKLLM_DETOK_KEEP_LEADING_SPACE 2u  /* do not strip the SentencePiece leading space */
/* Raw bytes of one token's piece (may be an incomplete UTF-8 sequence; not NUL-checked). */
IKLLM_API ikllm_status ikllm_token_to_piece(const ikllm_model* model, ikllm_token token, uint32_t flags,
                                            char* buf, size_t buf_size, size_t* needed);
/* Text of a token sequence, valid UTF-8 (invalid bytes become U+FFFD). */
IKLLM_API ikllm_status ikllm_detokenize(const ikllm_model* model, const ikllm_token* tokens, size_t n_tokens,
                                        uint32_t flags, char* buf, size_t buf_size, size_t* needed);

#define IKLLM_TOKEN_BOS 0
#define IKLLM_TOKEN_EOS 1
#define IKLLM_TOKEN_EOT 2
#define IKLLM_TOKEN_UNK 3
#define IKLLM_TOKEN_PAD 4
#define IKLLM_TOKEN_SEP 5
/* Id of a special token, or -1 when the vocabulary has none. */
IKLLM_API ikllm_token ikllm_model_special_token(const ikllm_model* model, int32_t which);
/* Non-zero if the token ends generation (EOS, EOT, ...). */
IKLLM_API int32_t ikllm_token_is_eog(const ikllm_model* model, ikllm_token token);

/* Incremental detokenizer for streaming: only complete UTF-8 is ever returned. */
typedef struct ikllm_detok ikllm_detok;
IKLLM_API ikllm_status ikllm_detok_create(const ikllm_model* model, uint32_t flags, ikllm_detok** out_detok);
IKLLM_API void ikllm_detok_free(ikllm_detok* detok);
/* Feeds one token; out_text and out_len receive the newly completed text (possibly empty).
   Borrowed: valid until the next call on this detok. */
IKLLM_API ikllm_status ikllm_detok_push(ikllm_detok* detok, ikllm_token token, const char** out_text, size_t* out_len);
/* Ends the stream: a dangling incomplete sequence becomes U+FFFD. Resets the detok. */
IKLLM_API ikllm_status ikllm_detok_flush(ikllm_detok* detok, const char** out_text, size_t* out_len);

/* ---- session (context) -------------------------------------------------------------- */
typedef struct ikllm_session ikllm_session;

/* Options (IKLLM_OPTIONS_SESSION): n_ctx (KV cells), n_seq_max, n_batch, n_threads, kv_type, ...
   The session keeps a reference to the model. options may be NULL. */
IKLLM_API ikllm_status ikllm_session_create(const ikllm_model* model, const ikllm_options* options,
                                            ikllm_session** out_session);
IKLLM_API void ikllm_session_free(ikllm_session* session);
IKLLM_API int32_t ikllm_session_n_ctx(const ikllm_session* session);
IKLLM_API int32_t ikllm_session_n_seq_max(const ikllm_session* session);

/* Decodes n_tokens tokens as one batch. Token i belongs to sequence seq_ids[i] (0..n_seq_max-1)
   at position positions[i]. positions may be NULL: each token then takes the next position of
   its sequence. seq_ids may be NULL: all tokens belong to sequence 0. want_logits may be NULL:
   only the batch's last token gets logits. A sequence's positions must not repeat ones it
   already holds. On IKLLM_CONTEXT_FULL or any error the cache is unchanged.
   cancel_flag semantics as for loading: IKLLM_CANCELLED leaves the cache unchanged. */
IKLLM_API ikllm_status ikllm_session_decode(ikllm_session* session, const ikllm_token* tokens,
                                            const int32_t* positions, const int32_t* seq_ids,
                                            const int32_t* want_logits, int32_t n_tokens, uint32_t flags);
IKLLM_API ikllm_status ikllm_session_set_cancel_flag(ikllm_session* session, const volatile int32_t* cancel_flag);
/* Logits of batch token `index` (must have had want_logits; -1 = the last token that had it).
   Borrowed: valid until the next decode on this session. */
IKLLM_API ikllm_status ikllm_session_logits(const ikllm_session* session, int32_t index, const float** out_logits,
                                            int32_t* out_n_vocab);

/* Embeddings and hidden states. With the session option embeddings = 1, every decode also keeps
   the final hidden state of EVERY batch token: RMSNorm(x, output_norm), the n_embd values the LM
   head multiplies (logits = W_output . h). The LM head still runs only for tokens with
   want_logits (pass an all-zero want_logits to skip it). Option pooling ("" = the model's
   `<arch>.pooling_type`, none when absent; or none / mean / cls / last) then combines the tokens of
   each sequence IN THE SAME DECODE CALL into one vector: mean = their average, cls = the token with
   the lowest position, last = the one with the highest position. Nothing accumulates across calls:
   decode a whole sequence in one call to embed it (calls larger than n_batch are split internally
   and still count as one). Option embd_normalize (default 1) L2-normalises pooled vectors; hidden
   states are never normalised. A model asking for rank pooling (a reranker head) fails
   session creation with IKLLM_ERR_UNSUPPORTED unless pooling is set.
   Both calls return IKLLM_ERR_INVALID_ARGUMENT when embeddings are off, before any decode, for an
   index/sequence outside the last decode (or a sequence it had no tokens of), and, for
   ikllm_session_embeddings, when pooling is none. Borrowed: valid until the next decode. */
#define IKLLM_POOLING_NONE 0
#define IKLLM_POOLING_MEAN 1
#define IKLLM_POOLING_CLS 2
#define IKLLM_POOLING_LAST 3
/* Hidden state of batch token `index` of the last decode (-1 = the batch's last token). */
IKLLM_API ikllm_status ikllm_session_hidden_state(const ikllm_session* session, int32_t index, const float** out_hidden,
                                                  int32_t* out_n_embd);
/* Pooled (and, by default, L2-normalised) embedding of sequence seq_id from the last decode. */
IKLLM_API ikllm_status ikllm_session_embeddings(const ikllm_session* session, int32_t seq_id,
                                                const float** out_embedding, int32_t* out_n_embd);
/* The pooling in effect (an IKLLM_POOLING_* value), or -1 when embeddings are off or session is NULL. */
IKLLM_API int32_t ikllm_session_pooling(const ikllm_session* session);

/* Sequence operations. p1 < 0 means "to the end". */
IKLLM_API ikllm_status ikllm_session_seq_remove(ikllm_session* session, int32_t seq_id, int32_t p0, int32_t p1);
IKLLM_API ikllm_status ikllm_session_seq_copy(ikllm_session* session, int32_t src_seq, int32_t dst_seq, int32_t p0,
                                              int32_t p1);
IKLLM_API ikllm_status ikllm_session_seq_keep(ikllm_session* session, int32_t seq_id);
/* Adds delta to positions in [p0, p1) of the sequence (RoPE is re-applied to cached keys). */
IKLLM_API ikllm_status ikllm_session_seq_shift(ikllm_session* session, int32_t seq_id, int32_t p0, int32_t p1,
                                               int32_t delta);
/* Largest position held by the sequence, or -1 when empty. */
IKLLM_API int32_t ikllm_session_seq_pos_max(const ikllm_session* session, int32_t seq_id);
IKLLM_API ikllm_status ikllm_session_clear(ikllm_session* session);

/* ---- session state: save / restore, prompt reuse, context shift --------------------------- */
/* A session state holds the KV cache of chosen sequences (their cells: positions, the token
   decoded at each, which sequences share them, the K/V rows) and optionally a sampler's RNG
   state and penalty history (not its options). Logits are not saved: decode after restoring.
   The header identifies the model file (a fingerprint of the GGUF metadata and tensor table
   plus the file size; no weights are read), the model's shape, the KV cache type and the format
   and ABI versions; a checksum ends the data. Format and rules: docs/session-state.md.

   seq_ids/n_seq_ids: the sequences to save (distinct ids); NULL/0 = every sequence that holds
   at least one token. sampler may be NULL: no sampler state is saved. flags must be 0.
   ikllm_session_state_save writes into (buf, buf_size) with the caller-buffer convention
   (*needed = bytes; query with buf NULL and buf_size 0). */
struct ikllm_sampler; /* the ikllm_sampler of the sampling section below */
IKLLM_API ikllm_status ikllm_session_state_save(const ikllm_session* session, const int32_t* seq_ids,
                                                int32_t n_seq_ids, const struct ikllm_sampler* sampler, uint32_t flags,
                                                void* buf, size_t buf_size, size_t* needed);
/* Same into a file, atomically: written under a temporary name and renamed over path when
   complete (an existing file is replaced only then). */
IKLLM_API ikllm_status ikllm_session_state_save_file(const ikllm_session* session, const int32_t* seq_ids,
                                                     int32_t n_seq_ids, const struct ikllm_sampler* sampler, uint32_t flags,
                                                     const char* path);

#define IKLLM_STATE_REPLACE_ALL 1u  /* load: empty every sequence first, not only the saved ones */
/* Restores a state. Every saved sequence replaces the sequence with the same id (its previous
   tokens are dropped; other sequences are kept unless flags has IKLLM_STATE_REPLACE_ALL). To
   restore into another id, load then ikllm_session_seq_copy + ikllm_session_seq_remove (cells
   are shared, nothing is copied). With a non-NULL sampler, its RNG state and penalty history
   are restored too (its options stay). The last decode's logits are dropped. Restored sessions
   continue with bit-identical logits when restored into an empty session with the same n_ctx.
   Errors leave the session and the sampler unchanged:
     IKLLM_ERR_INCOMPATIBLE_STATE  another model file or shape, another KV type, another format
                                   or ABI version, a sequence id >= n_seq_max, more cells than
                                   n_ctx, or a sampler given but no sampler state saved;
     IKLLM_ERR_INVALID_FILE        not a state, truncated or corrupt (checksum mismatch);
     IKLLM_CONTEXT_FULL            other sequences hold too many cells;
     IKLLM_ERR_IO                  the file cannot be opened or read.
   (Only a file that fails or changes while loading, after it was checked, leaves the sequences
   being restored empty; the message says so.) */
IKLLM_API ikllm_status ikllm_session_state_load(ikllm_session* session, const void* data, size_t size,
                                                struct ikllm_sampler* sampler, uint32_t flags);
IKLLM_API ikllm_status ikllm_session_state_load_file(ikllm_session* session, const char* path,
                                                     struct ikllm_sampler* sampler, uint32_t flags);

/* Tokens held by a sequence, in position order (capacity and *n_tokens count tokens; the
   caller-buffer convention). -1 marks a cell whose token is unknown. */
IKLLM_API ikllm_status ikllm_session_seq_tokens(const ikllm_session* session, int32_t seq_id, ikllm_token* tokens,
                                                size_t capacity, size_t* n_tokens);
/* Prompt cache: prepares sequence seq_id for the prompt tokens[0..n_tokens). The longest prefix
   of it held at positions 0.. by this sequence, or by another one (then shared into this one,
   as ikllm_session_seq_copy does), is kept; everything else of this sequence is removed.
   *out_n_reused = the kept length, at most n_tokens - 1 so the caller always decodes at least
   the last token (and gets its logits): decode tokens + *out_n_reused, n_tokens - *out_n_reused
   with positions NULL. */
IKLLM_API ikllm_status ikllm_session_prompt_reuse(ikllm_session* session, int32_t seq_id, const ikllm_token* tokens,
                                                  int32_t n_tokens, int32_t* out_n_reused);
/* Context shift for a full window: drops positions [n_keep, n_keep + n_discard) of the sequence
   and moves the later ones down by n_discard (RoPE re-applied to their cached keys), so
   generation continues at position pos_max + 1 - n_discard. n_keep + n_discard must not exceed
   the sequence's length. Cells shared with other sequences are copied first (IKLLM_CONTEXT_FULL,
   nothing changed, when no cells are free for that). Later logits are close to, not identical
   with, a fresh decode of the shortened text: the kept entries were computed with the dropped
   tokens in context (docs/session-state.md). */
IKLLM_API ikllm_status ikllm_session_context_shift(ikllm_session* session, int32_t seq_id, int32_t n_keep,
                                                   int32_t n_discard);

/* ---- sampling ------------------------------------------------------------------------ */
typedef struct ikllm_sampler ikllm_sampler;

/* A sampler chain configured by IKLLM_OPTIONS_SAMPLER options (seed, temperature, top_k,
   top_p, min_p, typical_p, repeat_penalty, presence_penalty, frequency_penalty,
   penalty_last_n, chain, ignore_eos, grammar, grammar_root, json_schema). temperature <= 0 is greedy. Same seed + same inputs = same output. */
IKLLM_API ikllm_status ikllm_sampler_create(const ikllm_model* model, const ikllm_options* options,
                                            ikllm_sampler** out_sampler);
IKLLM_API void ikllm_sampler_free(ikllm_sampler* sampler);
/* Samples from the logits of batch token `index` of the session's last decode, then records the
   chosen token in the penalty history (and advances the grammar). IKLLM_ERR_GRAMMAR when the
   grammar allows no token (failed, or complete without an end-of-generation token). */
IKLLM_API ikllm_status ikllm_sampler_sample(ikllm_sampler* sampler, const ikllm_session* session, int32_t index,
                                            ikllm_token* out_token);
/* Same from caller-provided logits. */
IKLLM_API ikllm_status ikllm_sampler_sample_logits(ikllm_sampler* sampler, const float* logits, int32_t n_vocab,
                                                   ikllm_token* out_token);
/* Records tokens in the penalty history without sampling and, when the sampler has a grammar,
   advances it (tokens forced by the caller). A token the grammar rejects fails with
   IKLLM_ERR_GRAMMAR and leaves the grammar failed (tokens before it were recorded). Prompt
   tokens, which the grammar must not see, go through ikllm_sampler_accept_v2 with
   IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR. */
IKLLM_API ikllm_status ikllm_sampler_accept(ikllm_sampler* sampler, const ikllm_token* tokens, size_t n_tokens);
/* Clears history, re-seeds the RNG with the configured seed and puts the grammar back at its start. */
IKLLM_API ikllm_status ikllm_sampler_reset(ikllm_sampler* sampler);

/* ---- grammar-constrained sampling ------------------------------------------------------ */
/* Sampler options "grammar" (GBNF text, start rule "grammar_root", default "root") or
   "json_schema" (JSON Schema text, converted to GBNF) make every sampled token follow the grammar:
   tokens it rejects are removed before the rest of the chain (penalties, filters, temperature,
   greedy), special tokens are never sampled inside it, and end-of-generation tokens only once the
   grammar is complete (then, if nothing else can follow, only them). The grammar matches the bytes
   of the token pieces (ikllm_token_to_piece: the text ikllm_detok_* with
   IKLLM_DETOK_KEEP_LEADING_SPACE produces), so a token may end inside a UTF-8 character.
   ikllm_sampler_create fails with IKLLM_ERR_GRAMMAR and a message naming the line and column
   (GBNF) or the JSON pointer (schema) of a problem. Supported syntax: docs/structured-output.md. */
#define IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR 1u  /* ikllm_sampler_accept_v2: penalty history only */
/* ikllm_sampler_accept with flags (0 = the same as ikllm_sampler_accept). */
IKLLM_API ikllm_status ikllm_sampler_accept_v2(ikllm_sampler* sampler, const ikllm_token* tokens, size_t n_tokens,
                                               uint32_t flags);
#define IKLLM_GRAMMAR_NONE 0        /* the sampler has no grammar */
#define IKLLM_GRAMMAR_INCOMPLETE 1  /* more text is required */
#define IKLLM_GRAMMAR_COMPLETE 2    /* the start rule is matched; more text may follow (or end of generation) */
#define IKLLM_GRAMMAR_DONE 3        /* matched and nothing can follow: only end of generation (stop here) */
#define IKLLM_GRAMMAR_FAILED 4      /* an accepted token did not match; sampling fails until reset */
/* Where the sampler's grammar stands (one of IKLLM_GRAMMAR_*). */
IKLLM_API ikllm_status ikllm_sampler_grammar_state(const ikllm_sampler* sampler, int32_t* out_state);
/* Converts a JSON Schema to GBNF text (start rule "root"). *out_gbnf is released with ikllm_free.
   IKLLM_ERR_GRAMMAR with "json_schema: line L, column C: ..." for malformed JSON or
   "json_schema at '/json/pointer': ..." for unsupported or contradictory schema keywords. */
IKLLM_API ikllm_status ikllm_json_schema_to_grammar(const char* schema_json, char** out_gbnf);

/* ---- importance matrix (calibration statistics for low-bit quantization) ---------------- */
/* Starts collecting, for every weight matrix the session multiplies, the mean square of each
   input column over all tokens decoded from now on (clears earlier statistics). */
IKLLM_API ikllm_status ikllm_session_imatrix_start(ikllm_session* session);
/* Writes the statistics so far (reference ".dat" layout, usable by ikllm_quantize and by the
   reference quantizer) atomically to path; collection continues. n_chunks: how many calibration
   chunks were decoded (stored in the file); dataset_name may be NULL. */
IKLLM_API ikllm_status ikllm_session_imatrix_save(ikllm_session* session, const char* path, int32_t n_chunks,
                                                  const char* dataset_name);
/* Stops collecting and frees the statistics. */
IKLLM_API ikllm_status ikllm_session_imatrix_stop(ikllm_session* session);

/* ---- quantization -------------------------------------------------------------------- */
/* Called once per tensor, in file order, after it was converted (or planned, in a dry run).
   note is "" or an explanation (fallback type, rule, re-quantization warning). progress is the
   fraction of input bytes done. Return non-zero to cancel: the output file is then not created. */
typedef int32_t (*ikllm_quantize_tensor_fn)(void* user_data, const char* tensor_name, int32_t from_type,
                                            int32_t to_type, uint64_t bytes_before, uint64_t bytes_after,
                                            const char* note, float progress);
/* Quantizes the GGUF model at in_path into out_path (written under a temporary name and renamed
   when complete; nothing is left behind on error or cancel). options: IKLLM_OPTIONS_QUANTIZE
   (type, pure, rules, imatrix, repack, dry_run, allow_requantize, ignore_imatrix_rules, n_threads).
   lib supplies logging and the default thread count. Totals may be NULL. */
IKLLM_API ikllm_status ikllm_quantize(ikllm_lib* lib, const char* in_path, const char* out_path,
                                      const ikllm_options* options, ikllm_quantize_tensor_fn on_tensor,
                                      void* user_data, uint64_t* out_bytes_before, uint64_t* out_bytes_after);

/* ---- chat templates ------------------------------------------------------------------- */
/* A chat template is the Jinja2 text a model ships in the GGUF metadata `tokenizer.chat_template`
   (named variants in `tokenizer.chat_template.NAME`). ikllm_chat_render renders it byte for byte as
   Hugging Face transformers' apply_chat_template(..., tokenize=False) does (jinja2 sandbox with
   trim_blocks, lstrip_blocks and loop controls; `tojson` = Python json.dumps; `raise_exception(msg)`;
   `strftime_now(fmt)`).

   Template variables, later ones winning: tools = none, documents = none, add_generation_prompt = false;
   bos_token / eos_token = the text of the model's BOS / EOS token (when model is not NULL and has one);
   every key of extra_vars_json (a JSON object, e.g. {"enable_thinking": false, "documents": [...]});
   messages = messages_json (a JSON array of message objects: {"role": ..., "content": ...}, tool calls
   etc. as the template expects; NULL leaves `messages` undefined); tools = tools_json (a JSON array of tool schemas; NULL keeps none);
   add_generation_prompt.

   template_text: the template source; NULL renders the model's default template (IKLLM_ERR_NOT_FOUND
   when it has none). model may be NULL when template_text is given. options: NULL or of kind
   IKLLM_OPTIONS_CHAT: "now" ("YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS": the time strftime_now formats;
   default "" = the current local time), "max_output_bytes".
   Output: the rendered text in (buf, buf_size) with the caller-buffer convention (*needed - 1 is the
   text's length in bytes). Errors: IKLLM_ERR_INVALID_ARGUMENT for NULL/malformed JSON input;
   IKLLM_ERR_TEMPLATE when the template fails to parse or raises while rendering (raise_exception,
   a type error, misuse of an undefined value, limits): the message is
   "<PythonExceptionType>: <message> (template line N)", e.g. "TemplateError: Conversation roles must
   alternate user/assistant/user/assistant/... (template line 3)". Thread-safe; stateless. */
IKLLM_API ikllm_status ikllm_chat_render(const ikllm_model* model, const char* template_text, const char* messages_json,
                                         const char* tools_json, const char* extra_vars_json,
                                         int32_t add_generation_prompt, const ikllm_options* options, char* buf,
                                         size_t buf_size, size_t* needed);
/* Named templates of the model (`tokenizer.chat_template.NAME`, e.g. "tool_use", "rag"): count and
   NAME by index (model-owned; NULL when out of range). The default template is not counted. */
IKLLM_API int32_t ikllm_model_chat_template_count(const ikllm_model* model);
IKLLM_API const char* ikllm_model_chat_template_name(const ikllm_model* model, int32_t index);
/* Source of a template: name NULL or "" for the default one, else a name from the list above.
   Model-owned, valid until ikllm_model_free. IKLLM_ERR_NOT_FOUND when the model has no such template. */
IKLLM_API ikllm_status ikllm_model_chat_template(const ikllm_model* model, const char* name,
                                                 const char** out_template);

/* ---- scoring text (log-probabilities of a token sequence) ------------------------------ */
/* Decodes tokens[0..n_tokens) as the continuation of sequence seq_id (after whatever it already
   holds; clear it first to score from an empty context) and writes, for every i in
   [first, n_tokens - 1):
       out_logprobs[i - first] = ln p(tokens[i + 1] | tokens[0..i] and the sequence's earlier content)
   i.e. n_tokens - 1 - first values (natural log of the softmax of the logits, computed in double).
   first in [0, n_tokens - 1]: the output layer runs only for positions >= first (first = 0 scores
   every token but tokens[0]; perplexity tools score the second half of a window).
   Tokens are decoded in micro-batches of the session's n_batch, so n_tokens may exceed it; the KV
   cache must have n_tokens free cells (else IKLLM_CONTEXT_FULL before anything is decoded).
   capacity and *needed (may be NULL) count floats, caller-buffer convention, checked first.
   progress may be NULL; it is called after each micro-batch with the fraction decoded, and a
   non-zero return cancels (IKLLM_CANCELLED; the session's cancel flag works too). On any failure
   the sequence is left as it was. On success ikllm_session_logits(session, -1) gives the logits
   after the last token (e.g. to continue generating). */
IKLLM_API ikllm_status ikllm_session_score_tokens(ikllm_session* session, int32_t seq_id, const ikllm_token* tokens,
                                                  int32_t n_tokens, int32_t first, float* out_logprobs,
                                                  size_t capacity, size_t* needed, ikllm_progress_fn progress,
                                                  void* progress_user_data);
/* ---- chat output parsing ---------------------------------------------------------------- */
/* Splits a chat model's generated text into reasoning, content and tool calls, incrementally while
   streaming or in one call. Feed the text with special tokens rendered (IKLLM_DETOK_RENDER_SPECIAL):
   markers such as [TOOL_CALLS] or <|python_tag|> are special tokens in their vocabularies.

   Formats (by name; "auto" or NULL detects it from the chat template text):
     "llama3"   Llama 3.x: the reply is {"name": N, "parameters": {...}} (or "arguments"), possibly after
                <|python_tag|>; several separated by ';'
     "hermes"   Qwen 2.5/3, Hermes 2 Pro ("qwen" is the same): <tool_call>{"name": N, "arguments": {...}}</tool_call>, repeated
     "mistral"  [TOOL_CALLS][{"name": N, "arguments": {...}, "id": I}, ...], or [TOOL_CALLS]N[ARGS]{...}
                (optionally N[CALL_ID]I[ARGS]{...}), repeated
     "deepseek" DeepSeek V3/R1: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{...}\n```
                <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>, also V3.1's <｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
     "generic"  reasoning only (templates of other families: their tool-call syntax stays content)
     "none"     everything is content
   Rules: reasoning is the text of a <think>...</think> block that opens the reply (or that the prompt
   opened; an unclosed block makes the rest reasoning). Leading/trailing whitespace of reasoning and of
   content is dropped. A tool call is reported once, complete, when its text ends; arguments are the JSON
   object text as the model wrote it (a JSON string holding an object is decoded). Text in tool-call
   syntax that does not decode (malformed or unterminated JSON, no name, arguments not an object) is
   delivered as content exactly as written, markers included: never an error. Invalid UTF-8 becomes
   U+FFFD. Text that may still become a marker (e.g. "<too") or an incomplete UTF-8 sequence is held back
   until the next piece decides it, so the deltas of any split of the text add up to the one-shot result.

   Results are JSON. A delta has only the non-empty parts:
     {"reasoning_content": "...", "content": "...",
      "tool_calls": [{"index": 0, "id": "...", "type": "function", "function": {"name": "...", "arguments": "{...}"}}]}
   ("{}" when nothing new; "index" counts the message's calls; "id" only when the model wrote one).
   The message has always the three keys: {"reasoning_content": "", "content": "", "tool_calls": []},
   its calls shaped as above without "index".
   An ikllm_chat_parser is used by one thread at a time, like an ikllm_detok. */
typedef struct ikllm_chat_parser ikllm_chat_parser;

#define IKLLM_CHAT_PARSE_IN_REASONING 1u  /* the output starts inside <think> (the prompt opened it) */
#define IKLLM_CHAT_PARSE_NO_TOOLS 2u      /* no tools were offered: tool-call syntax is plain content */
#define IKLLM_CHAT_PARSE_NO_REASONING 4u  /* <think> is plain content */

/* format: a name above, or NULL / "" / "auto" to detect it from template_text, else from the model's
   default template (model may be NULL), else "generic". prompt: NULL or the rendered prompt the output
   continues; when it ends (trailing whitespace aside) with "<think>", the output starts inside reasoning,
   as with IKLLM_CHAT_PARSE_IN_REASONING. flags: IKLLM_CHAT_PARSE_* bits.
   IKLLM_ERR_INVALID_ARGUMENT for an unknown format name or flag. */
IKLLM_API ikllm_status ikllm_chat_parser_create(const ikllm_model* model, const char* format,
                                                const char* template_text, const char* prompt, uint32_t flags,
                                                ikllm_chat_parser** out_parser);
IKLLM_API void ikllm_chat_parser_free(ikllm_chat_parser* parser);
/* The format in use (after detection), a static string such as "hermes"; NULL for a NULL parser. */
IKLLM_API const char* ikllm_chat_parser_format(const ikllm_chat_parser* parser);
/* Feeds len bytes of generated text (text may be NULL when len is 0). out_delta_json / out_len (either
   may be NULL) receive the delta JSON, borrowed: valid until the next push/finish/reset/free. After
   ikllm_chat_parser_finish, IKLLM_ERR_INVALID_ARGUMENT until ikllm_chat_parser_reset. */
IKLLM_API ikllm_status ikllm_chat_parser_push(ikllm_chat_parser* parser, const char* text, size_t len,
                                              const char** out_delta_json, size_t* out_len);
/* Ends the message: decides all held-back text. Gives the last delta and the whole message's JSON
   (any out-pointer may be NULL); borrowed, valid until the next push/finish/reset/free. */
IKLLM_API ikllm_status ikllm_chat_parser_finish(ikllm_chat_parser* parser, const char** out_delta_json,
                                                size_t* out_delta_len, const char** out_message_json,
                                                size_t* out_message_len);
/* Starts a new message with the same settings. */
IKLLM_API ikllm_status ikllm_chat_parser_reset(ikllm_chat_parser* parser);

/* The same results without JSON, for C callers. Borrowed, valid until the next push/finish/reset/free. */
#define IKLLM_CHAT_TEXT_CONTENT_DELTA 0    /* content of the last push/finish */
#define IKLLM_CHAT_TEXT_REASONING_DELTA 1  /* reasoning of the last push/finish */
#define IKLLM_CHAT_TEXT_CONTENT 2          /* all content so far */
#define IKLLM_CHAT_TEXT_REASONING 3        /* all reasoning so far */
IKLLM_API ikllm_status ikllm_chat_parser_text(const ikllm_chat_parser* parser, int32_t which, const char** out_text,
                                              size_t* out_len);
/* Tool calls found so far: count, and call `index` (id is "" when the model wrote none; any out-pointer
   may be NULL). */
IKLLM_API int32_t ikllm_chat_parser_tool_call_count(const ikllm_chat_parser* parser);
IKLLM_API ikllm_status ikllm_chat_parser_tool_call(const ikllm_chat_parser* parser, int32_t index,
                                                   const char** out_id, const char** out_name,
                                                   const char** out_arguments);

/* One-shot: parses a whole generated text (arguments as for ikllm_chat_parser_create) and writes the
   message JSON into (buf, buf_size) with the caller-buffer convention. Thread-safe; stateless. */
IKLLM_API ikllm_status ikllm_chat_parse(const ikllm_model* model, const char* format, const char* template_text,
                                        const char* prompt, uint32_t flags, const char* text, size_t text_len,
                                        char* buf, size_t buf_size, size_t* needed);

#ifdef __cplusplus
}
#endif
#endif /* IKLLM_H */
