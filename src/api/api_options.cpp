#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "api/options.h"
#include "model/tensor_placement.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

namespace ikllm::api {

namespace {
const OptionSpec kSpecs[] = {
    {IKLLM_OPTIONS_MODEL, "use_mmap", IKLLM_OPTION_INT, "-1", "-1", "1", "1: map the model file, 0: read it into memory, -1: read it when it fits in 3/4 of the available memory and no GPU placement, repacking, vocab-only load or NUMA policy wants the mapping"},
    {IKLLM_OPTIONS_MODEL, "vocab_only", IKLLM_OPTION_INT, "0", "0", "1", "Load only metadata and the tokenizer (no weights; sessions cannot be created)"},
    {IKLLM_OPTIONS_MODEL, "check_tensors", IKLLM_OPTION_INT, "0", "0", "1", "Decode every tensor at load time to detect NaN/Inf (slow)"},
    {IKLLM_OPTIONS_MODEL, "huge_pages", IKLLM_OPTION_INT, "-1", "-1", "1", "Transparent huge pages for the weights (madvise): 1 on, 0 off, -1 on when they are read into memory (file mappings rarely get them)"},
    {IKLLM_OPTIONS_MODEL, "prefault", IKLLM_OPTION_INT, "0", "0", "1",
     "Fault the mapped weights in at load (reads what is not cached yet), so no later token pays page faults: MoE experts are otherwise faulted in as routing first reaches them"},
    {IKLLM_OPTIONS_MODEL, "numa", IKLLM_OPTION_STRING, "", "", "", "NUMA policy for the mapped weights: '' (default), 'interleave' or 'bind:N'"},
    {IKLLM_OPTIONS_MODEL, "repack", IKLLM_OPTION_INT, "-1", "-1", "2",
     "Convert CPU weights at load to the layout this CPU multiplies fastest (row-interleaved forms; a file's interleaved form that is slower here goes back to its plain type or on to a faster form): -1 (auto) where the weights are read into memory (or, with GPU placement, copied out of the mapping), converted in place, and only where the converted form's kernels give the stored form's results (without AVX-512 the reference's interleaved Q4_0/Q8_0/Q4_K kernels do not); 0 never (host weights that a session streams to a GPU, offload_min_batch, must stay in a type the GPU runs); 1 also from a mapping (the converted tensors leave it); 2 every type with an interleaved form"},
    {IKLLM_OPTIONS_MODEL, "n_gpu_layers", IKLLM_OPTION_INT, "0", "0", "100000",
     "Put the last N layers' weights on the GPU (more than the layer count: the output head too); 0 = none"},
    {IKLLM_OPTIONS_MODEL, "tensor_placement", IKLLM_OPTION_STRING, "", "", "",
     "Per-tensor device rules 'REGEX=DEVICE,...' (DEVICE: CPU or CUDA<n>), first match wins, applied after n_gpu_layers"},
    {IKLLM_OPTIONS_MODEL, "tensor_split", IKLLM_OPTION_STRING, "", "", "",
     "Shares of the n_gpu_layers layers per GPU, in device order ('3,1': CUDA0 three quarters, CUDA1 the rest; each GPU takes a contiguous run of layers, the output head goes with the last); empty = in proportion to each GPU's free memory"},

    {IKLLM_OPTIONS_SESSION, "n_ctx", IKLLM_OPTION_INT, "4096", "1", "16777216", "KV-cache size in tokens (cells), shared by all sequences"},
    {IKLLM_OPTIONS_SESSION, "n_seq_max", IKLLM_OPTION_INT, "1", "1", "256", "Number of sequences the session can hold"},
    {IKLLM_OPTIONS_SESSION, "n_batch", IKLLM_OPTION_INT, "512", "1", "65536", "Largest micro-batch computed at once (bigger batches are split)"},
    {IKLLM_OPTIONS_SESSION, "n_threads", IKLLM_OPTION_INT, "0", "0", "1024", "Worker threads (0: library default, else number of cores)"},
    {IKLLM_OPTIONS_SESSION, "kv_type", IKLLM_OPTION_STRING, "f16", "", "", "KV-cache element type: f16, bf16, q8_0 or f32 (standard and MLA caches)"},
    {IKLLM_OPTIONS_SESSION, "ser", IKLLM_OPTION_STRING, "", "", "",
     "Smart expert reduction 'K,f': use at most K routed experts per token, dropping those whose weight is below f x the top one (kept weights rescaled to the original sum); empty = off"},
    {IKLLM_OPTIONS_SESSION, "attn_scratch_mib", IKLLM_OPTION_FLOAT, "0", "0", "1048576",
     "Upper bound on the attention scratch memory of all threads together, MiB (reference -amb); 0 = no bound (tiles already keep it independent of the context)"},
    {IKLLM_OPTIONS_SESSION, "batch_invariant", IKLLM_OPTION_INT, "0", "0", "1",
     "Make every sequence's logits independent of what else is in the batch (bit for bit: the same whether decoded alone, beside others or in prompt batches of any size); prompt batches run the small-batch kernels (slower for some types)"},
    {IKLLM_OPTIONS_SESSION, "embeddings", IKLLM_OPTION_INT, "0", "0", "1",
     "Keep every batch token's final hidden state (output-norm row before the LM head) and pooled per-sequence embeddings"},
    {IKLLM_OPTIONS_SESSION, "pooling", IKLLM_OPTION_STRING, "", "", "",
     "Embedding pooling: none, mean, cls (first token) or last; empty = the model's <arch>.pooling_type (none when absent)"},
    {IKLLM_OPTIONS_SESSION, "embd_normalize", IKLLM_OPTION_INT, "1", "0", "1", "L2-normalise pooled embeddings"},
    {IKLLM_OPTIONS_SESSION, "mla_expand_min_batch", IKLLM_OPTION_INT, "128", "0", "16777216",
     "MLA models (DeepSeek): batches of at least this many tokens expand the cached latents into per-head keys and values with attn_kv_b and run ordinary attention (the reference's MLA mode 3; about half the work for prompts), smaller batches, decoding and batches for which expanding the whole context costs more use the absorbed form; 0 = always absorbed. Needs attn_kv_b in the file and the layer on the CPU; bounded by attn_scratch_mib (default 1 GiB)"},
    {IKLLM_OPTIONS_SESSION, "offload_min_batch", IKLLM_OPTION_INT, "0", "0", "16777216",
     "With a GPU in use: batches of at least this many tokens run the matrix products whose weights are in host memory (e.g. experts kept on the CPU) on the GPU, uploading those weights for each product; 0 = never"},

    {IKLLM_OPTIONS_SAMPLER, "seed", IKLLM_OPTION_INT, "24301", "0", "9223372036854775807", "Random seed"},
    {IKLLM_OPTIONS_SAMPLER, "temperature", IKLLM_OPTION_FLOAT, "0.8", "0", "100", "Softmax temperature; 0 = greedy"},
    {IKLLM_OPTIONS_SAMPLER, "top_k", IKLLM_OPTION_INT, "40", "0", "1000000000", "Keep the k most likely tokens (0 = off)"},
    {IKLLM_OPTIONS_SAMPLER, "top_p", IKLLM_OPTION_FLOAT, "0.95", "0", "1", "Nucleus sampling mass (1 = off)"},
    {IKLLM_OPTIONS_SAMPLER, "min_p", IKLLM_OPTION_FLOAT, "0.05", "0", "1", "Drop tokens below min_p x the top probability (0 = off)"},
    {IKLLM_OPTIONS_SAMPLER, "typical_p", IKLLM_OPTION_FLOAT, "1", "0", "1", "Locally typical sampling mass (1 = off)"},
    {IKLLM_OPTIONS_SAMPLER, "repeat_penalty", IKLLM_OPTION_FLOAT, "1", "0", "10", "Divide logits of recent tokens (1 = off)"},
    {IKLLM_OPTIONS_SAMPLER, "presence_penalty", IKLLM_OPTION_FLOAT, "0", "-10", "10", "Subtract from logits of tokens seen in the window"},
    {IKLLM_OPTIONS_SAMPLER, "frequency_penalty", IKLLM_OPTION_FLOAT, "0", "-10", "10", "Subtract count x this from logits of recent tokens"},
    {IKLLM_OPTIONS_SAMPLER, "penalty_last_n", IKLLM_OPTION_INT, "64", "-1", "1000000000", "Penalty window in tokens (-1 = whole history, 0 = off)"},
    {IKLLM_OPTIONS_SAMPLER, "chain", IKLLM_OPTION_STRING, "penalties;top_k;typical_p;top_p;min_p;temperature", "", "",
     "Order of sampler steps, ';'-separated"},
    {IKLLM_OPTIONS_SAMPLER, "ignore_eos", IKLLM_OPTION_INT, "0", "0", "1",
     "Never sample an end-of-generation token (EOS, EOT, ...): replies run until a token limit or a stop (benchmarks, tests)"},
    {IKLLM_OPTIONS_SAMPLER, "grammar", IKLLM_OPTION_STRING, "", "", "",
     "GBNF grammar every sampled token must follow (empty = none); checked by ikllm_sampler_create"},
    {IKLLM_OPTIONS_SAMPLER, "grammar_root", IKLLM_OPTION_STRING, "root", "", "", "Start rule of 'grammar'"},
    {IKLLM_OPTIONS_SAMPLER, "json_schema", IKLLM_OPTION_STRING, "", "", "",
     "JSON Schema the generated text must satisfy (converted to a grammar; exclusive with 'grammar')"},

    {IKLLM_OPTIONS_QUANTIZE, "type", IKLLM_OPTION_STRING, "Q4_K_M", "", "",
     "Preset (Q4_K_M, IQ4_K, ...) or type name; _R4/_R8/_R16 forms give row-interleaved files"},
    {IKLLM_OPTIONS_QUANTIZE, "pure", IKLLM_OPTION_INT, "0", "0", "1", "Use the type for every 2-D weight (no mix)"},
    {IKLLM_OPTIONS_QUANTIZE, "rules", IKLLM_OPTION_STRING, "", "", "",
     "Per-tensor overrides, one REGEX=TYPE per line; first match wins; a rule matching nothing is an error"},
    {IKLLM_OPTIONS_QUANTIZE, "imatrix", IKLLM_OPTION_STRING, "", "", "", "Importance-matrix file (from ikllm imatrix)"},
    {IKLLM_OPTIONS_QUANTIZE, "repack", IKLLM_OPTION_INT, "0", "0", "1", "Write row-interleaved variants where they exist"},
    {IKLLM_OPTIONS_QUANTIZE, "dry_run", IKLLM_OPTION_INT, "0", "0", "1", "Report the plan and sizes without writing"},
    {IKLLM_OPTIONS_QUANTIZE, "allow_requantize", IKLLM_OPTION_INT, "0", "0", "1",
     "Accept already-quantized input tensors (quality loss; warned)"},
    {IKLLM_OPTIONS_QUANTIZE, "ignore_imatrix_rules", IKLLM_OPTION_INT, "0", "0", "1",
     "Quantize low-bit types without an importance matrix"},
    {IKLLM_OPTIONS_QUANTIZE, "n_threads", IKLLM_OPTION_INT, "0", "0", "1024", "Worker threads (0: library default)"},

    {IKLLM_OPTIONS_CHAT, "now", IKLLM_OPTION_STRING, "", "", "",
     "Date/time strftime_now() formats: 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'; empty = current local time"},
    {IKLLM_OPTIONS_CHAT, "max_output_bytes", IKLLM_OPTION_INT, "67108864", "1", "4294967296",
     "Largest render (including macro/block captures); beyond it rendering fails with IKLLM_ERR_TEMPLATE"},
};
constexpr int32_t kCount = (int32_t)(sizeof(kSpecs) / sizeof(kSpecs[0]));

// "K,f" (K >= 1, 0 <= f <= 1) or "" (off).
void parse_ser(const std::string& s, int32_t* k, float* f) {
    *k = 0;
    *f = 0;
    if (s.empty()) return;
    char* end = nullptr;
    const long kk = std::strtol(s.c_str(), &end, 10);
    double ff = 0;
    if (*end == ',') {
        const char* fs = end + 1;
        ff = std::strtod(fs, &end);
        if (end == fs) end = const_cast<char*>("x");
    }
    if (*end || kk < 1 || kk > 1024 || ff < 0 || ff > 1)
        fail(Status::invalid_argument, "option 'ser' must be 'K,f' with K >= 1 and 0 <= f <= 1, got '" + s + "'");
    *k = (int32_t)kk;
    *f = (float)ff;
}

const OptionValue* find_value(const ikllm_options* o, const char* name) {
    if (!o) return nullptr;
    auto it = o->values.find(name);
    return it == o->values.end() ? nullptr : &it->second;
}
}  // namespace

const OptionSpec* option_specs(int32_t kind, int32_t* count) {
    int32_t first = -1, n = 0;
    for (int32_t i = 0; i < kCount; ++i)
        if (kSpecs[i].kind == kind) {
            if (first < 0) first = i;
            ++n;
        }
    *count = n;
    return first < 0 ? nullptr : &kSpecs[first];
}

const OptionSpec* find_option(int32_t kind, const char* name) {
    for (const auto& s : kSpecs)
        if (s.kind == kind && std::strcmp(s.name, name) == 0) return &s;
    return nullptr;
}

int64_t opt_int(const ikllm_options* o, int32_t kind, const char* name) {
    if (const OptionValue* v = find_value(o, name)) return v->i;
    return std::strtoll(find_option(kind, name)->def, nullptr, 10);
}
double opt_float(const ikllm_options* o, int32_t kind, const char* name) {
    if (const OptionValue* v = find_value(o, name)) return v->f;
    return std::strtod(find_option(kind, name)->def, nullptr);
}
std::string opt_string(const ikllm_options* o, int32_t kind, const char* name) {
    if (const OptionValue* v = find_value(o, name)) return v->s;
    return find_option(kind, name)->def;
}

ModelOptions model_options(const ikllm_options* o) {
    ModelOptions m;
    m.use_mmap = (int)opt_int(o, IKLLM_OPTIONS_MODEL, "use_mmap");
    m.check_tensors = opt_int(o, IKLLM_OPTIONS_MODEL, "check_tensors") != 0;
    m.vocab_only = opt_int(o, IKLLM_OPTIONS_MODEL, "vocab_only") != 0;
    m.repack = (int)opt_int(o, IKLLM_OPTIONS_MODEL, "repack");
    m.huge_pages = (int)opt_int(o, IKLLM_OPTIONS_MODEL, "huge_pages");
    m.prefault = opt_int(o, IKLLM_OPTIONS_MODEL, "prefault") != 0;
    m.numa = opt_string(o, IKLLM_OPTIONS_MODEL, "numa");
    m.n_gpu_layers = (int32_t)opt_int(o, IKLLM_OPTIONS_MODEL, "n_gpu_layers");
    m.tensor_placement = opt_string(o, IKLLM_OPTIONS_MODEL, "tensor_placement");
    parse_placement_rules(m.tensor_placement);  // throws invalid_argument naming the bad rule
    m.tensor_split = opt_string(o, IKLLM_OPTIONS_MODEL, "tensor_split");
    parse_tensor_split(m.tensor_split);  // likewise, the bad share
    return m;
}

SessionOptions session_options(const ikllm_options* o, int32_t lib_default_threads) {
    SessionOptions s;
    const int32_t K = IKLLM_OPTIONS_SESSION;
    s.n_ctx = (int32_t)opt_int(o, K, "n_ctx");
    s.n_seq_max = (int32_t)opt_int(o, K, "n_seq_max");
    s.n_batch = (int32_t)opt_int(o, K, "n_batch");
    s.n_threads = (int32_t)opt_int(o, K, "n_threads");
    if (s.n_threads == 0) s.n_threads = lib_default_threads;
    bool ok = false;
    s.kv_type = quant::kv_type_from_name(opt_string(o, K, "kv_type"), &ok);
    parse_ser(opt_string(o, K, "ser"), &s.ser_max, &s.ser_frac);
    s.attn_scratch_mib = (float)opt_float(o, K, "attn_scratch_mib");
    s.batch_invariant = opt_int(o, K, "batch_invariant") != 0;
    s.embeddings = opt_int(o, K, "embeddings") != 0;
    s.embd_normalize = opt_int(o, K, "embd_normalize") != 0;
    s.offload_min_batch = (int32_t)opt_int(o, K, "offload_min_batch");
    s.mla_expand_min_batch = (int32_t)opt_int(o, K, "mla_expand_min_batch");
    Pooling p = Pooling::none;
    const std::string pooling = opt_string(o, K, "pooling");
    s.pooling = pooling.empty() || !pooling_from_name(pooling, &p) ? -1 : (int32_t)p;
    return s;
}

SamplerOptions sampler_options(const ikllm_options* o) {
    SamplerOptions s;
    const int32_t K = IKLLM_OPTIONS_SAMPLER;
    s.seed = (uint64_t)opt_int(o, K, "seed");
    s.temperature = (float)opt_float(o, K, "temperature");
    s.top_k = (int32_t)opt_int(o, K, "top_k");
    s.top_p = (float)opt_float(o, K, "top_p");
    s.min_p = (float)opt_float(o, K, "min_p");
    s.typical_p = (float)opt_float(o, K, "typical_p");
    s.repeat_penalty = (float)opt_float(o, K, "repeat_penalty");
    s.presence_penalty = (float)opt_float(o, K, "presence_penalty");
    s.frequency_penalty = (float)opt_float(o, K, "frequency_penalty");
    s.penalty_last_n = (int32_t)opt_int(o, K, "penalty_last_n");
    s.chain = opt_string(o, K, "chain");
    return s;
}

// Validates a value against the spec and stores it.
static void store(ikllm_options* o, const char* key, int32_t type, int64_t i, double f, const char* s) {
    IKLLM_REQUIRE(o, "options is NULL");
    IKLLM_REQUIRE(key, "key is NULL");
    const OptionSpec* spec = find_option(o->kind, key);
    if (!spec) {
        static const char* kinds[] = {"model", "session", "sampler", "quantize", "chat"};
        fail(Status::not_found, std::string("unknown ") + kinds[o->kind] + " option '" + key + "'");
    }
    OptionValue v;
    v.type = spec->type;
    if (spec->type == IKLLM_OPTION_STRING) {
        if (type != IKLLM_OPTION_STRING) fail(Status::invalid_argument, std::string("option '") + key + "' takes a string");
        IKLLM_REQUIRE(s, "value is NULL");
        v.s = s;
        bool kv_ok = false;
        if (std::strcmp(key, "kv_type") == 0 && (quant::kv_type_from_name(v.s, &kv_ok), !kv_ok))
            fail(Status::invalid_argument, "option 'kv_type' must be f16, bf16, q8_0 or f32, got '" + v.s + "'");
        Pooling pooling;
        if (std::strcmp(key, "pooling") == 0 && !v.s.empty() && !pooling_from_name(v.s, &pooling))
            fail(Status::invalid_argument, "option 'pooling' must be none, mean, cls, last or empty (the model's), got '" +
                 v.s + "'");
        if (std::strcmp(key, "ser") == 0) {
            int32_t k;
            float f;
            parse_ser(v.s, &k, &f);  // throws on a bad form
        }
        if (o->kind == IKLLM_OPTIONS_MODEL && std::strcmp(key, "tensor_placement") == 0)
            parse_placement_rules(v.s);  // throws invalid_argument naming the bad rule
        if (o->kind == IKLLM_OPTIONS_MODEL && std::strcmp(key, "tensor_split") == 0)
            parse_tensor_split(v.s);  // likewise, the bad share
        if (o->kind == IKLLM_OPTIONS_CHAT && std::strcmp(key, "now") == 0 && !v.s.empty()) check_chat_now(v.s);
        if (std::strcmp(key, "chain") == 0) {
            SamplerOptions so;
            so.chain = v.s;
            Sampler check(so);  // throws on an unknown step
        }
    } else {
        if (type == IKLLM_OPTION_STRING) fail(Status::invalid_argument, std::string("option '") + key + "' takes a number");
        if (spec->type == IKLLM_OPTION_INT && type == IKLLM_OPTION_FLOAT)
            fail(Status::invalid_argument, std::string("option '") + key + "' takes an integer");
        const double val = type == IKLLM_OPTION_INT ? (double)i : f;
        const double lo = std::strtod(spec->min, nullptr), hi = std::strtod(spec->max, nullptr);
        if (!(val >= lo && val <= hi))
            fail(Status::invalid_argument, std::string("option '") + key + "' value " + std::to_string(val) +
                 " is out of range [" + spec->min + ", " + spec->max + "]");
        v.i = type == IKLLM_OPTION_INT ? i : (int64_t)f;
        v.f = val;
    }
    o->values[spec->name] = std::move(v);
}

}  // namespace ikllm::api

