// Helpers shared by the kernel and repack tests: run a matmul kernel over a row range and check
// that it leaves the other rows alone; decode a weight tensor's rows (any interleave).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/matmul.h"
#include "model/model.h"
#include "quant/type_traits.h"

namespace ikllm::test {

struct KernelCase {
    int64_t ne0, rows, r0, nt;
};

// Runs kernel k over rows [r0, rows) of w and returns the outputs (stride rows + 5; rows outside
// the range must stay untouched, checked here).
inline std::vector<float> run_kernel_rows(const cpu::MatmulKernel& k, const std::vector<uint8_t>& w,
                                          const std::vector<uint8_t>& act, const KernelCase& c) {
    const quant::TypeTraits* tt = quant::find_type(k.weight_type);
    const int64_t ys = c.rows + 5;
    std::vector<float> y((size_t)(c.nt * ys), -7.0f);
    k.run(w.data(), quant::row_bytes(*tt, c.ne0), c.ne0, c.r0, c.rows, act.data(), k.act->row_bytes(c.ne0), c.nt, y.data(), ys);
    for (int64_t t = 0; t < c.nt; ++t)
        for (int64_t r = 0; r < ys; ++r)
            if (r < c.r0 || r >= c.rows) {
                EXPECT_EQ(y[(size_t)(t * ys + r)], -7.0f) << "row " << r << " written";
            }
    return y;
}

// Every row of a weight tensor as floats (row groups of interleaved types decoded together).
inline std::vector<float> dequant_tensor_rows(const Tensor& t) {
    const quant::TypeTraits& tt = *quant::find_type(t.type);
    std::vector<float> v((size_t)t.n_elements());
    for (int64_t r = 0; r < t.n_rows(); r += tt.interleave)
        tt.dequant(static_cast<const uint8_t*>(t.data) + (size_t)r * t.nb[1], v.data() + r * t.ne[0], t.ne[0]);
    return v;
}

}  // namespace ikllm::test
