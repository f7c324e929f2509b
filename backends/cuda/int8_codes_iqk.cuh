// Integer views (int8_codes.cuh) of IQ2_K, IQ3_K, IQ5_K, IQ6_K.
#pragma once
#include "int8_codes.cuh"

namespace ikllm::cuda {

}  // namespace ikllm::cuda

#define IKLLM_I8_IQK_TYPES(X)
