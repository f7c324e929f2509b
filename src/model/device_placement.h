// Places a loaded model's weights on devices (model options n_gpu_layers / tensor_placement,
// docs/placement.md) and uploads those that go to a GPU.
#pragma once
#include <functional>

#include "model/model.h"
#include "model/tensor_placement.h"

namespace ikllm {
namespace backend { class Registry; }

// The registry's GPUs in order (their backends into *backends when not null) and the shares of
// the offloaded layers: tensor_split's (throws Error(invalid_argument) for a bad text), else in
// proportion to each GPU's free memory.
GpuSet available_gpus(backend::Registry* registry, const std::string& tensor_split,
                      std::vector<backend::Backend*>* backends);

// Fills m.devices / device_names / device_weight_bytes / placement_report / layer_attn_device.
// With neither option set (or no registry) everything stays on the CPU. Throws Error
// (out_of_memory when the GPU cannot hold its share, invalid_argument for bad rules).
void place_weights(Model& m, const ModelOptions& opts, backend::Registry* registry, const Logger& log,
                   const std::function<void(float)>& check_cancel);

}  // namespace ikllm
