// The vector decoder (AVX-512 with VBMI: grid_vec512.h). See grid_decode512_test.cpp.
#ifndef __AVX512VBMI__
#error "compile with the AVX-512 kernel flags"
#endif
#define GRID_DECODE_FN grid_decode_block_vec512
#define GRID_DECODE_R4_FN grid_decode_r4_vec512
#define GRID_DECODE_ROW_FN grid_decode_row_vec512
#include "grid_decode512_entry.inc"
