// The scalar decoder: the AVX-512 kernel flags without VBMI, which grid_int.h's vector pass needs.
#ifdef __AVX512VBMI__
#error "compile without VBMI"
#endif
#define GRID_DECODE_FN grid_decode_block_ref
#include "grid_decode512_entry.inc"
