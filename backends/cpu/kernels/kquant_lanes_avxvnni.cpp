// Q4_K / Q5_K prompt batches, eight tokens per register, compiled with AVX2 + AVX-VNNI (one dpbusd per step)
// (kquant_lanes.h; the kernel and its entry points: kquant_lanes_avx2.h).
#include "kernels/kquant_lanes.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
#include "kernels/kquant_lanes_avx2.h"
#endif
