// ikllm-make-bench: writes realistic-shape benchmark models (llama-8b, llama-1b, qwen3moe-a3b-8l,
// deepseek2-v3-4l) directly in a quantized type, in seconds rather than minutes.
//
// Shapes, tensor names and metadata keys follow the BIG entries of shared/tools/make_models.py
// (common(), dense_layers(), moe() and its deepseek2 writer with attn_kv_b). The weights are
// only realistic in scale, not distinct: for each matrix a small group of rows (16, or a
// multiple of the type's interleave) is drawn from N(0, scale/sqrt(cols)) and quantized with
// the registry quantizer, and the encoded row groups are tiled over all rows in a cheap
// permuted pattern. Norms are 1 + 0.1 N(0,1), ffn_gate_inp (F32, small) is fully random.
// Tensors are streamed through the engine's GGUF writer one at a time, so memory stays at the
// largest single tensor and writing is disk-bound.
//
// Types: TYPE is resolved like `ikllm quantize` does (quantize/quant_plan):
//   * a plain type name (q4_0, q8_0, iq4_k, q4_K, iq4_k_r4 ...): every quantizable matrix gets
//     it, token_embd and output included (--pure plan; interleaved types fall back to their base
//     type for token_embd; row lengths the type cannot hold fall back as the planner does);
//   * a mix name that is no type name (q4_K_M, q5_K_S, iq3_m ...): the quantizer's preset plan
//     (e.g. Q4_K_M: q4_K, output q6_K, attn_v/ffn_down q6_K on the "more bits" layers).
// Norms, ffn_gate_inp and exp_probs_b stay F32. Importance-matrix requirements are ignored.
//
// Tokenizer: a synthetic SPM ("llama") vocabulary by default: <unk> <s> </s>, byte tokens
// <0x00>..<0xFF>, then "▁tok<N>" up to n_vocab. --vocab-gguf copies the tokenizer.* keys of
// another GGUF, truncated to n_vocab (padded with "<tok_N>" tokens when shorter; merges whose
// parts are gone are dropped; special ids beyond n_vocab are dropped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/fp16.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "quant/type_traits.h"
#include "quantize/quant_plan.h"

using namespace ikllm;

namespace {

struct Shape {
    const char* name;
    const char* arch;
    uint32_t seed;
    int vocab, embd, layers, heads, kv_heads, head_dim, ff;
    double rope_base;
    int ctx;
    // MoE (qwen3moe, deepseek2)
    int experts = 0, experts_used = 0, expert_ff = 0;
    // deepseek2
    int dense_lead = 0, q_lora = 0, kv_lora = 0, qk_nope = 0, rope_dim = 0, v_dim = 0, shared = 0;
};

// The BIG dict of make_models.py (kv_heads/head_dim 0 = heads / embd/heads).
const Shape kShapes[] = {
    {"llama-8b", "llama", 14, 128256, 4096, 32, 32, 8, 0, 14336, 500000.0, 4096},
    {"llama-1b", "llama", 11, 32000, 2048, 16, 32, 8, 0, 8192, 500000.0, 4096},
    {"qwen3moe-a3b-8l", "qwen3moe", 12, 32000, 2048, 8, 32, 4, 128, 6144, 1000000.0, 4096, 128, 8, 768},
    {"deepseek2-v3-4l", "deepseek2", 13, 32000, 2048, 4, 16, 0, 0, 4096, 10000.0, 163840, 64, 8, 512,
     /*dense_lead*/ 1, /*q_lora*/ 768, /*kv_lora*/ 512, /*qk_nope*/ 128, /*rope_dim*/ 64, /*v_dim*/ 128,
     /*shared*/ 1},
};

enum class Init { matrix, norm, embd, bias };

struct BenchTensor {
    std::string name;
    std::vector<int64_t> ne;
    Init init = Init::matrix;
    float scale = 1.0f;   // matrix: scale/sqrt(cols); embd: stddev; bias: stddev
    uint32_t type = quant::T_F32;
    uint64_t nbytes = 0;
    int64_t rows() const {
        int64_t r = 1;
        for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];
        return r;
    }
};

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "ikllm-make-bench: %s\n", msg.c_str());
    std::exit(1);
}

void usage(FILE* f) {
    std::fprintf(f,
                 "usage: ikllm-make-bench SHAPE TYPE OUT.gguf [--layers N] [--vocab-gguf PATH] [--seed N]\n"
                 "  SHAPE: llama-8b llama-1b qwen3moe-a3b-8l deepseek2-v3-4l (make_models.py BIG shapes)\n"
                 "  TYPE:  a type name (q4_0 q8_0 iq4_k q4_K iq4_k_r4 f16 ...: every matrix incl. token_embd\n"
                 "         and output) or a mix (q4_K_M q5_K_S iq3_m ...: the `ikllm quantize` preset plan)\n"
                 "  Weights are scale-realistic but tiled from a few quantized rows (fast, disk-bound).\n");
}

