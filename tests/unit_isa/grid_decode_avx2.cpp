// The AVX2 build's pass 1 (grid_int.h: scalar grid loads, sign masks in vectors, IQ1 indices by
// pdep). See grid_decode512_test.cpp.
#if !defined(__AVX2__) || !defined(__BMI2__) || defined(__AVX512F__)
#error "compile with the AVX2 kernel flags"
#endif
#define GRID_DECODE_FN grid_decode_block_avx2
#define GRID_DECODE_R4_FN grid_decode_r4_avx2
#define GRID_DECODE_ROW_FN grid_decode_row_avx2
#include "grid_decode512_entry.inc"
