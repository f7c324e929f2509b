// Placeholder until this family has kernels on this ISA.
#include "kernels/matmul.h"
namespace ikllm::cpu {
KernelTable iqk_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
