#include "kld_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cli.h"
#include "quality_stats.h"

namespace cli {

namespace {

constexpr char kMagic[8] = {'I', 'K', 'L', 'L', 'M', 'K', 'L', 'D'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 32;
// u16 scale: log-probabilities more than this far below the best one are clamped to it (their
// probability, < e^-40 of the best, does not change any statistic at double precision).
constexpr double kU16Range = 40.0;

uint64_t record_bytes(const KldHeader& h) {
    return h.encoding == KldEncoding::f32_logits ? 8 + 4 * (uint64_t)h.n_vocab : 16 + 2 * (uint64_t)h.n_vocab;
}

void put(std::FILE* f, const void* p, size_t n, const std::string& path) {
    if (std::fwrite(p, 1, n, f) != n) die("cannot write '" + path + "'");
}
void get(std::FILE* f, void* p, size_t n, const std::string& path) {
    if (std::fread(p, 1, n, f) != n) die("'" + path + "' is truncated");
}

}  // namespace

KldWriter::KldWriter(const std::string& path, const KldHeader& h, const std::vector<int32_t>& tokens)
    : path_(path), tmp_(path + ".tmp"), h_(h) {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) die("cannot create '" + tmp_ + "': " + std::strerror(errno));
    const uint32_t fields[6] = {kVersion, h.n_vocab, h.n_ctx, h.n_chunks, h.first, (uint32_t)h.encoding};
    put(f_, kMagic, 8, tmp_);
    put(f_, fields, sizeof fields, tmp_);
    put(f_, tokens.data(), tokens.size() * sizeof(int32_t), tmp_);
}

KldWriter::~KldWriter() {
    if (f_) {
        std::fclose(f_);
        std::remove(tmp_.c_str());
    }
}

void KldWriter::add(const float* logits, int32_t target) {
    log_softmax(logits, (int32_t)h_.n_vocab, lp_);
    const float lp_target = (float)lp_[(size_t)target];
    const int32_t top = argmax(logits, (int32_t)h_.n_vocab);
    put(f_, &lp_target, 4, tmp_);
    put(f_, &top, 4, tmp_);
    if (h_.encoding == KldEncoding::f32_logits) {
        put(f_, logits, 4 * (size_t)h_.n_vocab, tmp_);
    } else {
        // ln p_i ~= lo + q_i * step with q_i in [0, 65535] covering [max - range, max].
        const double hi = *std::max_element(lp_.begin(), lp_.end());
        const double lo_d = std::max(*std::min_element(lp_.begin(), lp_.end()), hi - kU16Range);
        const float lo = (float)lo_d, step = (float)((hi - lo_d) / 65535.0);
        q_.resize(h_.n_vocab);
        for (size_t i = 0; i < q_.size(); ++i) {
            const double q = step > 0 ? std::round((lp_[i] - (double)lo) / (double)step) : 0.0;
            q_[i] = (uint16_t)std::clamp(q, 0.0, 65535.0);
        }
        put(f_, &lo, 4, tmp_);
        put(f_, &step, 4, tmp_);
        put(f_, q_.data(), 2 * q_.size(), tmp_);
    }
    ++records_;
}

void KldWriter::finish() {
    if ((uint64_t)h_.n_chunks * h_.scored() != records_) die("internal: KL base file record count mismatch");
    if (std::fclose(f_) != 0) {
        f_ = nullptr;
        die("cannot write '" + tmp_ + "'");
    }
    f_ = nullptr;
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) die("cannot rename '" + tmp_ + "' to '" + path_ + "'");
}

KldReader::KldReader(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) die("cannot open '" + path + "': " + std::strerror(errno));
    char magic[8];
    uint32_t fields[6];
    get(f_, magic, 8, path);
    if (std::memcmp(magic, kMagic, 8) != 0) die("'" + path + "' is not an ikllm KL-divergence base file");
    get(f_, fields, sizeof fields, path);
    if (fields[0] != kVersion) die("'" + path + "': unsupported version " + std::to_string(fields[0]));
    h_.n_vocab = fields[1];
    h_.n_ctx = fields[2];
    h_.n_chunks = fields[3];
    h_.first = fields[4];
    if (fields[5] > 1) die("'" + path + "': unknown encoding " + std::to_string(fields[5]));
    h_.encoding = (KldEncoding)fields[5];
    if (h_.n_vocab < 1 || h_.n_vocab > (1u << 24) || h_.n_ctx < 3 || h_.n_ctx > (1u << 24) || h_.first >= h_.n_ctx - 1 ||
        h_.n_chunks < 1 || (uint64_t)h_.n_chunks * h_.n_ctx > (1ull << 32))
        die("'" + path + "': inconsistent header");
    // The size must match exactly; this also bounds the token array before it is allocated.
    const uint64_t want = kHeaderBytes + 4ull * h_.n_chunks * h_.n_ctx + (uint64_t)h_.n_chunks * h_.scored() * record_bytes(h_);
    if (std::fseek(f_, 0, SEEK_END) != 0) die("cannot seek in '" + path + "'");
    const long long size = std::ftell(f_);
    if (size < 0 || (uint64_t)size != want)
        die("'" + path + "' has " + std::to_string(size) + " bytes, its header implies " + std::to_string(want));
    std::fseek(f_, (long)kHeaderBytes, SEEK_SET);
    tokens_.resize((size_t)h_.n_chunks * h_.n_ctx);
    get(f_, tokens_.data(), 4 * tokens_.size(), path);
    for (int32_t t : tokens_)
        if (t < 0 || (uint32_t)t >= h_.n_vocab) die("'" + path + "': token id " + std::to_string(t) + " out of range");
}

KldReader::~KldReader() {
    if (f_) std::fclose(f_);
}

void KldReader::next(std::vector<double>& lp, double& lp_target, int32_t& top) {
    float t;
    get(f_, &t, 4, path_);
    get(f_, &top, 4, path_);
    lp_target = t;
    if (top < 0 || (uint32_t)top >= h_.n_vocab) die("'" + path_ + "': corrupt record");
    if (h_.encoding == KldEncoding::f32_logits) {
        f32_.resize(h_.n_vocab);
        get(f_, f32_.data(), 4 * f32_.size(), path_);
        log_softmax(f32_.data(), (int32_t)h_.n_vocab, lp);
        return;
    }
    float lo, step;
    get(f_, &lo, 4, path_);
    get(f_, &step, 4, path_);
    q_.resize(h_.n_vocab);
    get(f_, q_.data(), 2 * q_.size(), path_);
    // Dequantize, then renormalize so the rounding errors cancel to first order.
    lp.resize(h_.n_vocab);
    double mx = -INFINITY;
    for (size_t i = 0; i < q_.size(); ++i) {
        lp[i] = (double)lo + (double)q_[i] * (double)step;
        mx = std::max(mx, lp[i]);
    }
    double sum = 0;
    for (double v : lp) sum += std::exp(v - mx);
    const double lse = mx + std::log(sum);
    if (!std::isfinite(lse)) die("'" + path_ + "': corrupt record");
    for (double& v : lp) v -= lse;
}

}  // namespace cli