std::vector<BenchTensor> build_tensors(const Shape& c) {
    std::vector<BenchTensor> ts;
    auto mat = [&](const std::string& n, int64_t rows, int64_t cols, float scale = 1.0f) {
        ts.push_back({n, {cols, rows}, Init::matrix, scale});
    };
    auto mat3 = [&](const std::string& n, int64_t n_exp, int64_t rows, int64_t cols) {
        ts.push_back({n, {cols, rows, n_exp}, Init::matrix, 1.0f});
    };
    auto norm = [&](const std::string& n, int64_t len) { ts.push_back({n, {len}, Init::norm, 0.1f}); };
    const std::string arch = c.arch;
    const int64_t E = c.embd, H = c.heads, KV = c.kv_heads ? c.kv_heads : c.heads;
    const int64_t D = c.head_dim ? c.head_dim : c.embd / c.heads, F = c.ff;
    ts.push_back({"token_embd.weight", {E, c.vocab}, Init::embd, 0.5f});
    norm("output_norm.weight", E);
    mat("output.weight", c.vocab, E, 2.0f);
    auto moe = [&](const std::string& b, int shared) {
        const int64_t X = c.experts, FX = c.expert_ff;
        mat(b + "ffn_gate_inp.weight", X, E, 4.0f);
        mat3(b + "ffn_gate_exps.weight", X, FX, E);
        mat3(b + "ffn_up_exps.weight", X, FX, E);
        mat3(b + "ffn_down_exps.weight", X, E, FX);
        if (shared) {
            mat(b + "ffn_gate_shexp.weight", FX * shared, E);
            mat(b + "ffn_up_shexp.weight", FX * shared, E);
            mat(b + "ffn_down_shexp.weight", E, FX * shared);
        }
    };
    for (int i = 0; i < c.layers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        if (arch == "deepseek2") {
            const int64_t QL = c.q_lora, KL = c.kv_lora, R = c.rope_dim, NP = c.qk_nope, V = c.v_dim;
            norm(b + "attn_norm.weight", E);
            if (QL) norm(b + "attn_q_a_norm.weight", QL);
            norm(b + "attn_kv_a_norm.weight", KL);
            if (QL) {
                mat(b + "attn_q_a.weight", QL, E);
                mat(b + "attn_q_b.weight", H * (NP + R), QL);
            } else {
                mat(b + "attn_q.weight", H * (NP + R), E);
            }
            mat(b + "attn_kv_a_mqa.weight", KL + R, E);
            mat(b + "attn_kv_b.weight", H * (NP + V), KL);
            mat(b + "attn_output.weight", E, H * V);
            norm(b + "ffn_norm.weight", E);
            if (i < c.dense_lead) {
                mat(b + "ffn_gate.weight", F, E);
                mat(b + "ffn_up.weight", F, E);
                mat(b + "ffn_down.weight", E, F);
            } else {
                ts.push_back({b + "exp_probs_b.bias", {c.experts}, Init::bias, 0.1f});  // V3 gating: selection bias
                moe(b, c.shared);
            }
        } else {
            norm(b + "attn_norm.weight", E);
            mat(b + "attn_q.weight", H * D, E);
            mat(b + "attn_k.weight", KV * D, E);
            mat(b + "attn_v.weight", KV * D, E);
            mat(b + "attn_output.weight", E, H * D);
            if (arch == "qwen3moe") {
                norm(b + "attn_q_norm.weight", D);
                norm(b + "attn_k_norm.weight", D);
            }
            norm(b + "ffn_norm.weight", E);
            if (arch == "qwen3moe") {
                moe(b, 0);
            } else {
                mat(b + "ffn_gate.weight", F, E);
                mat(b + "ffn_up.weight", F, E);
                mat(b + "ffn_down.weight", E, F);
            }
        }
    }
    return ts;
}

