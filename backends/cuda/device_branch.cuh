// IKLLM_DEVICE_BRANCH: 1 where the device forms of the kernels' helpers compile -- nvcc's device
// pass, and the host emulation of this backend (tests/cuda/emu_prelude.h defines
// IKLLM_EMU_DEVICE_BRANCHES and host versions of the intrinsics those forms use: __byte_perm,
// __dp4a, __dp2a_lo/hi, ...), so the device forms run in CI too. 0 elsewhere: the host twins,
// which the host tests compare with the CPU backend.
#pragma once

#if defined(__CUDA_ARCH__) || defined(IKLLM_EMU_DEVICE_BRANCHES)
#define IKLLM_DEVICE_BRANCH 1
#else
#define IKLLM_DEVICE_BRANCH 0
#endif
