// Lossless conversion of plain rows into row-interleaved groups (docs: quant-formats.md §12),
// used by the run-time-repack option and by the quantizer of interleaved types. Dequantizing
// the repacked group gives exactly the values of the plain rows (the only exceptions are the
// documented signed zeros of Q5_0_R4 / Q6_0_R4, §13.2).
#pragma once
#include <cstdint>

namespace ikllm::quant {

// Interleaved type that run-time repacking turns `from_type` into, or 0 if none.
uint32_t repack_target(uint32_t from_type);

// Repacks nrows plain rows of `from_type` (ne0 columns each, contiguous) into the default
// interleaved type, written to *to_type. Returns false (and writes nothing) when the type has
// no repacked form or nrows is not a multiple of its interleave. dst must hold
// nrows * row_bytes(*to_type, ne0) bytes (equal to the plain size except Q8_KV -> Q8_KV_R8).
bool repack_rows(uint32_t from_type, uint32_t* to_type, const uint8_t* src, uint8_t* dst, int64_t ne0,
                 int64_t nrows);

// Same, into a chosen interleaved type (e.g. Q4_0 -> Q4_0_4X8). False if `to_type` is not a
// repack of `from_type` or nrows does not fit.
bool repack_rows_to(uint32_t from_type, uint32_t to_type, const uint8_t* src, uint8_t* dst, int64_t ne0,
                    int64_t nrows);

// Plain type that `interleaved_type` is a repack of, or 0 (own formats such as IQ1_S_R4).
uint32_t repack_base(uint32_t interleaved_type);

}  // namespace ikllm::quant