void set_metadata(gguf::Writer& w, const Shape& c, uint32_t file_type) {
    const std::string P = std::string(c.arch) + ".";
    const std::string arch = c.arch;
    w.set_str("general.architecture", c.arch);
    w.set_str("general.name", c.name);
    w.set_u32("general.file_type", file_type);
    w.set_u32("general.quantization_version", 2);
    w.set_u32(P + "context_length", c.ctx);
    w.set_u32(P + "embedding_length", c.embd);
    w.set_u32(P + "block_count", c.layers);
    w.set_u32(P + "feed_forward_length", c.ff);
    w.set_u32(P + "attention.head_count", c.heads);
    w.set_u32(P + "attention.head_count_kv", c.kv_heads ? c.kv_heads : c.heads);
    w.set_f32(P + "attention.layer_norm_rms_epsilon", arch == "llama" ? 1e-5f : 1e-6f);
    w.set_f32(P + "rope.freq_base", (float)c.rope_base);
    w.set_u32(P + "vocab_size", c.vocab);
    if (arch == "qwen3moe") {
        w.set_u32(P + "attention.key_length", c.head_dim);
        w.set_u32(P + "attention.value_length", c.head_dim);
        w.set_u32(P + "expert_count", c.experts);
        w.set_u32(P + "expert_used_count", c.experts_used);
        w.set_u32(P + "expert_feed_forward_length", c.expert_ff);
    }
    if (arch == "deepseek2") {
        w.set_u32(P + "leading_dense_block_count", c.dense_lead);
        if (c.q_lora) w.set_u32(P + "attention.q_lora_rank", c.q_lora);
        w.set_u32(P + "attention.kv_lora_rank", c.kv_lora);
        w.set_u32(P + "attention.key_length", c.qk_nope + c.rope_dim);
        w.set_u32(P + "attention.value_length", c.v_dim);
        w.set_u32(P + "rope.dimension_count", c.rope_dim);
        w.set_u32(P + "expert_count", c.experts);
        w.set_u32(P + "expert_used_count", c.experts_used);
        w.set_u32(P + "expert_shared_count", c.shared);
        w.set_u32(P + "expert_feed_forward_length", c.expert_ff);
        w.set_f32(P + "expert_weights_scale", 2.5f);
        w.set_bool(P + "expert_weights_norm", true);
        w.set_u32(P + "expert_gating_func", 2);  // sigmoid (V3/R1)
        w.set_str(P + "rope.scaling.type", "yarn");
        w.set_f32(P + "rope.scaling.factor", 40.0f);
        w.set_u32(P + "rope.scaling.original_context_length", 4096);
        w.set_f32(P + "rope.scaling.yarn_log_multiplier", 0.1f);
    } else {
        w.set_u32(P + "rope.dimension_count", c.head_dim ? c.head_dim : c.embd / c.heads);
    }
}

void synthetic_vocab(gguf::Writer& w, int n_vocab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<float> scores = {0, 0, 0};
    std::vector<int32_t> types = {2, 3, 3};  // UNKNOWN, CONTROL, CONTROL
    tokens.reserve(n_vocab);
    for (int b = 0; b < 256 && (int)tokens.size() < n_vocab; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        scores.push_back(0);
        types.push_back(6);  // BYTE
    }
    for (int i = 1; (int)tokens.size() < n_vocab; ++i) {
        tokens.push_back("\xE2\x96\x81tok" + std::to_string(i));
        scores.push_back(-(float)i);
        types.push_back(1);  // NORMAL
    }
    tokens.resize(n_vocab);
    scores.resize(n_vocab);
    types.resize(n_vocab);
    w.set_str("tokenizer.ggml.model", "llama");
    w.set_str_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
}

void copied_vocab(gguf::Writer& w, const std::string& path, int n_vocab) {
    auto f = gguf::File::open(path, type_geometry, true);
    const gguf::Value* toks = f->find("tokenizer.ggml.tokens");
    if (!toks || toks->type != gguf::ValueType::array || toks->elem_type != gguf::ValueType::string)
        die("'" + path + "' has no tokenizer.ggml.tokens");
    const size_t n_src = toks->strs.size();
    const size_t n = (size_t)n_vocab;
    for (auto& kv : f->kvs()) {
        const std::string& k = kv.first;
        if (k.rfind("tokenizer.", 0) != 0) continue;
        gguf::Value v = kv.second;
        if (k == "tokenizer.ggml.tokens") {
            v.strs.resize(std::min(n, n_src));
            for (size_t i = n_src; i < n; ++i) v.strs.push_back("<tok_" + std::to_string(i) + ">");
        } else if (k == "tokenizer.ggml.merges") {
            continue;  // filtered below, once the token set is known
        } else if (v.type == gguf::ValueType::array && v.elem_type != gguf::ValueType::string &&
                   v.nums.size() == n_src) {  // per-token arrays: scores, token_type
            const double pad = k == "tokenizer.ggml.token_type" ? 1.0 : 0.0;
            v.nums.resize(n, pad);
        } else if (k.size() > 9 && k.compare(k.size() - 9, 9, "_token_id") == 0 && v.is_integer()) {
            const uint64_t id = v.type == gguf::ValueType::i32 || v.type == gguf::ValueType::i64 ||
                                        v.type == gguf::ValueType::i8 || v.type == gguf::ValueType::i16
                                    ? (uint64_t)v.i
                                    : v.u;
            if (id >= n) continue;
        }
        w.set(k, v);
    }
    if (const gguf::Value* m = f->find("tokenizer.ggml.merges")) {
        std::unordered_set<std::string> keep(toks->strs.begin(), toks->strs.begin() + std::min(n, n_src));
        gguf::Value v = *m;
        v.strs.clear();
        for (const std::string& s : m->strs) {
            const size_t sp = s.find(' ');
            if (sp == std::string::npos) continue;
            const std::string a = s.substr(0, sp), b = s.substr(sp + 1);
            if (keep.count(a) && keep.count(b) && keep.count(a + b)) v.strs.push_back(s);
        }
        w.set("tokenizer.ggml.merges", v);
    }
}

