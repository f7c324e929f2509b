// Non-linear value tables read by the trellis and row-interleaved formats (docs: quant-formats.md
// §14). The shared ones come from quant_tables.h; this header only gives them short local names.
#pragma once
#include <cstdint>

#include "quant/quant_tables.h"

namespace ikllm::quant::vals {

using tables::kIq2nl;
using tables::kIq3nl;
using tables::kIq4k;
using tables::kIq4nl;
using tables::kIq5nl;
// kvalues_mxfp4: doubled E2M1 values (§5.8).
inline constexpr int8_t kMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace ikllm::quant::vals
