// Placeholder until this family has kernels on this ISA.
#include "kernels/matmul.h"
namespace ikllm::cpu {
KernelTable trellis_kernels_scalar() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