// Fast N(0,1) values (Box-Muller on a 64-bit generator).
struct Normal {
    std::mt19937_64 rng;
    explicit Normal(uint64_t seed) : rng(seed) {}
    void fill(float* x, size_t n, float mean, float sd) {
        const double k = 1.0 / 9007199254740992.0;  // 2^-53
        for (size_t i = 0; i < n; i += 2) {
            const double u1 = ((rng() >> 11) + 0.5) * k, u2 = ((rng() >> 11) + 0.5) * k;
            const double r = std::sqrt(-2.0 * std::log(u1));
            x[i] = mean + sd * (float)(r * std::cos(6.283185307179586 * u2));
            if (i + 1 < n) x[i + 1] = mean + sd * (float)(r * std::sin(6.283185307179586 * u2));
        }
    }
};

// Encodes `rows` rows of `ne0` floats (rows a multiple of the interleave) into `dst`.
void encode(const quant::TypeTraits& t, const float* src, int64_t rows, int64_t ne0, uint8_t* dst) {
    const size_t rb = quant::row_bytes(t, ne0);
    if (t.id == quant::T_F32) {
        std::memcpy(dst, src, (size_t)rows * ne0 * sizeof(float));
        return;
    }
    if (!t.quantize) die(std::string("type ") + t.name + " cannot be produced");
    for (int64_t r = 0; r < rows; r += t.interleave)
        t.quantize(src + (size_t)r * ne0, dst + (size_t)r * rb, ne0, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> pos;
    int layers = -1;
    std::string vocab_path;
    uint64_t seed_override = 0;
    bool have_seed = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "--layers" && i + 1 < argc) {
            layers = std::atoi(argv[++i]);
            if (layers < 1) die("--layers must be >= 1");
        } else if (a == "--vocab-gguf" && i + 1 < argc) {
            vocab_path = argv[++i];
        } else if (a == "--seed" && i + 1 < argc) {
            seed_override = std::strtoull(argv[++i], nullptr, 10);
            have_seed = true;
        } else if (!a.empty() && a[0] == '-') {
            usage(stderr);
            die("unknown or incomplete option '" + a + "'");
        } else {
            pos.push_back(a);
        }
    }
    if (pos.size() != 3) {
        usage(stderr);
        return 2;
    }
    const Shape* shape = nullptr;
    for (const Shape& s : kShapes)
        if (pos[0] == s.name) shape = &s;
    if (!shape) die("unknown shape '" + pos[0] + "' (llama-8b llama-1b qwen3moe-a3b-8l deepseek2-v3-4l)");
    Shape c = *shape;
    if (layers > 0) c.layers = layers;
    if (c.arch == std::string("deepseek2") && c.layers <= c.dense_lead)
        std::fprintf(stderr, "ikllm-make-bench: note: %d layer(s) are all dense (leading_dense_block_count %d)\n",
                     c.layers, c.dense_lead);
    const uint64_t seed = have_seed ? seed_override : c.seed;
    const auto t0 = std::chrono::steady_clock::now();

    try {
        // Types, as `ikllm quantize` would choose them from an F32 file of this shape.
        const std::string& target = pos[1];
        const bool plain = quant::find_type_by_name(target.c_str()) != nullptr;
        const quantize::Preset preset = quantize::resolve_preset(target);
        quantize::PlanParams pp;
        pp.target = target;
        pp.pure = plain;
        pp.ignore_imatrix_rules = true;
        std::vector<BenchTensor> ts = build_tensors(c);
        std::vector<quantize::TensorDesc> descs;
        for (const BenchTensor& t : ts) {
            quantize::TensorDesc d;
            d.name = t.name;
            d.type = quant::T_F32;
            d.n_dims = (int)t.ne.size();
            for (size_t k = 0; k < t.ne.size(); ++k) d.ne[k] = t.ne[k];
            descs.push_back(d);
        }
        const std::vector<quantize::TensorChoice> choice = quantize::plan(descs, c.layers, pp, preset);

        gguf::Writer w;
        set_metadata(w, c, preset.file_type);
        if (vocab_path.empty()) synthetic_vocab(w, c.vocab);
        else copied_vocab(w, vocab_path, c.vocab);

        uint64_t total = 0, max_bytes = 0;
        std::map<std::string, int> type_count;
        for (size_t i = 0; i < ts.size(); ++i) {
            BenchTensor& t = ts[i];
            t.type = choice[i].type;
            const quant::TypeTraits* tt = quant::find_type(t.type);
            if (!tt) die("no type " + std::to_string(t.type));
            t.nbytes = quant::row_bytes(*tt, t.ne[0]) * (uint64_t)t.rows();
            total += t.nbytes;
            max_bytes = std::max(max_bytes, t.nbytes);
            ++type_count[tt->name];
            if (!choice[i].note.empty())
                std::fprintf(stderr, "ikllm-make-bench: %s: %s\n", t.name.c_str(), choice[i].note.c_str());
            w.declare_tensor(t.name, t.type, t.ne, t.nbytes);
        }
        std::string types;
        for (auto& kv : type_count) types += " " + kv.first + "x" + std::to_string(kv.second);
        std::fprintf(stderr, "ikllm-make-bench: %s (%s, %d layers), %zu tensors,%s, %.2f GiB -> %s\n", c.name,
                     preset.name.c_str(), c.layers, ts.size(), types.c_str(), total / 1073741824.0, pos[2].c_str());

        w.begin(pos[2]);
        std::vector<uint8_t> buf(max_bytes);
        std::vector<float> f;
        std::vector<uint8_t> pattern;
        for (size_t i = 0; i < ts.size(); ++i) {
            const BenchTensor& t = ts[i];
            const quant::TypeTraits& tt = *quant::find_type(t.type);
            const int64_t ne0 = t.ne[0], rows = t.rows();
            Normal rng(seed * 1000003ULL + i * 7919ULL + 1);
            const bool full = t.init == Init::norm || t.init == Init::bias ||
                              (tt.id == quant::T_F32 && (uint64_t)ne0 * rows <= (1u << 22));
            if (full) {  // small tensors: every value drawn
                f.resize((size_t)ne0 * rows);
                if (t.init == Init::norm) rng.fill(f.data(), f.size(), 1.0f, t.scale);
                else if (t.init == Init::bias) rng.fill(f.data(), f.size(), 0.0f, t.scale);
                else if (t.init == Init::embd) rng.fill(f.data(), f.size(), 0.0f, t.scale);
                else rng.fill(f.data(), f.size(), 0.0f, t.scale / std::sqrt((float)ne0));
                encode(tt, f.data(), rows, ne0, buf.data());
                w.write_data(buf.data(), t.nbytes);
                continue;
            }
            // A group of G rows (a multiple of the interleave), quantized once, then tiled.
            const int64_t il = std::max<int32_t>(1, tt.interleave);
            int64_t G = std::min<int64_t>(rows, (16 + il - 1) / il * il);
            G = std::max<int64_t>(il, G / il * il);
            f.resize((size_t)G * ne0);
            const float sd = t.init == Init::embd ? t.scale : t.scale / std::sqrt((float)ne0);
            rng.fill(f.data(), f.size(), 0.0f, sd);
            const size_t rb = quant::row_bytes(tt, ne0), gb = rb * il;
            pattern.resize(rb * G);
            encode(tt, f.data(), G, ne0, pattern.data());
            const int64_t P = G / il, n_groups = rows / il;
            uint8_t* dst = buf.data();
            for (int64_t k = 0; k < n_groups; ++k) {
                const int64_t src = (k * 7 + k / P + (int64_t)i) % P;  // a permutation per window of P, shifted
                std::memcpy(dst + (size_t)k * gb, pattern.data() + (size_t)src * gb, gb);
            }
            w.write_data(buf.data(), t.nbytes);
        }
        w.commit();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "ikllm-make-bench: wrote %s in %.2f s (%.0f MiB/s)\n", pos[2].c_str(), s,
                     total / 1048576.0 / std::max(s, 1e-9));
    } catch (const std::exception& e) {
        die(e.what());
    }
    return 0;
}
