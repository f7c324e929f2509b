// Placeholder until this family has kernels on this ISA.
#include "kernels/matmul.h"
namespace ikllm::cpu {
KernelTable interleaved_kernels_avx512() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
