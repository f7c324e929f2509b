// Integer views (int8_codes.cuh) of IQ4_KS, IQ5_KS, IQ4_KSS, IQ2_KS, IQ3_KS, IQ2_KL.
#pragma once
#include "int8_codes.cuh"

namespace ikllm::cuda {

}  // namespace ikllm::cuda

#define IKLLM_I8_KS_TYPES(X)
