#include "tokenizer/byte_unicode.h"

#include <array>

namespace ikllm::tok {
namespace {

// Printable bytes keep their value; the other 68 get U+0100.. in increasing byte order.
struct Tables {
    std::array<uint32_t, 256> to_cpt{};
    std::array<int16_t, 0x144> to_byte{};
    Tables() {
        to_byte.fill(-1);
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            to_cpt[b] = keep ? uint32_t(b) : next++;
            to_byte[to_cpt[b]] = int16_t(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

uint32_t byte_to_cpt(uint8_t b) { return tables().to_cpt[b]; }

int cpt_to_byte(uint32_t cp) { return cp < 0x144 ? tables().to_byte[cp] : -1; }

}  // namespace ikllm::tok
