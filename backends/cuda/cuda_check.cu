// The CUDA error check behind IKLLM_CUDA_CHECK / IKLLM_CUDA_LAUNCHED (cuda_ops.cuh).
// Throws std::runtime_error (never ikllm::Error) naming the failed call.
#include <stdexcept>
#include <string>

#include "cuda_ops.cuh"

namespace ikllm::cuda {

void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) +
                             ") in " + (what ? what : "?"));
}

}  // namespace ikllm::cuda
