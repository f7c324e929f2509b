// Places a loaded model's weights on devices (model options n_gpu_layers / tensor_placement,
// docs/placement.md) and uploads those that go to a GPU.
#pragma once
#include <functional>

#include "model/model.h"

namespace ikllm {
namespace backend { class Registry; }

// Fills m.devices / device_names / device_weight_bytes / placement_report / layer_attn_device.
// With neither option set (or no registry) everything stays on the CPU. Throws Error
// (out_of_memory when the GPU cannot hold its share, invalid_argument for bad rules).
void place_weights(Model& m, const ModelOptions& opts, backend::Registry* registry, const Logger& log,
                   const std::function<void(float)>& check_cancel);

}  // namespace ikllm
