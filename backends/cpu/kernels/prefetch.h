// Software prefetch of the weight stream in the matrix-vector loops (token generation reads each
// weight once, so these kernels are bound by how fast one core pulls a sequential stream in).
// The hardware prefetchers alone left llama-1b Q4_0 at 5 GB/s per core against the 7.5 GB/s a
// plain read loop gets here (quant_matmul_bench --threads 2 --nt 1 q4_0: 10.1 -> 16.5 GB/s with
// prefetches 4 KiB ahead; 2 KiB and 8 KiB were slower). Prefetches never fault, so running past
// the end of the matrix is harmless.
#pragma once
#include <cstdint>

namespace ikllm::cpu {

constexpr int64_t kWeightPrefetchAhead = 4096;

// Prefetch the cache lines of [p, p + Bytes) kWeightPrefetchAhead bytes ahead (call once per
// Bytes consumed; consecutive calls cover the stream).
template <int Bytes>
inline void prefetch_weights(const uint8_t* p) {
    for (int k = 0; k < (Bytes + 63) / 64; ++k) __builtin_prefetch(p + kWeightPrefetchAhead + 64 * k, 0, 3);
}

// The first kWeightPrefetchAhead bytes of a weight stream that starts cold (a chunk of rows, an
// expert's matrix): the kernels' own prefetches run that far ahead of the rows they decode, so
// without these the stream's first 64 lines would be demand misses.
inline void prefetch_stream_start(const uint8_t* p, size_t bytes) {
    const size_t n = bytes < (size_t)kWeightPrefetchAhead ? bytes : (size_t)kWeightPrefetchAhead;
    for (size_t o = 0; o < n; o += 64) __builtin_prefetch(p + o, 0, 3);
}

}  // namespace ikllm::cpu
