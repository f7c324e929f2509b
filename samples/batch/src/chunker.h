// Token-aware splitting of long documents into overlapping windows.
#pragma once

#include <vector>

#include "ikllm.h"

namespace batch {

// Windows of at most `size` tokens; each starts `size - overlap` after the previous one and
// the last ends at the end. A document of `size` tokens or fewer is one window.
std::vector<std::vector<ikllm_token>> split_tokens(const std::vector<ikllm_token>& tokens, int size, int overlap);

// How many windows split_tokens would make (to reject huge documents before copying).
size_t count_windows(size_t n_tokens, int size, int overlap);

}  // namespace batch
