// The backends a library instance can use: the CPU (built in) and the GPUs of the CUDA
// plug-in (libikllm-cuda.so), which is looked for on first use -- next to libikllm.so, or at
// $IKLLM_CUDA_PLUGIN -- so a machine without the plug-in, a driver or a GPU just has none,
// and status() says why.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"

namespace ikllm::backend {

class Registry {
public:
    Registry() = default;
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    int gpu_count();
    Backend* gpu(int index);  // null when out of range
    // One line: what was found ("CUDA: 1 device: NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)") or
    // why there is no GPU ("CUDA: plug-in not found (...)", "CUDA unavailable: no driver").
    std::string status();

private:
    void load();
    std::once_flag once_;
    std::vector<std::unique_ptr<Backend>> gpus_;
    std::string status_;
};

}  // namespace ikllm::backend
