// Importance matrices: per weight tensor, the mean square of each input column of its matrix
// products over a calibration text. Stored in the reference's binary ".dat" layout, so files
// made by either engine can be used with the other:
//   int32 n_entries; per entry: int32 name_len, name bytes, int32 ncall, int32 nval,
//   float32 values[nval] (= mean square * ncall); then int32 chunks, int32 len, dataset name.
// For expert tensors (3-D) nval = ne0 * n_expert, expert-major.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ikllm::quantize {

struct ImatrixEntry {
    int32_t ncall = 0;
    std::vector<float> mean_sq;  // already divided by ncall
};

struct Imatrix {
    std::map<std::string, ImatrixEntry> entries;
    int32_t chunks = 0;
    std::string dataset;
};

// Throws invalid_file / io_error with the path and what is wrong.
Imatrix load_imatrix(const std::string& path);
// Atomic write (temporary name, renamed when complete).
void save_imatrix(const Imatrix& m, const std::string& path);

}  // namespace ikllm::quantize
