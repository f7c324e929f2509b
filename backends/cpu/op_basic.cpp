// Element-wise and row-wise CPU ops: embedding lookup, RMSNorm, add, SwiGLU, RoPE, KV store,
// row gather. Work is split by rows across the thread pool.
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu_ops.h"
#include "kernels/vec_kernels.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

namespace ikllm::cpu {

namespace {
// Splits [0, n) into about 4 chunks per thread.
template <typename F>
void for_rows(ThreadPool& pool, int64_t n, F&& f) {
    const int64_t chunks = std::min<int64_t>(n, (int64_t)pool.n_threads() * 4);
    if (chunks <= 0) return;
    pool.parallel_for(chunks, [&](int64_t c, int) {
        const int64_t r0 = n * c / chunks, r1 = n * (c + 1) / chunks;
        for (int64_t r = r0; r < r1; ++r) f(r);
    });
}
}  // namespace

void op_get_rows(const Op& op, ThreadPool& pool) {
    const Tensor& table = *op.src[0];
    const Tensor& dst = *op.dst;
    const quant::TypeTraits* tt = quant::find_type(table.type);
    if (!tt || !tt->dequant) fail(Status::unsupported, std::string("get_rows: cannot decode type of ") + table.name);
    const int64_t n_rows = table.ne[1];
    const int64_t ne0 = table.ne[0];
    const int64_t group = tt->interleave;
    for_rows(pool, op.n_i32, [&](int64_t t) {
        const int32_t id = op.i32[t];
        if (id < 0 || id >= n_rows) fail(Status::invalid_argument, "token id " + std::to_string(id) + " out of range");
        float* out = dst.row<float>(t);
        const uint8_t* base = static_cast<const uint8_t*>(table.data);
        if (group == 1) {
            tt->dequant(base + (size_t)id * table.nb[1], out, ne0);
        } else {
            std::vector<float> tmp((size_t)group * ne0);
            const int64_t g = id / group;
            tt->dequant(base + (size_t)g * group * table.nb[1], tmp.data(), ne0);
            std::memcpy(out, tmp.data() + (id % group) * ne0, ne0 * sizeof(float));
        }
    });
}

void op_rms_norm(const Op& op, ThreadPool& pool) {
    const Tensor& x = *op.src[0];
    const Tensor* g = op.src[1];
    const Tensor& y = *op.dst;
    const int64_t ne0 = x.ne[0];
    const float eps = op.f[0];
    const int64_t n = x.n_rows();
    const float* gain = g ? static_cast<const float*>(g->data) : nullptr;
    // The row kernel is the vector table's (this file is compiled for the baseline ISA, where the
    // double sums ran at ~1 element per cycle: 6 % of qwen3moe's pp512). Rows of contiguous
    // tensors (the usual case) are addressed without the divisions of the 3-D index.
    const auto rms = vec_kernels().rms_norm;
    const bool flat = x.nb[2] == x.nb[1] * (size_t)x.ne[1] && x.nb[3] == x.nb[2] * (size_t)x.ne[2] &&
                      y.nb[2] == y.nb[1] * (size_t)y.ne[1] && y.nb[3] == y.nb[2] * (size_t)y.ne[2];
    for_rows(pool, n, [&](int64_t r) {
        if (flat) return rms(x.row<float>(r), gain, y.row<float>(r), ne0, eps);
        const int64_t i1 = r % x.ne[1], i2 = (r / x.ne[1]) % x.ne[2], i3 = r / (x.ne[1] * x.ne[2]);
        rms(x.row<float>(i1, i2, i3), gain, y.row<float>(i1, i2, i3), ne0, eps);
    });
}

void op_add(const Op& op, ThreadPool& pool) {
    const Tensor& a = *op.src[0];
    const Tensor& b = *op.src[1];
    const Tensor& y = *op.dst;
    const int64_t ne0 = a.ne[0];
    const auto add = vec_kernels().add;
    for_rows(pool, a.n_rows(), [&](int64_t r) { add(a.row<float>(r), b.row<float>(r), y.row<float>(r), ne0); });
}

void op_swiglu(const Op& op, ThreadPool& pool) {
    const Tensor& g = *op.src[0];
    const Tensor& u = *op.src[1];
    const Tensor& y = *op.dst;
    const int64_t ne0 = g.ne[0];
    const VecKernels& vk = vec_kernels();
    for_rows(pool, g.n_rows(), [&](int64_t r) { vk.silu_mul(g.row<float>(r), u.row<float>(r), y.row<float>(r), ne0); });
}

void rope_cache(float* cos_out, float* sin_out, float pos, const RopeParams& p, bool apply_magnitude) {
    const int32_t half = p.n_dims / 2;
    const float theta_scale = std::pow(p.freq_base, -2.0f / (float)p.n_dims);
    float low = 0, high = 0;
    if (p.ext_factor != 0.0f) {
        auto corr_dim = [&](float beta) {
            return (float)p.n_dims * std::log((float)p.n_ctx_orig / (beta * 2.0f * (float)M_PI)) /
                   (2.0f * std::log(p.freq_base));
        };
        low = std::max(0.0f, std::floor(corr_dim(p.beta_fast)));
        high = std::min((float)p.n_dims - 1, std::ceil(corr_dim(p.beta_slow)));
    }
    float theta = pos;  // float recurrence as the reference computes it
    for (int32_t j = 0; j < half; ++j) {
        const float ff = p.freq_factors ? p.freq_factors[j] : 1.0f;
        const float theta_extrap = theta / ff;
        const float theta_interp = p.freq_scale * theta_extrap;
        float th = theta_interp;
        float m = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float y = ((float)j - low) / std::max(0.001f, high - low);
            const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, y));
            const float mix = ramp * p.ext_factor;
            th = theta_interp * (1 - mix) + theta_extrap * mix;
            m *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        if (!apply_magnitude) m = 1.0f;
        cos_out[j] = std::cos(th) * m;
        sin_out[j] = std::sin(th) * m;
        theta *= theta_scale;
    }
}

