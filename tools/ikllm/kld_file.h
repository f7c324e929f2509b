// The base-model file of `ikllm perplexity --kl-divergence-base`: the evaluated tokens and, for
// every scored position, the base model's distribution (layout: docs/quality-tools.md).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace cli {

enum class KldEncoding : uint32_t {
    f32_logits = 0,    // the raw logits as float32: lossless
    u16_logprobs = 1,  // log-probabilities quantized to 16 bits on a per-position linear scale
};

struct KldHeader {
    uint32_t n_vocab = 0, n_ctx = 0, n_chunks = 0, first = 0;
    KldEncoding encoding = KldEncoding::u16_logprobs;
    uint32_t scored() const { return n_ctx - 1 - first; }  // records per chunk
};

// Writes to PATH.tmp and renames to PATH in finish(), so an interrupted run leaves no
// truncated base file behind.
class KldWriter {
public:
    KldWriter(const std::string& path, const KldHeader& h, const std::vector<int32_t>& tokens);
    ~KldWriter();
    // One scored position: the base's logits and the token that follows.
    void add(const float* logits, int32_t target);
    void finish();

private:
    std::string path_, tmp_;
    KldHeader h_;
    std::FILE* f_ = nullptr;
    uint64_t records_ = 0;
    std::vector<double> lp_;
    std::vector<uint16_t> q_;
};

class KldReader {
public:
    explicit KldReader(const std::string& path);
    ~KldReader();
    const KldHeader& header() const { return h_; }
    const std::vector<int32_t>& tokens() const { return tokens_; }  // n_chunks * n_ctx
    // Next record: normalized base log-probabilities, the exact log-probability of the target
    // and the base's most likely token.
    void next(std::vector<double>& lp, double& lp_target, int32_t& top);

private:
    std::string path_;
    KldHeader h_;
    std::FILE* f_ = nullptr;
    std::vector<int32_t> tokens_;
    std::vector<float> f32_;
    std::vector<uint16_t> q_;
};

}  // namespace cli
