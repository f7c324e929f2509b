// A streaming 64-bit hash (multiply-xorshift over little-endian 8-byte words, murmur-style
// finaliser) for the session-state checksum and the model fingerprint. Not cryptographic: it
// detects truncation, corruption and a different model, it does not resist forgery.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ikllm {

class Hash64 {
public:
    void update(const void* data, size_t n) {
        if (n == 0) return;  // data may be null then (an empty vector)
        const uint8_t* p = static_cast<const uint8_t*>(data);
        len_ += n;
        if (nbuf_ > 0) {  // finish a partial word first
            const size_t k = n < 8 - nbuf_ ? n : 8 - nbuf_;
            std::memcpy(buf_ + nbuf_, p, k);
            nbuf_ += k;
            p += k;
            n -= k;
            if (nbuf_ < 8) return;
            mix(load(buf_));
            nbuf_ = 0;
        }
        for (; n >= 8; n -= 8, p += 8) mix(load(p));
        std::memcpy(buf_, p, n);
        nbuf_ = n;
    }
    void u32(uint32_t v) { uint8_t b[4]; for (int i = 0; i < 4; ++i) b[i] = (uint8_t)(v >> (8 * i)); update(b, 4); }
    void u64(uint64_t v) { uint8_t b[8]; for (int i = 0; i < 8; ++i) b[i] = (uint8_t)(v >> (8 * i)); update(b, 8); }
    void str(const char* s, size_t n) { u64(n); update(s, n); }

    uint64_t digest() const {
        uint64_t h = h_;
        uint8_t tail[8] = {0};
        std::memcpy(tail, buf_, nbuf_);
        h = step(h, load(tail));
        h = step(h, len_);
        h ^= h >> 33;  // final avalanche
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        return h;
    }

private:
    static uint64_t load(const uint8_t* p) {
        uint64_t w = 0;
        for (int i = 7; i >= 0; --i) w = (w << 8) | p[i];
        return w;
    }
    static uint64_t step(uint64_t h, uint64_t w) {
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        return h ^ (h >> 29);
    }
    void mix(uint64_t w) { h_ = step(h_, w); }
    uint64_t h_ = 0x243f6a8885a308d3ull;
    uint64_t len_ = 0;
    uint8_t buf_[8] = {0};
    size_t nbuf_ = 0;
};

}  // namespace ikllm
