// `ikllm perplexity`: perplexity of a text in fixed windows, and the KL divergence of a model's
// token distributions from a base model's (quantization quality). See docs/quality-tools.md.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "kld_file.h"
#include "progress_bar.h"
#include "quality_stats.h"

namespace cli {

namespace {

const char* kUsage =
    "usage: ikllm perplexity -m MODEL -f TEXT [-c CTX] [-b BATCH] [--chunks N] [-t N] [--format text|jsonl]\n"
    "         [--kl-divergence-base FILE [--kl-base-encoding u16|f32]]   (also write the base logits)\n"
    "       ikllm perplexity -m MODEL --kl-divergence --kl-divergence-base FILE [--chunks N] ...";

// JSON number; non-finite values become null.
std::string jnum(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::vector<int32_t> tokenize_all(ikllm_model* m, const std::string& text) {
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(m, text.data(), text.size(), IKLLM_TOKENIZE_ADD_SPECIAL, nullptr, 0, &n);
    if (st != IKLLM_OK && st != IKLLM_ERR_BUFFER_TOO_SMALL) check(st, "tokenize");
    std::vector<int32_t> ids(n);
    check(ikllm_tokenize(m, text.data(), text.size(), IKLLM_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n),
          "tokenize");
    ids.resize(n);
    return ids;
}

// Whether the vocabulary puts BOS in front of tokenized text.
bool adds_bos(ikllm_model* m) {
    const int32_t bos = ikllm_model_special_token(m, IKLLM_TOKEN_BOS);
    if (bos < 0) return false;
    const std::vector<int32_t> ids = tokenize_all(m, "a");
    return !ids.empty() && ids[0] == bos;
}

struct ProgressCtx {
    ProgressBar* bar;
    double done_before, total;
    std::string note;
    double chunk_tokens;
};

int32_t on_score_progress(void* user, float f) {
    auto* p = static_cast<ProgressCtx*>(user);
    p->bar->update(p->done_before + f * p->chunk_tokens, p->total, p->note);
    return 0;
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
    Args a = parse(argc, argv, {"--kl-divergence"});
    const bool kl_compare = a.has("--kl-divergence");
    const bool kl_write = !kl_compare && a.has("--kl-divergence-base");
    if (kl_compare && !a.has("--kl-divergence-base")) die(std::string("--kl-divergence needs --kl-divergence-base FILE\n") + kUsage);
    if (!kl_compare && !a.has("-f")) die(std::string("perplexity: missing -f TEXT\n") + kUsage);
    const std::string format = a.get("--format", "text");
    if (format != "text" && format != "jsonl") die("--format must be text or jsonl");
    const bool jsonl = format == "jsonl";
    const std::string enc_name = a.get("--kl-base-encoding", "u16");
    if (enc_name != "u16" && enc_name != "f32") die("--kl-base-encoding must be u16 or f32");

    Loaded L;
    load(a, L);
    const int32_t n_vocab = ikllm_model_n_vocab(L.model);

    // The windows: tokens[c * n_ctx, (c + 1) * n_ctx), each evaluated from an empty cache.
    std::unique_ptr<KldReader> reader;
    std::vector<int32_t> tokens;
    int n_ctx = 0;
    size_t n_chunks = 0;
    size_t n_text_tokens = 0;
    const long long max_chunks = a.get_int("--chunks", -1);
    if (max_chunks == 0 || max_chunks < -1) die("--chunks must be positive");
    if (kl_compare) {
        reader = std::make_unique<KldReader>(a.get("--kl-divergence-base"));
        const KldHeader& h = reader->header();
        if ((int32_t)h.n_vocab != n_vocab)
            die("the base file has a vocabulary of " + std::to_string(h.n_vocab) + ", the model " + std::to_string(n_vocab));
        n_ctx = (int)h.n_ctx;
        if (a.has("-c") && a.get_int("-c", 0) != n_ctx)
            die("-c " + a.get("-c") + " differs from the base file's context " + std::to_string(n_ctx));
        if (h.first != (uint32_t)n_ctx / 2) die("the base file scores from position " + std::to_string(h.first) + ", expected n_ctx/2");
        n_chunks = h.n_chunks;
        if (max_chunks >= 0) n_chunks = std::min(n_chunks, (size_t)max_chunks);
        tokens = reader->tokens();
        n_text_tokens = tokens.size();
    } else {
        n_ctx = (int)a.get_int("-c", 512);
        if (n_ctx < 4) die("perplexity: -c must be at least 4");
        tokens = tokenize_all(L.model, read_file(a.get("-f")));
        n_text_tokens = tokens.size();
        n_chunks = tokens.size() / (size_t)n_ctx;
        if (max_chunks >= 0) n_chunks = std::min(n_chunks, (size_t)max_chunks);
        if (n_chunks == 0)
            die("perplexity: the text has " + std::to_string(tokens.size()) + " tokens, one chunk needs " + std::to_string(n_ctx));
        tokens.resize(n_chunks * (size_t)n_ctx);
        // Every window starts like a fresh text: with BOS when the model adds one.
        if (adds_bos(L.model)) {
            const int32_t bos = ikllm_model_special_token(L.model, IKLLM_TOKEN_BOS);
            for (size_t c = 0; c < n_chunks; ++c) tokens[c * (size_t)n_ctx] = bos;
        }
    }
    const int first = n_ctx / 2;
    const int n_scored = n_ctx - 1 - first;  // logits at [first, n_ctx - 1) predict tokens [first + 1, n_ctx)
    const int n_batch = (int)std::min<long long>(a.get_int("-b", std::min(n_ctx, 2048)), n_ctx);
    if (n_batch < 1) die("-b must be positive");

    std::unique_ptr<KldWriter> writer;
    if (kl_write) {
        KldHeader h;
        h.n_vocab = (uint32_t)n_vocab;
        h.n_ctx = (uint32_t)n_ctx;
        h.n_chunks = (uint32_t)n_chunks;
        h.first = (uint32_t)first;
        h.encoding = enc_name == "f32" ? KldEncoding::f32_logits : KldEncoding::u16_logprobs;
        writer = std::make_unique<KldWriter>(a.get("--kl-divergence-base"), h, tokens);
    }

    ikllm_options* so = session_options(a, 1, n_ctx);
    check(ikllm_options_set_int(so, "n_ctx", n_ctx), "option n_ctx");
    check(ikllm_options_set_int(so, "n_batch", n_batch), "option n_batch");
    ikllm_session* s = nullptr;
    ikllm_status st = ikllm_session_create(L.model, so, &s);
    ikllm_options_free(so);
    check(st, "session");

    if (jsonl) {
        std::printf("{\"type\":\"start\",\"n_text_tokens\":%zu,\"n_ctx\":%d,\"n_batch\":%d,\"n_chunks\":%zu,"
                    "\"scored_per_chunk\":%d,\"kl_divergence\":%s}\n",
                    n_text_tokens, n_ctx, n_batch, n_chunks, n_scored, kl_compare ? "true" : "false");
    } else {
        std::printf("perplexity: %zu tokens, %zu chunks of %d (scoring the last %d of each), batch %d\n",
                    n_text_tokens, n_chunks, n_ctx, n_scored, n_batch);
    }
    std::fflush(stdout);

    ProgressBar bar("perplexity");
    const double total = (double)n_chunks * n_ctx;
    MeanStats nll;      // every scored token so far
    KldStats kls;       // --kl-divergence only
    std::vector<float> lp((size_t)n_scored);
    std::vector<double> base_lp;
    std::vector<int32_t> want, seq0;
    for (size_t c = 0; c < n_chunks; ++c) {
        const int32_t* toks = tokens.data() + c * (size_t)n_ctx;
        check(ikllm_session_clear(s), "clear");
        const std::string note = "chunk " + std::to_string(c + 1) + "/" + std::to_string(n_chunks);
        MeanStats chunk_nll;
        if (!writer && !reader) {
            ProgressCtx pc{&bar, (double)c * n_ctx, total, note, (double)n_ctx};
            size_t needed = 0;
            check(ikllm_session_score_tokens(s, 0, toks, n_ctx, first, lp.data(), lp.size(), &needed, on_score_progress, &pc),
                  "score");
            for (float v : lp) chunk_nll.add(-(double)v);
        } else {
            // Full distributions are needed: decode micro-batches and read the logits rows.
            for (int b = 0; b < n_ctx; b += n_batch) {
                const int e = std::min(n_ctx, b + n_batch);
                // Logits from `first` on, the last token's too (unused), as score_tokens and the
                // reference request them: some kernels' numerics depend on the number of rows.
                want.assign((size_t)(e - b), 0);
                for (int i = std::max(b, first); i < e; ++i) want[(size_t)(i - b)] = 1;
                check(ikllm_session_decode(s, toks + b, nullptr, nullptr, want.data(), e - b, 0), "decode");
                for (int i = std::max(b, first); i < e && i < n_ctx - 1; ++i) {
                    const float* lg = nullptr;
                    check(ikllm_session_logits(s, i - b, &lg, nullptr), "logits");
                    const int32_t target = toks[i + 1];
                    if (writer) {
                        writer->add(lg, target);
                        log_softmax(lg, n_vocab, base_lp);
                        chunk_nll.add(-base_lp[(size_t)target]);
                    } else {
                        double lp_target;
                        int32_t top;
                        reader->next(base_lp, lp_target, top);
                        const double before = kls.nll.sum;
                        kls.add(base_lp, lp_target, top, lg, n_vocab, target);
                        chunk_nll.add(kls.nll.sum - before);
                    }
                }
                bar.update((double)c * n_ctx + e, total, note);
            }
        }
        nll.sum += chunk_nll.sum;
        nll.sum2 += chunk_nll.sum2;
        nll.n += chunk_nll.n;
        bar.clear();
        if (jsonl) {
            std::printf("{\"type\":\"chunk\",\"chunk\":%zu,\"tokens\":%lld,\"chunk_ppl\":%s,\"ppl\":%s,\"ppl_err\":%s",
                        c + 1, (long long)chunk_nll.n, jnum(ppl_of(chunk_nll)).c_str(), jnum(ppl_of(nll)).c_str(),
                        jnum(ppl_err_of(nll)).c_str());
            if (reader)
                std::printf(",\"base_ppl\":%s,\"ln_ppl_ratio\":%s,\"kld_mean\":%s,\"same_top\":%s",
                            jnum(ppl_of(kls.nll_base)).c_str(), jnum(kls.nll_diff.mean()).c_str(),
                            jnum(kls.kld.mean()).c_str(), jnum(kls.same_top_frac()).c_str());
            std::printf("}\n");
        } else if (reader) {
            std::printf("[%zu/%zu] PPL %.4f  ln(PPL/PPL_base) %.5f  mean KLD %.6f  same top %.2f%%\n", c + 1, n_chunks,
                        ppl_of(nll), kls.nll_diff.mean(), kls.kld.mean(), 100 * kls.same_top_frac());
        } else {
            std::printf("[%zu/%zu] PPL %.4f (this chunk %.4f)\n", c + 1, n_chunks, ppl_of(nll), ppl_of(chunk_nll));
        }
        std::fflush(stdout);
    }
    bar.clear();
    ikllm_session_free(s);
    if (writer) writer->finish();

    if (jsonl) {
        std::printf("{\"type\":\"summary\",\"n_ctx\":%d,\"n_chunks\":%zu,\"tokens_scored\":%lld,\"nll_mean\":%s,"
                    "\"ppl\":%s,\"ppl_err\":%s",
                    n_ctx, n_chunks, (long long)nll.n, jnum(nll.mean()).c_str(), jnum(ppl_of(nll)).c_str(),
                    jnum(ppl_err_of(nll)).c_str());
        if (reader) {
            const std::vector<double>& kv = kls.kld_values;
            std::printf(",\"base_ppl\":%s,\"base_ppl_err\":%s,\"ln_ppl_ratio\":%s,\"ln_ppl_ratio_err\":%s,"
                        "\"ppl_ratio\":%s,\"ppl_ratio_err\":%s,\"kld_mean\":%s,\"kld_mean_err\":%s,\"kld_median\":%s,"
                        "\"kld_p90\":%s,\"kld_p95\":%s,\"kld_p99\":%s,\"kld_p999\":%s,\"kld_max\":%s,"
                        "\"dp_mean\":%s,\"dp_mean_err\":%s,\"dp_rms\":%s,\"same_top\":%s,\"same_top_err\":%s",
                        jnum(ppl_of(kls.nll_base)).c_str(), jnum(ppl_err_of(kls.nll_base)).c_str(),
                        jnum(kls.nll_diff.mean()).c_str(), jnum(kls.nll_diff.err()).c_str(),
                        jnum(ppl_of(kls.nll_diff)).c_str(), jnum(ppl_err_of(kls.nll_diff)).c_str(),
                        jnum(kls.kld.mean()).c_str(), jnum(kls.kld.err()).c_str(), jnum(percentile(kv, 50)).c_str(),
                        jnum(percentile(kv, 90)).c_str(), jnum(percentile(kv, 95)).c_str(),
                        jnum(percentile(kv, 99)).c_str(), jnum(percentile(kv, 99.9)).c_str(),
                        jnum(*std::max_element(kv.begin(), kv.end())).c_str(), jnum(kls.dp.mean()).c_str(),
                        jnum(kls.dp.err()).c_str(), jnum(kls.dp.rms()).c_str(), jnum(kls.same_top_frac()).c_str(),
                        jnum(kls.same_top_err()).c_str());
        }
        std::printf("}\n");
        return 0;
    }
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl_of(nll), ppl_err_of(nll));
    if (writer) std::printf("base logits written to %s\n", a.get("--kl-divergence-base").c_str());
    if (reader) {
        const std::vector<double>& kv = kls.kld_values;
        std::printf("\n====== KL divergence against %s (%lld tokens) ======\n", a.get("--kl-divergence-base").c_str(),
                    (long long)kls.kld.n);
        std::printf("PPL(Q)                : %12.6f +/- %.6f\n", ppl_of(kls.nll), ppl_err_of(kls.nll));
        std::printf("PPL(base)             : %12.6f +/- %.6f\n", ppl_of(kls.nll_base), ppl_err_of(kls.nll_base));
        std::printf("PPL(Q)/PPL(base)      : %12.6f +/- %.6f\n", ppl_of(kls.nll_diff), ppl_err_of(kls.nll_diff));
        std::printf("ln(PPL(Q)/PPL(base))  : %12.6f +/- %.6f\n", kls.nll_diff.mean(), kls.nll_diff.err());
        std::printf("Mean    KLD           : %12.6f +/- %.6f\n", kls.kld.mean(), kls.kld.err());
        std::printf("Median  KLD           : %12.6f\n", percentile(kv, 50));
        std::printf("90.0%%   KLD           : %12.6f\n", percentile(kv, 90));
        std::printf("95.0%%   KLD           : %12.6f\n", percentile(kv, 95));
        std::printf("99.0%%   KLD           : %12.6f\n", percentile(kv, 99));
        std::printf("99.9%%   KLD           : %12.6f\n", percentile(kv, 99.9));
        std::printf("Maximum KLD           : %12.6f\n", *std::max_element(kv.begin(), kv.end()));
        std::printf("Mean    dp            : %11.4f%% +/- %.4f%%\n", 100 * kls.dp.mean(), 100 * kls.dp.err());
        std::printf("RMS     dp            : %11.4f%%\n", 100 * kls.dp.rms());
        std::printf("Same top token        : %11.4f%% +/- %.4f%%\n", 100 * kls.same_top_frac(), 100 * kls.same_top_err());
    }
    return 0;
}

}  // namespace cli
