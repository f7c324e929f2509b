// Which weight types the CUDA matrix kernels and get_rows decode: exactly those
// dispatch_weight_type (block_decode.cuh) has a BlockDecoder for.
#include "block_decode.cuh"
#include "cuda_ops.cuh"

namespace ikllm::cuda {

bool weight_type_supported(uint32_t type) {
    return dispatch_weight_type(type, [](auto) {});
}

}  // namespace ikllm::cuda
