// A Tensor header over caller-owned data, for op tests (3 dims; f32 rows of 4-byte elements, other
// types 2-byte elements: f16 / bf16, or a row-bytes-only type such as q8_0).
#pragma once
#include "ops.h"
#include "quant/type_traits.h"

inline ikllm::Tensor tensor_view(void* data, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1,
                                 size_t nb2) {
    ikllm::Tensor t;
    t.type = type;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.nb[0] = type == ikllm::quant::T_F32 ? 4 : 2;
    t.nb[1] = nb1;
    t.nb[2] = nb2;
    t.nb[3] = nb2 * ne2;
    t.data = data;
    t.name = "t";
    return t;
}
