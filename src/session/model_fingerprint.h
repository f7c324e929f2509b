// A cheap identity of a loaded model file for session-state headers: a hash of the GGUF
// metadata, the tensor infos (name, type, shape, size, part, offset) and the file sizes.
// Reads no tensor data, so it costs milliseconds even for models of hundreds of GB; computed
// once per model (cached in Model::fingerprint).
#pragma once
#include <cstdint>

namespace ikllm {

class Model;
uint64_t model_fingerprint(const Model& model);

}  // namespace ikllm
