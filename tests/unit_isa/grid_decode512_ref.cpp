// The scalar decoder: baseline flags, without VBMI, which grid_int.h's vector pass needs, and
// without BMI2, which the AVX2 build's pass needs (and runnable on any x86-64 CPU).
#if defined(__AVX512VBMI__) || defined(__BMI2__)
#error "compile without VBMI and BMI2"
#endif
#define GRID_DECODE_FN grid_decode_block_ref
#define GRID_DECODE_R4_FN grid_decode_r4_ref
#define GRID_DECODE_ROW_FN grid_decode_row_ref
#include "grid_decode512_entry.inc"
