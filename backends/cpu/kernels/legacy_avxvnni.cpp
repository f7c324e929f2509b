// The AVX2 kernels of the 32-weight block types (legacy_avx2_kernels.h) compiled with AVX-VNNI
// (Intel Alder Lake and later, AMD Zen 5): prompt batches multiply with dpbusd (sym_lanes_avx2.h).
// Registered as AVX2 kernels ahead of the plain ones where the CPU has AVX-VNNI (matmul.cpp).
#include "kernels/legacy_avx2_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
namespace ikllm::cpu {

KernelTable legacy_kernels_avxvnni() { return legacy_avx2_table(); }

}  // namespace ikllm::cpu

#else
namespace ikllm::cpu {
KernelTable legacy_kernels_avxvnni() { return {nullptr, 0}; }
}  // namespace ikllm::cpu
#endif
