// Multi-head latent attention: the absorbed form the engine runs (per-head wk_b products, one
// shared latent+rope key row per token, values = the latent, then per-head wv_b products) equals
// the non-absorbed definition (architectures.md §8.3) computed naively in double, for f32 and
// f16 latent caches. Also checks RoPE/YaRN angles at long positions against the formula.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "cpu_ops.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"
#include "tensor_view.h"

using namespace ikllm;

namespace {

void run_mla(uint32_t cache_type, double tol) {
    const int64_t H = 4, dn = 32, dr = 32, dv = 24, rkv = 64, N = 7, T = 3;
    const float scale = 0.17f;
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto rnd = [&](size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = nd(rng) * 0.5f;
        return v;
    };
    std::vector<float> c = rnd(N * rkv), kr = rnd(N * dr), qn = rnd(T * H * dn), qr = rnd(T * H * dr);
    std::vector<float> wuk = rnd(H * dn * rkv), wuv = rnd(H * dv * rkv);  // [h][i][c], [h][j][c]
    const int32_t pos[T] = {4, 5, 6};

    // Cache as the engine stores it: one row [c | k_rope] per token, encoded in the cache type.
    std::vector<float> rows(N * (rkv + dr));
    for (int64_t j = 0; j < N; ++j) {
        std::copy(c.begin() + j * rkv, c.begin() + (j + 1) * rkv, rows.begin() + j * (rkv + dr));
        std::copy(kr.begin() + j * dr, kr.begin() + (j + 1) * dr, rows.begin() + j * (rkv + dr) + rkv);
    }
    const size_t rb = quant::kv_row_bytes(cache_type, rkv + dr);
    std::vector<uint8_t> cache(rb * N);
    for (int64_t j = 0; j < N; ++j) {
        quant::kv_encode_row(cache_type, rows.data() + j * (rkv + dr), cache.data() + j * rb, rkv + dr);
        quant::kv_decode_row(cache_type, cache.data() + j * rb, rows.data() + j * (rkv + dr), rkv + dr);
    }

    // Reference (non-absorbed, double) on the decoded cache contents.
    std::vector<double> ref(T * H * dv, 0.0);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h) {
            std::vector<double> s(N, -INFINITY);
            double mx = -INFINITY;
            for (int64_t j = 0; j <= pos[t] && j < N; ++j) {
                const float* cj = rows.data() + j * (rkv + dr);
                double dot = 0;
                for (int64_t i = 0; i < dn; ++i) {
                    double k = 0;
                    for (int64_t cc = 0; cc < rkv; ++cc) k += (double)wuk[(h * dn + i) * rkv + cc] * cj[cc];
                    dot += (double)qn[(t * H + h) * dn + i] * k;
                }
                for (int64_t i = 0; i < dr; ++i) dot += (double)qr[(t * H + h) * dr + i] * cj[rkv + i];
                s[j] = scale * dot;
                mx = std::max(mx, s[j]);
            }
            double sum = 0;
            for (int64_t j = 0; j < N; ++j) sum += s[j] == -INFINITY ? 0 : std::exp(s[j] - mx);
            for (int64_t j = 0; j < N; ++j) {
                if (s[j] == -INFINITY) continue;
                const double a = std::exp(s[j] - mx) / sum;
                const float* cj = rows.data() + j * (rkv + dr);
                for (int64_t jj = 0; jj < dv; ++jj) {
                    double v = 0;
                    for (int64_t cc = 0; cc < rkv; ++cc) v += (double)wuv[(h * dv + jj) * rkv + cc] * cj[cc];
                    ref[(t * H + h) * dv + jj] += a * v;
                }
            }
        }

    // Absorbed, through the engine's ops.
    std::vector<float> wkb(H * rkv * dn), wvb = wuv;  // wk_b[h][c][i] = W_UK[h][i][c]
    for (int64_t h = 0; h < H; ++h)
        for (int64_t cc = 0; cc < rkv; ++cc)
            for (int64_t i = 0; i < dn; ++i) wkb[(h * rkv + cc) * dn + i] = wuk[(h * dn + i) * rkv + cc];
    Tensor WKB = tensor_view(wkb.data(), quant::T_F32, dn, rkv, H, 4 * dn, 4 * dn * rkv);
    Tensor WVB = tensor_view(wvb.data(), quant::T_F32, rkv, dv, H, 4 * rkv, 4 * rkv * dv);
    std::vector<float> qf(T * H * (rkv + dr));
    const size_t qnb1 = 4 * (rkv + dr), qnb2 = qnb1 * H;
    Tensor QN = tensor_view(qn.data(), quant::T_F32, dn, H, T, 4 * dn, 4 * dn * H);
    Tensor QT = tensor_view(qf.data(), quant::T_F32, rkv, H, T, qnb1, qnb2);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
            std::copy(qr.begin() + (t * H + h) * dr, qr.begin() + (t * H + h + 1) * dr,
                      qf.begin() + (t * H + h) * (rkv + dr) + rkv);
    cpu::ThreadPool pool(2);
    cpu::Scratch scratch;
    Op m1;
    m1.kind = OpKind::mul_mat_heads;
    m1.src[0] = &WKB;
    m1.src[1] = &QN;
    m1.dst = &QT;
    cpu::op_mul_mat_heads(m1, pool, scratch);

