// GPT-2 byte-level alphabet (docs/tokenizers.md §7 step 2): every byte maps to one printable
// code point so BPE works on text without raw control bytes or spaces.
#pragma once
#include <cstdint>

namespace ikllm::tok {

// Code point standing for byte b.
uint32_t byte_to_cpt(uint8_t b);
// Byte a code point stands for, or -1 when it is not part of the alphabet.
int cpt_to_byte(uint32_t cp);

}  // namespace ikllm::tok
