// Sampler state blob: "IKSM", version u32, RNG state (the standard textual form of
// mt19937_64, portable between C++ libraries) as u32 length + bytes, penalty history as
// u32 count + i32 tokens, all little-endian.
#include <algorithm>
#include <cstring>
#include <locale>
#include <sstream>

#include "core/error.h"
#include "sampling/sampler.h"

namespace ikllm {

namespace {
constexpr char kSamplerMagic[4] = {'I', 'K', 'S', 'M'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxHistory = 1u << 24;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back((uint8_t)(v >> (8 * i)));
}
[[noreturn]] void bad(const std::string& why) { fail(Status::invalid_file, "sampler state: " + why); }
}  // namespace

std::vector<uint8_t> Sampler::save_state() const {
    std::ostringstream rng_text;
    rng_text.imbue(std::locale::classic());
    rng_text << rng_;
    const std::string r = rng_text.str();
    std::vector<uint8_t> out(kSamplerMagic, kSamplerMagic + 4);
    put_u32(out, kVersion);
    put_u32(out, (uint32_t)r.size());
    out.insert(out.end(), r.begin(), r.end());
    put_u32(out, (uint32_t)history_.size());
    for (int32_t t : history_) put_u32(out, (uint32_t)t);
    return out;
}

void Sampler::load_state(const uint8_t* data, size_t size) {
    size_t at = 0;
    auto u32 = [&](const char* what) {
        if (size - at < 4) bad(std::string("truncated ") + what);
        uint32_t v = 0;
        for (int i = 3; i >= 0; --i) v = (v << 8) | data[at + i];
        at += 4;
        return v;
    };
    if (!data || size < 4 || std::memcmp(data, kSamplerMagic, 4) != 0) bad("not a sampler state");
    at = 4;
    const uint32_t version = u32("version");
    if (version != kVersion) bad("unsupported version " + std::to_string(version));
    const uint32_t rlen = u32("RNG state");
    if (size - at < rlen) bad("truncated RNG state");
    std::istringstream rng_text(std::string(reinterpret_cast<const char*>(data + at), rlen));
    rng_text.imbue(std::locale::classic());
    at += rlen;
    std::mt19937_64 rng;
    rng_text >> rng;
    if (rng_text.fail()) bad("malformed RNG state");
    const uint32_t n = u32("history");
    if (n > kMaxHistory || size - at < (size_t)n * 4) bad("truncated penalty history");
    std::deque<int32_t> history;
    for (uint32_t i = 0; i < n; ++i) history.push_back((int32_t)u32("history"));
    if (at != size) bad("trailing bytes");
    // Everything parsed: commit.
    rng_ = rng;
    history_ = std::move(history);
    const size_t keep = o_.penalty_last_n < 0 ? SIZE_MAX : (size_t)std::max(o_.penalty_last_n, 0);
    while (history_.size() > keep) history_.pop_front();
}

}  // namespace ikllm
