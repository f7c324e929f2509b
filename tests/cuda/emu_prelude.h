// Included first (-include) by every source of the emulated CUDA backend, libikllm-cuda-emu.so:
// the backend's own sources (backends/cuda/*.cu) built by the host compiler, their kernels run as
// fibers on the host (emu_cuda.h, emu_wmma.h) and the CUDA runtime calls answered by
// emu_runtime.cpp. Tests point IKLLM_CUDA_PLUGIN at it to run whole models through the CUDA
// backend's code -- executor, fusions, graphs, every kernel -- on machines without a GPU.
#pragma once
// The device forms of the helpers (backends/cuda/device_branch.cuh), on the intrinsics below.
#define IKLLM_EMU_DEVICE_BRANCHES 1
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>  // (nvcc makes the math functions visible without it)

#include "emu_cuda.h"
#include "emu_intrinsics.h"
#include "emu_wmma.h"
