// Sequence pooling of final hidden states into one embedding per sequence, and L2
// normalisation. The enum values are the GGUF `<arch>.pooling_type` numbering.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ikllm {

class Model;

enum class Pooling : int32_t { none = 0, mean = 1, cls = 2, last = 3, rank = 4 };

// "none" | "mean" | "cls" | "last" ("first" is accepted for cls); false when unknown.
bool pooling_from_name(const std::string& name, Pooling* out);
const char* pooling_name(Pooling p);
// The model's `<arch>.pooling_type` (none when absent); invalid_file for a value outside 0..4.
Pooling model_pooling(const Model& m);

// One pooled vector per sequence present in a batch.
struct PooledSet {
    std::vector<float> data;         // [n_pooled, n_embd]
    std::vector<int32_t> row_of_seq; // sequence id -> row in data, -1 when absent from the batch
};

// Pools the rows hidden[i] (n_tokens x n_embd) by their sequence seq[i]: mean over the
// sequence's tokens, its lowest-position token (cls) or its highest-position one (last);
// then L2-normalises each vector when `normalize`. p must not be none or rank.
PooledSet pool_sequences(const float* hidden, int32_t n_tokens, int32_t n_embd, const int32_t* seq,
                         const int32_t* pos, int32_t n_seq, Pooling p, bool normalize);

// v /= ||v||_2 (a zero vector stays zero).
void l2_normalize(float* v, int32_t n);

}  // namespace ikllm
