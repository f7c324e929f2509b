// Session state files: the KV cache cells of chosen sequences (positions, tokens, sharing,
// K/V rows), optionally a sampler's RNG and penalty history, under a header that identifies the
// model file, the cache layout and the format. Format and rules: docs/session-state.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "session/state_io.h"

namespace ikllm {

class Session;
class Sampler;

constexpr uint32_t kStateFormatVersion = 1;
constexpr uint32_t kStateAbiVersion = 0;  // == IKLLM_ABI_VERSION (checked at the C boundary)

// Sequences to save: empty = every sequence holding at least one cell. Ids must be valid and
// distinct (throws invalid_argument otherwise).
std::vector<int32_t> resolve_state_seqs(const Session& s, const int32_t* seq_ids, int32_t n_seq_ids);

// Exact size in bytes of the state save_state writes for these arguments.
uint64_t state_size(const Session& s, const std::vector<int32_t>& seqs, const Sampler* sampler);
void save_state(const Session& s, const std::vector<int32_t>& seqs, const Sampler* sampler, ByteSink& out);

// Restores a state: the saved sequences (or, with replace_all, all sequences) are replaced by
// the saved ones; when sampler is not null its RNG and history are restored too (the state must
// hold them). Everything is checked (header, compatibility, checksum) before anything changes:
// on an error the session and sampler are unchanged. The one exception is a source that fails
// or changes between the checking pass and the loading pass (a file modified meanwhile): the
// target sequences are then left empty and the error says so.
void load_state(Session& s, ByteSource& in, Sampler* sampler, bool replace_all);

}  // namespace ikllm