    Tensor Q = tensor_view(qf.data(), quant::T_F32, rkv + dr, H, T, qnb1, qnb2);
    Tensor K = tensor_view(cache.data(), cache_type, rkv + dr, 1, N, rb, rb);
    Tensor V = K;
    V.ne[0] = rkv;
    std::vector<float> o((size_t)(rkv * H * T));
    Tensor O = tensor_view(o.data(), quant::T_F32, rkv * H, T, 1, 4 * rkv * H, 4 * rkv * H * T);
    std::vector<int32_t> cell_pos(N), seq_ids(T, 0);
    for (int64_t j = 0; j < N; ++j) cell_pos[j] = (int32_t)j;
    std::vector<uint64_t> seqs(N, 1);
    Op at;
    at.kind = OpKind::attention;
    at.src[0] = &Q;
    at.src[1] = &K;
    at.src[2] = &V;
    at.dst = &O;
    at.i32 = pos;
    at.n_i32 = T;
    at.seq_ids = seq_ids.data();
    at.kv.cell_pos = cell_pos.data();
    at.kv.cell_seqs = seqs.data();
    at.kv.seq_words = 1;
    at.kv.n_cells = (int32_t)N;
    at.f[0] = scale;
    cpu::op_attention(at, pool, scratch);

    Tensor OL = tensor_view(o.data(), quant::T_F32, rkv, H, T, 4 * rkv, 4 * rkv * H);
    std::vector<float> out((size_t)(dv * H * T));
    Tensor OUT = tensor_view(out.data(), quant::T_F32, dv, H, T, 4 * dv, 4 * dv * H);
    Op m2;
    m2.kind = OpKind::mul_mat_heads;
    m2.src[0] = &WVB;
    m2.src[1] = &OL;
    m2.dst = &OUT;
    cpu::op_mul_mat_heads(m2, pool, scratch);

    double num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(num / den), tol) << quant::kv_type_name(cache_type);
}

TEST(MlaAttention, AbsorbedEqualsNonAbsorbed) {
    run_mla(quant::T_F32, 1e-5);
    run_mla(quant::T_F16, 1e-5);   // same cache contents on both sides: only f32 rounding differs
    run_mla(quant::T_BF16, 1e-5);
    run_mla(quant::T_Q8_0, 1e-5);
}

TEST(Rope, YarnAnglesAtLongPositions) {
    // DeepSeek-V3-like YaRN: factor 40, original context 4096, d_rope 64, base 10000.
    RopeParams p;
    p.mode = RopeMode::norm;
    p.n_dims = 64;
    p.freq_base = 10000.f;
    p.freq_scale = 1.f / 40.f;
    p.ext_factor = 1.f;
    p.n_ctx_orig = 4096;
    p.attn_factor = 1.f / (1.f + 0.1f * std::log(40.f));  // rope_attn_factor: magnitude cancels to 1
    std::vector<float> c(32), s(32);
    for (int32_t pos : {0, 1, 4095, 4096, 65535, 163839}) {
        cpu::rope_cache(c.data(), s.data(), (float)pos, p, true);
        // The formula of architectures.md §3.3 (float recurrence of theta), evaluated independently.
        const double lo = std::max(0.0, std::floor(64 * std::log(4096 / (32 * 2 * M_PI)) / (2 * std::log(10000.0))));
        const double hi = std::min(63.0, std::ceil(64 * std::log(4096 / (1 * 2 * M_PI)) / (2 * std::log(10000.0))));
        float theta = (float)pos;
        const float ts = std::pow(10000.f, -2.f / 64.f);
        for (int j = 0; j < 32; ++j) {
            const double y = (j - lo) / std::max(0.001, hi - lo);
            const double ramp = 1 - std::min(1.0, std::max(0.0, y));
            const double th = theta / 40.0 * (1 - ramp) + theta * ramp;
            const double mag = std::hypot(c[j], s[j]);
            EXPECT_NEAR(mag, 1.0, 1e-5) << pos << " " << j;
            // compare angles via the rotation of a unit vector (robust to 2*pi wrap)
            EXPECT_NEAR(c[j] / mag, std::cos(th), 2e-3 * (1 + pos / 4096.0)) << pos << " " << j;
            EXPECT_NEAR(s[j] / mag, std::sin(th), 2e-3 * (1 + pos / 4096.0)) << pos << " " << j;
            theta *= ts;
        }
    }
}

}  // namespace
