// Row-interleaved rows back to their plain base type (the inverse of repack.h), for the
// interleaved types whose repack only moves bits: run-time repack turns files made of the
// reference's interleaved forms into the forms this CPU multiplies fastest (their base, or a
// layout of ikllm's own) when the stored form is slower here.
// The inverse is not written per type: it is derived from the type's own repack function by
// probing it with single-bit inputs (a repack that moves every input bit to exactly one output
// bit, the same way in every 256-column block, is a bit permutation; its inverse is compiled to
// runs of consecutive bits). Per-row metadata (IQ4_KS_R4's row scales, gathered at the head of
// the row group) is a permutation of its own, the same for every row length. Types whose
// repack transforms values (scrambled signs, offsets) are not covered: unpack_supported says
// which are.
#pragma once
#include <cstdint>

namespace ikllm::quant {

// Whether unpack_rows can convert rows of this interleaved type (derived once, then cached in a
// read-only table).
bool unpack_supported(uint32_t interleaved_type);

// nrows rows of `interleaved_type` (ne0 columns, contiguous groups) into plain rows of its base
// type at dst (nrows * row_bytes(base, ne0) bytes). False (nothing written) when the type is
// not supported or the sizes do not fit.
bool unpack_rows(uint32_t interleaved_type, const uint8_t* src, uint8_t* dst, int64_t ne0, int64_t nrows);

// Rows of `from` converted to `to`, both forms of one plain type (plain -> interleaved,
// interleaved -> plain, interleaved -> another interleaved form through the plain rows). nrows a
// multiple of both forms' row groups. False when there is no such conversion.
bool convert_rows(uint32_t from, uint32_t to, const uint8_t* src, uint8_t* dst, int64_t ne0, int64_t nrows);

// Rows per conversion unit of convert_rows (the least common multiple of both forms' groups).
int64_t convert_group_rows(uint32_t from, uint32_t to);

}  // namespace ikllm::quant