using namespace ikllm;

extern "C" {

ikllm_status ikllm_options_create(int32_t kind, ikllm_options** out) {
    if (out) *out = nullptr;
    return api::guard([&] {
        IKLLM_REQUIRE(out, "out_options is NULL");
        IKLLM_REQUIRE(kind >= IKLLM_OPTIONS_MODEL && kind <= IKLLM_OPTIONS_CHAT, "unknown options kind");
        auto* o = new ikllm_options();
        o->kind = kind;
        *out = o;
    });
}
void ikllm_options_free(ikllm_options* o) { delete o; }

ikllm_status ikllm_options_set_int(ikllm_options* o, const char* key, int64_t value) {
    return api::guard([&] { api::store(o, key, IKLLM_OPTION_INT, value, 0, nullptr); });
}
ikllm_status ikllm_options_set_float(ikllm_options* o, const char* key, double value) {
    return api::guard([&] { api::store(o, key, IKLLM_OPTION_FLOAT, 0, value, nullptr); });
}
ikllm_status ikllm_options_set_string(ikllm_options* o, const char* key, const char* value) {
    return api::guard([&] { api::store(o, key, IKLLM_OPTION_STRING, 0, 0, value); });
}
ikllm_status ikllm_options_set_from_text(ikllm_options* o, const char* key, const char* value) {
    return api::guard([&] {
        IKLLM_REQUIRE(o && key && value, "NULL argument");
        const api::OptionSpec* spec = api::find_option(o->kind, key);
        if (!spec) fail(Status::not_found, std::string("unknown option '") + key + "'");
        char* end = nullptr;
        if (spec->type == IKLLM_OPTION_INT) {
            errno = 0;
            long long v = std::strtoll(value, &end, 10);
            if (end == value || *end || errno)
                fail(Status::invalid_argument, std::string("option '") + key + "' expects an integer, got '" + value + "'");
            api::store(o, key, IKLLM_OPTION_INT, v, 0, nullptr);
        } else if (spec->type == IKLLM_OPTION_FLOAT) {
            double v = std::strtod(value, &end);
            if (end == value || *end || !std::isfinite(v))
                fail(Status::invalid_argument, std::string("option '") + key + "' expects a number, got '" + value + "'");
            api::store(o, key, IKLLM_OPTION_FLOAT, 0, v, nullptr);
        } else {
            api::store(o, key, IKLLM_OPTION_STRING, 0, 0, value);
        }
    });
}

static const api::OptionSpec* spec_for(const ikllm_options* o, const char* key) {
    IKLLM_REQUIRE(o && key, "NULL argument");
    const api::OptionSpec* spec = api::find_option(o->kind, key);
    if (!spec) fail(Status::not_found, std::string("unknown option '") + key + "'");
    return spec;
}

ikllm_status ikllm_options_get_int(const ikllm_options* o, const char* key, int64_t* out) {
    return api::guard([&] {
        const api::OptionSpec* s = spec_for(o, key);
        IKLLM_REQUIRE(out, "out_value is NULL");
        IKLLM_REQUIRE(s->type == IKLLM_OPTION_INT, std::string("option '") + key + "' is not an integer");
        *out = api::opt_int(o, o->kind, key);
    });
}
ikllm_status ikllm_options_get_float(const ikllm_options* o, const char* key, double* out) {
    return api::guard([&] {
        const api::OptionSpec* s = spec_for(o, key);
        IKLLM_REQUIRE(out, "out_value is NULL");
        IKLLM_REQUIRE(s->type != IKLLM_OPTION_STRING, std::string("option '") + key + "' is not numeric");
        *out = s->type == IKLLM_OPTION_INT ? (double)api::opt_int(o, o->kind, key) : api::opt_float(o, o->kind, key);
    });
}
ikllm_status ikllm_options_get_string(const ikllm_options* o, const char* key, const char** out) {
    return api::guard([&] {
        const api::OptionSpec* s = spec_for(o, key);
        IKLLM_REQUIRE(out, "out_value is NULL");
        IKLLM_REQUIRE(s->type == IKLLM_OPTION_STRING, std::string("option '") + key + "' is not a string");
        auto it = o->values.find(key);
        *out = it == o->values.end() ? s->def : it->second.s.c_str();
    });
}

int32_t ikllm_option_count(int32_t kind) {
    int32_t n = 0;
    api::option_specs(kind, &n);
    return n;
}

ikllm_status ikllm_option_info(int32_t kind, int32_t index, const char** name, int32_t* type, const char** def,
                               const char** min, const char** max, const char** doc) {
    return api::guard([&] {
        int32_t n = 0;
        const api::OptionSpec* s = api::option_specs(kind, &n);
        IKLLM_REQUIRE(index >= 0 && index < n, "option index out of range");
        const api::OptionSpec& o = s[index];
        if (name) *name = o.name;
        if (type) *type = o.type;
        if (def) *def = o.def;
        if (min) *min = o.min;
        if (max) *max = o.max;
        if (doc) *doc = o.doc;
    });
}

}  // extern "C"
