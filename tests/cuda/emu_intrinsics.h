// Host versions of the CUDA integer intrinsics the device forms of the backend's helpers use
// (backends/cuda/device_branch.cuh), written from the CUDA / PTX documentation -- not from the
// helpers' own host twins, so that the emulation checks the device forms independently:
//   __byte_perm(x, y, s): byte i of the result is byte (s >> 4i) & 7 of the 8 bytes {y:x}
//                         (x holds bytes 0-3); only the low 3 bits of each selector count.
//   __dp4a(a, b, c):      c + the sum of the 4 products of the signed bytes of a and b.
//   __dp2a_lo(a, b, c):   c + a.h0 * b.b0 + a.h1 * b.b1 (signed 16-bit halves of a, signed
//                         bytes 0, 1 of b); __dp2a_hi the same with bytes 2, 3 of b.
#pragma once
#include <cstdint>

inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const unsigned char bytes[8] = {(unsigned char)x,         (unsigned char)(x >> 8), (unsigned char)(x >> 16),
                                    (unsigned char)(x >> 24), (unsigned char)y,        (unsigned char)(y >> 8),
                                    (unsigned char)(y >> 16), (unsigned char)(y >> 24)};
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned int)bytes[(s >> (4 * i)) & 7u] << (8 * i);
    return r;
}

inline int __dp4a(int a, int b, int c) {
    int sum = c;
    for (int i = 0; i < 4; ++i) sum += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
    return sum;
}

inline int ikllm_emu_dp2a(int a, int b, int c, int first_byte) {
    const int h0 = (short)(a & 0xFFFF), h1 = (short)((unsigned)a >> 16);
    return c + h0 * (int)(signed char)(b >> (8 * first_byte)) + h1 * (int)(signed char)(b >> (8 * (first_byte + 1)));
}
inline int __dp2a_lo(int a, int b, int c) { return ikllm_emu_dp2a(a, b, c, 0); }
inline int __dp2a_hi(int a, int b, int c) { return ikllm_emu_dp2a(a, b, c, 2); }
