// AVX2 kernels for the 32-weight block types against Q8_2_X4 activations (legacy_avx2_kernels.h).
#include "kernels/legacy_avx2_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
namespace ikllm::cpu {

KernelTable legacy_kernels_avx2() { return legacy_avx2_table(); }

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable legacy_kernels_avx2() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
