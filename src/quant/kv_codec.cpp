#include "quant/kv_codec.h"

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/type_traits.h"

namespace ikllm::quant {

uint32_t kv_type_from_name(const std::string& n, bool* ok) {
    *ok = true;
    if (n == "f32") return T_F32;
    if (n == "f16") return T_F16;
    if (n == "bf16") return T_BF16;
    if (n == "q8_0") return T_Q8_0;
    *ok = false;
    return 0;
}

const char* kv_type_name(uint32_t t) {
    switch (t) {
        case T_F32: return "f32";
        case T_F16: return "f16";
        case T_BF16: return "bf16";
        case T_Q8_0: return "q8_0";
        default: return "?";
    }
}

size_t kv_row_bytes(uint32_t t, int64_t n) {
    switch (t) {
        case T_F32: return (size_t)n * 4;
        case T_F16:
        case T_BF16: return (size_t)n * 2;
        case T_Q8_0: return (size_t)(n / 32) * 34;
        default: return 0;
    }
}

bool kv_row_ok(uint32_t t, int64_t n) { return t != T_Q8_0 || n % 32 == 0; }

void kv_encode_row(uint32_t t, const float* x, void* dst, int64_t n) {
    switch (t) {
        case T_F32: std::memcpy(dst, x, (size_t)n * 4); break;
        case T_F16: {
            uint16_t* o = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) o[i] = f32_to_f16(x[i]);
            break;
        }
        case T_BF16: {
            uint16_t* o = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) o[i] = f32_to_bf16(x[i]);
            break;
        }
        case T_Q8_0: {
            // Round-to-nearest-even codes against d = amax/127 (as the reference's runtime path).
            uint8_t* o = static_cast<uint8_t*>(dst);
            for (int64_t b = 0; b < n / 32; ++b, o += 34) {
                float amax = 0;
                for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[32 * b + i]));
                const float d = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
                const uint16_t dh = f32_to_f16(d);
                std::memcpy(o, &dh, 2);
                for (int i = 0; i < 32; ++i) o[2 + i] = (uint8_t)(int8_t)std::nearbyint(x[32 * b + i] * id);
            }
            break;
        }
        default: break;
    }
}

void kv_decode_row(uint32_t t, const void* src, float* y, int64_t n) {
    switch (t) {
        case T_F32: std::memcpy(y, src, (size_t)n * 4); break;
        case T_F16: {
            const uint16_t* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(h[i]);
            break;
        }
        case T_BF16: {
            const uint16_t* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(h[i]);
            break;
        }
        case T_Q8_0: {
            const uint8_t* p = static_cast<const uint8_t*>(src);
            for (int64_t b = 0; b < n / 32; ++b, p += 34) {
                uint16_t dh;
                std::memcpy(&dh, p, 2);
                const float d = f16_to_f32(dh);
                for (int i = 0; i < 32; ++i) y[32 * b + i] = d * (float)(int8_t)p[2 + i];
            }
            break;
        }
        default: break;
    }
}

}  // namespace ikllm::quant
