// Activation decoders (see interleaved_act.h).
#include "quant/interleaved_act.h"

#include "quant/act_q8_k.h"
#include "quant/grid_util.h"

namespace ikllm::quant {

void decode_q8_k_row(const uint8_t* in, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 256; ++ib, in += kQ8KBlockBytes, y += 256) {
        const float d = rd_f32(in + kQ8KOffD);
        const int8_t* q = reinterpret_cast<const int8_t*>(in + kQ8KOffQs);
        for (int i = 0; i < 256; ++i) y[i] = d * (float)q[i];
    }
}

void decode_q8_k128_row(const uint8_t* in, float* y, int64_t ne0) {
    for (int64_t ib = 0; ib < ne0 / 128; ++ib, in += kQ8K128BlockBytes, y += 128) {
        const float d = rd_f32(in + kQ8K128OffD);
        const int8_t* q = reinterpret_cast<const int8_t*>(in + kQ8K128OffQs);
        for (int i = 0; i < 128; ++i) y[i] = d * (float)q[i];
    }
}

void decode_q8_k64_row(const uint8_t* in, float* y, int64_t ne0) {
    const int8_t* q = reinterpret_cast<const int8_t*>(in + 32);
    for (int64_t p = 0; p < ne0; ++p) y[p] = rd_f32(in + 4 * ((p % 16) / 4)) * (float)q[p];
}

void decode_q8_k16_row(const uint8_t* in, float* y, int64_t ne0) {
    const int8_t* q = reinterpret_cast<const int8_t*>(in + 20);
    for (int64_t p = 0; p < ne0; ++p) y[p] = rd_f32(in + 4 * ((p % 64) / 16)) * (float)q[p];
}

void decode_q8_kv_row(const uint8_t* in, float* y, int64_t ne0) {
    const float d = rd_f32(in);
    const int8_t* q = reinterpret_cast<const int8_t*>(in + 8);
    for (int64_t p = 0; p < ne0; ++p) y[p] = d * (float)q[p];
}

void decode_bf16_row(const uint8_t* in, float* y, int64_t ne0) {
    for (int64_t p = 0; p < ne0; ++p) y[p] = bf16_to_f32(rd_u16(in + 2 * p));
}

}  // namespace ikllm::quant
