// Activation encodings used with the ternary weight types (docs: quant-formats.md §15):
// Q8_K64 (IQ1_BN, IQ2_BN) and Q8_K16 (IQ2_BN_R4). Four scale groups per row, codes by RNE.
#include <cmath>

#include "quant/grid_util.h"
#include "quant/ternary_formats.h"

namespace ikllm::quant {
namespace {

// Encodes a row whose element p belongs to group group_of(p) (0..3). Writes d[4] floats at
// `out`, codes at `codes`, and returns the per-group code sums in qsum.
template <class GroupOf>
void encode_groups(const float* x, int64_t n, GroupOf group_of, float d[4], int8_t* codes, int32_t qsum[4]) {
    float amax[4] = {0, 0, 0, 0};
    for (int64_t p = 0; p < n; ++p) amax[group_of(p)] = std::fmax(amax[group_of(p)], std::fabs(x[p]));
    float id[4];
    for (int i = 0; i < 4; ++i) {
        d[i] = amax[i] / 127.0f;
        id[i] = d[i] > 0 ? 1.0f / d[i] : 0.0f;
        qsum[i] = 0;
    }
    for (int64_t p = 0; p < n; ++p) {
        const int g = group_of(p);
        float r = std::nearbyint(x[p] * id[g]);
        r = std::fmin(127.0f, std::fmax(-128.0f, r));
        codes[p] = (int8_t)r;
        qsum[g] += codes[p];
    }
}

}  // namespace

size_t q8_k64_row_bytes(int64_t ne0) { return 32 + (size_t)ne0; }

void quantize_q8_k64_row(const float* x, uint8_t* out, int64_t ne0) {
    float d[4];
    int32_t qs[4];
    encode_groups(x, ne0, [](int64_t p) { return (int)((p % 16) / 4); }, d, (int8_t*)(out + 32), qs);
    for (int i = 0; i < 4; ++i) {
        wr_f32(out + 4 * i, d[i]);
        wr_f32(out + 16 + 4 * i, d[i] * (float)qs[i]);
    }
}

size_t q8_k16_row_bytes(int64_t ne0) { return 20 + (size_t)ne0; }

void quantize_q8_k16_row(const float* x, uint8_t* out, int64_t ne0) {
    float d[4];
    int32_t qs[4];
    encode_groups(x, ne0, [](int64_t p) { return (int)((p % 64) / 16); }, d, (int8_t*)(out + 20), qs);
    float s = 0;
    for (int i = 0; i < 4; ++i) {
        wr_f32(out + 4 * i, d[i]);
        s += d[i] * (float)qs[i];
    }
    wr_f32(out + 16, s);
}

}  // namespace ikllm::quant