namespace {
void rope_apply(float* x, const float* c, const float* s, const RopeParams& p) {
    const int32_t half = p.n_dims / 2;
    if (p.mode == RopeMode::neox) {
        for (int32_t j = 0; j < half; ++j) {
            const float a = x[j], b = x[j + half];
            x[j] = a * c[j] - b * s[j];
            x[j + half] = a * s[j] + b * c[j];
        }
    } else {
        for (int32_t j = 0; j < half; ++j) {
            const float a = x[2 * j], b = x[2 * j + 1];
            x[2 * j] = a * c[j] - b * s[j];
            x[2 * j + 1] = a * s[j] + b * c[j];
        }
    }
}
}  // namespace

void rope_vector(float* x, int32_t pos, const RopeParams& p, bool apply_magnitude) {
    std::vector<float> c(p.n_dims / 2), s(p.n_dims / 2);
    rope_cache(c.data(), s.data(), (float)pos, p, apply_magnitude);
    rope_apply(x, c.data(), s.data(), p);
}

void op_rope(const Op& op, ThreadPool& pool) {
    const Tensor& x = *op.dst;  // [d, heads, tokens]
    const RopeParams& p = op.rope;
    pool.parallel_for(x.ne[2], [&](int64_t t, int) {
        std::vector<float> c(p.n_dims / 2), s(p.n_dims / 2);
        rope_cache(c.data(), s.data(), (float)op.i32[t], p, true);
        for (int64_t h = 0; h < x.ne[1]; ++h) rope_apply(x.row<float>(h, t), c.data(), s.data(), p);
    });
}

void op_kv_store(const Op& op, ThreadPool& pool) {
    const Tensor& src = *op.src[0];  // [width, tokens] f32 (rows may be strided views)
    const Tensor& cache = *op.dst;   // [width, cells]
    const int64_t width = cache.ne[0];
    for_rows(pool, op.n_i32, [&](int64_t t) {
        const float* in = src.row<float>(t);
        uint8_t* out = static_cast<uint8_t*>(cache.data) + (size_t)op.i32[t] * cache.nb[1];
        quant::kv_encode_row(cache.type, in, out, width);
    });
}

void op_gather_rows(const Op& op, ThreadPool& pool) {
    const Tensor& src = *op.src[0];
    const Tensor& dst = *op.dst;
    for (int64_t j = 0; j < op.n_i32; ++j)
        std::memcpy(dst.row<float>(j), src.row<float>(op.i32[j]), src.ne[0] * sizeof(float));
    (void)pool;
}

void op_copy(const Op& op, ThreadPool& pool) {
    const Tensor& src = *op.src[0];
    const Tensor& dst = *op.dst;
    const int64_t ne0 = src.ne[0];
    for_rows(pool, src.n_rows(), [&](int64_t r) {
        const int64_t i1 = r % src.ne[1], i2 = (r / src.ne[1]) % src.ne[2], i3 = r / (src.ne[1] * src.ne[2]);
        std::memcpy(dst.row<float>(i1, i2, i3), src.row<float>(i1, i2, i3), ne0 * sizeof(float));
    });
}

}  // namespace ikllm::cpu
