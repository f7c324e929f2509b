// Scale searches for the K-quant and ik K/KS quantizers (see kquant_search.h).
#include "quant/kquant_search.h"
#include <algorithm>
#include <cmath>
#include <limits>
#include "core/fp16.h"
#include "quant/round_int.h"

namespace ikllm::quant::search {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

inline int iround(float v) { return round_int(v); }

// Weighted sums of a code assignment: sxl = sum w x lv, sll = sum w lv^2.
inline void lsq_sums(const float* x, const float* w, const float* lv, int n, double* sxl, double* sll) {
    double a = 0, b = 0;
    for (int j = 0; j < n; ++j) {
        a += (double)w[j] * x[j] * lv[j];
        b += (double)w[j] * lv[j] * lv[j];
    }
    *sxl = a;
    *sll = b;
}

inline double wsq(const float* x, const float* w, int n) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += (double)w[j] * x[j] * x[j];
    return s;
}

// Nearest representable integer scale (odd-only formats step by 2).
inline int allowed_scale(const NlFormat& f, float t) {
    int v = f.odd ? 2 * (int)std::floor((t - 1.0f) * 0.5f + 0.5f) + 1 : iround(t);
    return std::clamp(v, f.lmin, f.lmax);
}
}  // namespace

float round_fp16(float v) { return f16_to_f32(f32_to_f16(v)); }

void make_weights(const float* x, const float* imatrix, int n, float* w) {
    double s2 = 0;
    for (int j = 0; j < n; ++j) s2 += (double)x[j] * x[j];
    const float sigma2 = (float)(s2 / n);
    const float rms = std::sqrt(sigma2);
    for (int j = 0; j < n; ++j) {
        if (imatrix) w[j] = std::max(imatrix[j], 0.0f) * std::sqrt(sigma2 + x[j] * x[j]);
        else w[j] = rms + std::fabs(x[j]);
        if (!(w[j] > 0)) w[j] = 1e-30f;  // keep the least-squares systems non-singular
    }
}

void Levels::set(const float* values, int count) {
    n = count;
    for (int i = 0; i < n; ++i) v[i] = values[i];
    float gap = INFINITY;
    for (int i = 0; i + 1 < n; ++i) {
        mid[i] = 0.5f * (v[i] + v[i + 1]);
        gap = std::min(gap, v[i + 1] - v[i]);
    }
    mid[n - 1] = INFINITY;  // nearest() steps past the last level never
    // grid over [v0 - gap, v_last + gap]; for every table used here the cells are narrower than
    // the smallest gap (span <= 260, gap >= 1), so a cell contains at most one midpoint
    lo = v[0] - (n > 1 ? gap : 1.0f);
    const float span = v[n - 1] - lo + (n > 1 ? gap : 1.0f);
    cell_scale = (float)kCells / span;
    for (int c = 0; c <= kCells; ++c) {
        const float t = lo + (float)c / cell_scale;  // cell start
        int i = 0;
        while (i + 1 < n && t > mid[i]) ++i;
        cell[c] = (uint8_t)i;
    }
}
void Levels::set_i8(const int8_t* values, int count, int offset) {
    float tmp[64];
    for (int i = 0; i < count; ++i) tmp[i] = (float)(values[i] + offset);
    set(tmp, count);
}

float pick_nearest(const void* ctx, const float* x, const float* w, int n, int set, float scale, uint8_t* q,
                   float* lv) {
    const Levels& L = ((const Levels*)ctx)[set];
    float err = 0;
    if (scale == 0.0f) {
        const int z = L.nearest(0.0f);
        for (int j = 0; j < n; ++j) {
            q[j] = (uint8_t)z;
            lv[j] = L.v[z];
            err += w[j] * x[j] * x[j];
        }
        return err;
    }
    const float inv = 1.0f / scale;
    for (int j = 0; j < n; ++j) {
        const int k = L.nearest(x[j] * inv);
        q[j] = (uint8_t)k;
        lv[j] = L.v[k];
        const float e = x[j] - scale * L.v[k];
        err += w[j] * e * e;
    }
    return err;
}

namespace {

// Best float scale of one sub-block for one value set: candidate scales map the largest weight
// onto either extreme level; each is refined by least squares (fit_iters rounds).
float fit_sub(const NlFormat& f, const float* x, const float* w, int n, int set, float* best_scale) {
    float amax = 0, xm = 0;
    for (int j = 0; j < n; ++j)
        if (std::fabs(x[j]) > amax) { amax = std::fabs(x[j]); xm = x[j]; }
    *best_scale = 0;
    const double sxx = wsq(x, w, n);
    if (amax == 0) return 0;
    float best = (float)sxx;
    uint8_t q[64];
    float lv[64];
    const float ends[2] = {f.lo[set], f.hi[set]};
    for (float L : ends) {
        if (L == 0) continue;
        for (int k = -f.ntry; k <= f.ntry; ++k) {
            float s = xm / L * (1.0f + f.rel_range * (float)k / (float)std::max(f.ntry, 1));
            for (int it = 0; it < f.fit_iters; ++it) {
                f.pick(f.ctx, x, w, n, set, s, q, lv);
                double sxl, sll;
                lsq_sums(x, w, lv, n, &sxl, &sll);
                if (sll <= 0) break;
                const float s1 = (float)(sxl / sll);
                const float e = (float)(sxx - sxl * sxl / sll);
                if (e < best) { best = e; *best_scale = s1; }
                s = s1;
            }
        }
    }
    return best;
}

struct SubChoice {
    int ls;
    int set;
    float err;
};

// Best integer scale (around the rounded value) and value set of sub-block i for group scale d.
SubChoice choose_sub(const NlFormat& f, const float* x, const float* w, float s, float d, uint8_t* q, float* lv) {
    SubChoice best{0, 0, kInf};
    // the two representable integer scales around s/d
    const float t = s / d;
    const int step = f.odd ? 2 : 1;
    int a = f.odd ? 2 * (int)std::floor((t - 1.0f) * 0.5f) + 1 : (int)std::floor(t);
    a = std::clamp(a, f.lmin, f.lmax);
    if (a + step > f.lmax) a = f.lmax - step;
    for (int ls = a; ls <= a + step; ls += step) {
        for (int set = 0; set < f.nsets; ++set) {
            const float e = f.pick(f.ctx, x, w, f.sub, set, d * (float)ls, q, lv);
            if (e < best.err) best = {ls, set, e};
        }
    }
    return best;
}

// Total error of the group for scale d (choices written to ls/set); stops early above `limit`.
float eval_group(const NlFormat& f, const float* x, const float* w, int nsub, const float* s, float d,
                 int* ls, uint8_t* set, float limit) {
    uint8_t q[64];
    float lv[64];
    float total = 0;
    for (int i = 0; i < nsub; ++i) {
        const SubChoice c = choose_sub(f, x + i * f.sub, w + i * f.sub, s[i], d, q, lv);
        ls[i] = c.ls;
        set[i] = (uint8_t)c.set;
        total += c.err;
        if (total > limit) return kInf;
    }
    return total;
}

float store_round(const NlFormat& f, float d) { return f.d_fp16 ? round_fp16(d) : d; }

}  // namespace

void quantize_nl_group(const NlFormat& f, const float* x, const float* w, int n, NlResult& r) {
    const int nsub = n / f.sub;
    r.ls.assign(nsub, f.odd ? 1 : 0);
    r.set.assign(nsub, 0);
    r.q.assign(n, 0);
    std::vector<float> s(nsub, 0.0f);
    std::vector<int> ls(nsub);
    std::vector<uint8_t> set(nsub);

    // 1. unconstrained float scale of every sub-block (best value set)
    float smax = 0;
    for (int i = 0; i < nsub; ++i) {
        float best = kInf;
        for (int k = 0; k < f.nsets; ++k) {
            float sc;
            const float e = fit_sub(f, x + i * f.sub, w + i * f.sub, f.sub, k, &sc);
            if (e < best) { best = e; s[i] = sc; }
        }
        if (std::fabs(s[i]) > std::fabs(smax)) smax = s[i];
    }

    float best_total = kInf, best_d = 0;
    if (smax != 0) {
        // 2. candidate group scales: the largest sub-block scale lands on (or near) an end of
        //    the integer range; keep the one with least total error.
        const int ends[2] = {f.lmin, f.lmax};
        for (int L : ends) {
            for (int j = 0; j < f.ndtry; ++j) {
                const float m = 1.0f + 0.02f * (float)(j - f.ndtry / 3);
                const float d = store_round(f, smax / (float)L * m);
                if (!(std::fabs(d) > 0) || !std::isfinite(d)) continue;
                const float t = eval_group(f, x, w, nsub, s.data(), d, ls.data(), set.data(), best_total);
                if (t < best_total) {
                    best_total = t;
                    best_d = d;
                    r.ls = ls;
                    r.set = set;
                }
            }
        }
        // 3. least-squares refinement of d for the chosen integer scales and codes
        uint8_t q[64];
        float lv[64];
        for (int it = 0; it < 3 && best_d != 0; ++it) {
            double num = 0, den = 0;
            for (int i = 0; i < nsub; ++i) {
                const float* xb = x + i * f.sub;
                const float* wb = w + i * f.sub;
                f.pick(f.ctx, xb, wb, f.sub, r.set[i], best_d * (float)r.ls[i], q, lv);
                for (int j = 0; j < f.sub; ++j) {
                    const double l = (double)r.ls[i] * lv[j];
                    num += wb[j] * xb[j] * l;
                    den += wb[j] * l * l;
                }
            }
            if (den <= 0) break;
            // re-evaluate with the refined scale; stop if it does not help
            const float d = store_round(f, (float)(num / den));
            if (d == best_d || !(std::fabs(d) > 0) || !std::isfinite(d)) break;
            std::vector<float> s2(nsub);
            for (int i = 0; i < nsub; ++i) s2[i] = best_d * (float)r.ls[i];
            const float t = eval_group(f, x, w, nsub, s2.data(), d, ls.data(), set.data(), best_total);
            if (!(t < best_total)) break;
            best_total = t;
            best_d = d;
            r.ls = ls;
            r.set = set;
        }
    }
    r.d = best_d;
    // 4. final codes
    uint8_t q[64];
    float lv[64];
    float total = 0;
    for (int i = 0; i < nsub; ++i) {
        if (best_d == 0) r.ls[i] = f.odd ? 1 : 0;
        total += f.pick(f.ctx, x + i * f.sub, w + i * f.sub, f.sub, r.set[i], best_d * (float)r.ls[i], q, lv);
        std::copy(q, q + f.sub, r.q.begin() + i * f.sub);
    }
    r.err = total;
}

// ---- asymmetric (scale + min) formats ----

float fit_asym(const float* x, const float* w, int n, int nmax, float* a_out, float* m_out) {
    float xmin = x[0], xmax = x[0];
    for (int j = 1; j < n; ++j) {
        xmin = std::min(xmin, x[j]);
        xmax = std::max(xmax, x[j]);
    }
    if (xmin > 0) xmin = 0;
    if (xmax <= xmin) {
        *a_out = 0;
        *m_out = -xmin;
        return 0;
    }
    double sw = 0, sx = 0;
    for (int j = 0; j < n; ++j) { sw += w[j]; sx += (double)w[j] * x[j]; }
    float best_err = kInf, best_a = 0, best_b = xmin;
    uint8_t q[32];
    auto solve = [&](float& a, float& b) -> float {
        double sq = 0, sqq = 0, sqx = 0;
        for (int j = 0; j < n; ++j) {
            sq += (double)w[j] * q[j];
            sqq += (double)w[j] * q[j] * q[j];
            sqx += (double)w[j] * q[j] * x[j];
        }
        const double det = sw * sqq - sq * sq;
        if (det > 0) {
            a = (float)((sw * sqx - sq * sx) / det);
            b = (float)((sqq * sx - sq * sqx) / det);
        } else {
            a = 0;
            b = (float)(sx / sw);
        }
        if (b > 0) {  // the stored min is non-negative
            b = 0;
            a = sqq > 0 ? (float)(sqx / sqq) : 0.0f;
        }
        if (a < 0) a = 0;
        float e = 0;
        for (int j = 0; j < n; ++j) {
            const float d = a * q[j] + b - x[j];
            e += w[j] * d * d;
        }
        return e;
    };
    // candidate inverse scales map the range onto nmax-1 .. nmax+1 levels
    constexpr int nis = 10, nref = 1;
    for (int is = 0; is <= nis; ++is) {
        const float iscale = ((float)nmax - 1.0f + 2.0f * (float)is / (float)nis) / (xmax - xmin);
        for (int j = 0; j < n; ++j) q[j] = (uint8_t)std::clamp(iround(iscale * (x[j] - xmin)), 0, nmax);
        float a, b;
        float e = solve(a, b);
        for (int it = 0; it < nref && a > 0; ++it) {  // re-pick codes for the fitted line
            if (e < best_err) { best_err = e; best_a = a; best_b = b; }
            for (int j = 0; j < n; ++j) q[j] = (uint8_t)std::clamp(iround((x[j] - b) / a), 0, nmax);
            e = solve(a, b);
        }
        if (e < best_err) { best_err = e; best_a = a; best_b = b; }
    }
    *a_out = best_a;
    *m_out = -best_b;
    return best_err;
}

namespace {
// Error of one sub-block for fixed A = d*sc, M = dmin*mc (codes written to q).
inline float asym_codes(const float* x, const float* w, int n, int nmax, float A, float M, uint8_t* q) {
    float e = 0;
    const float inv = A > 0 ? 1.0f / A : 0.0f;
    for (int j = 0; j < n; ++j) {
        const int k = A > 0 ? std::clamp(iround((x[j] + M) * inv), 0, nmax) : 0;
        q[j] = (uint8_t)k;
        const float r = A * (float)k - M - x[j];
        e += w[j] * r * r;
    }
    return e;
}

// Total error for (d, dmin); each sub-block takes the best integer (scale, min) near the rounded
// pair: the 3x3 neighbourhood when `full`, else the rounded pair and single steps.
float asym_eval(const float* x, const float* w, int nsub, int sub, int nmax, int scmax, const float* a, const float* m,
                float d, float dmin, int* sc, int* mc, float limit, bool full) {
    uint8_t q[32];
    float total = 0;
    for (int i = 0; i < nsub; ++i) {
        const float* xb = x + i * sub;
        const float* wb = w + i * sub;
        const int s0 = d > 0 ? std::clamp(iround(a[i] / d), 0, scmax) : 0;
        const int m0 = dmin > 0 ? std::clamp(iround(m[i] / dmin), 0, scmax) : 0;
        // the rounded pair, then one step of the scale, then one step of the min
        float best = asym_codes(xb, wb, sub, nmax, d * (float)s0, dmin * (float)m0, q);
        sc[i] = s0;
        mc[i] = m0;
        if (full) {
            for (int s = s0 - 1; s <= s0 + 1; ++s)
                for (int mm = m0 - 1; mm <= m0 + 1; ++mm) {
                    if ((s == s0 && mm == m0) || s < 0 || s > scmax || mm < 0 || mm > scmax) continue;
                    if ((d == 0 && s > 0) || (dmin == 0 && mm > 0)) continue;
                    const float e = asym_codes(xb, wb, sub, nmax, d * (float)s, dmin * (float)mm, q);
                    if (e < best) { best = e; sc[i] = s; mc[i] = mm; }
                }
        } else {
            for (int s : {s0 - 1, s0 + 1}) {
                if (s < 0 || s > scmax || (d == 0 && s > 0)) continue;
                const float e = asym_codes(xb, wb, sub, nmax, d * (float)s, dmin * (float)m0, q);
                if (e < best) { best = e; sc[i] = s; }
            }
            for (int mm : {m0 - 1, m0 + 1}) {
                if (mm < 0 || mm > scmax || (dmin == 0 && mm > 0)) continue;
                const float e = asym_codes(xb, wb, sub, nmax, d * (float)sc[i], dmin * (float)mm, q);
                if (e < best) { best = e; mc[i] = mm; }
            }
        }
        total += best;
        if (total > limit) return kInf;
    }
    return total;
}
}  // namespace

void quantize_asym_block(const float* x, const float* w, int nsub, int nmax, int scmax, AsymResult& r) {
    const int sub = 256 / nsub;
    float a[16], m[16];
    float amax = 0, mmax = 0;
    for (int i = 0; i < nsub; ++i) {
        fit_asym(x + i * sub, w + i * sub, sub, nmax, &a[i], &m[i]);
        amax = std::max(amax, a[i]);
        mmax = std::max(mmax, m[i]);
    }
    float best = kInf;
    int sc[16], mc[16];
    static const float fa[] = {1.0f, 0.98f, 1.02f};
    static const float fm[] = {1.0f, 0.98f, 1.02f};
    constexpr int nfa = 3, nfm = 3;  // a wider grid costs time and gains < 0.2% RMSE
    for (int ia = 0; ia < nfa; ++ia) {
        const float ga = fa[ia];
        for (int im = 0; im < nfm; ++im) {
            const float gm = fm[im];
            const float d = round_fp16(amax / (float)scmax * ga);
            const float dmin = round_fp16(mmax / (float)scmax * gm);
            const float t = asym_eval(x, w, nsub, sub, nmax, scmax, a, m, d, dmin, sc, mc, best, false);
            if (t < best) {
                best = t;
                r.d = d;
                r.dmin = dmin;
                std::copy(sc, sc + nsub, r.sc);
                std::copy(mc, mc + nsub, r.mc);
            }
            if (mmax == 0) break;
        }
        if (amax == 0) break;
    }
    // the chosen (d, dmin) with the wider integer search
    if (best < kInf) {
        const float t = asym_eval(x, w, nsub, sub, nmax, scmax, a, m, r.d, r.dmin, sc, mc, kInf, true);
        if (t <= best) {
            best = t;
            std::copy(sc, sc + nsub, r.sc);
            std::copy(mc, mc + nsub, r.mc);
        }
    }
    // least-squares refinement of (d, dmin) for the chosen integer scales and codes
    for (int it = 0; it < 3; ++it) {
        double suu = 0, suv = 0, svv = 0, sux = 0, svx = 0;
        for (int i = 0; i < nsub; ++i) {
            uint8_t q[32];
            asym_codes(x + i * sub, w + i * sub, sub, nmax, r.d * (float)r.sc[i], r.dmin * (float)r.mc[i], q);
            for (int j = 0; j < sub; ++j) {
                const double ww = w[i * sub + j], xx = x[i * sub + j];
                const double u = (double)r.sc[i] * q[j], v = -(double)r.mc[i];
                suu += ww * u * u; suv += ww * u * v; svv += ww * v * v;
                sux += ww * u * xx; svx += ww * v * xx;
            }
        }
        const double det = suu * svv - suv * suv;
        float d, dmin;
        if (det > 0) {
            d = (float)((sux * svv - svx * suv) / det);
            dmin = (float)((svx * suu - sux * suv) / det);
        } else if (suu > 0) {
            d = (float)(sux / suu);
            dmin = r.dmin;
        } else {
            break;
        }
        d = round_fp16(std::max(d, 0.0f));
        dmin = round_fp16(std::max(dmin, 0.0f));
        if (d == r.d && dmin == r.dmin) break;
        // re-derive the integer scales around the current choice under the new (d, dmin)
        float a2[16], m2[16];
        for (int i = 0; i < nsub; ++i) { a2[i] = r.d * (float)r.sc[i]; m2[i] = r.dmin * (float)r.mc[i]; }
        const float t = asym_eval(x, w, nsub, sub, nmax, scmax, a2, m2, d, dmin, sc, mc, best, true);
        if (!(t < best)) break;
        best = t;
        r.d = d;
        r.dmin = dmin;
        std::copy(sc, sc + nsub, r.sc);
        std::copy(mc, mc + nsub, r.mc);
    }
    for (int i = 0; i < nsub; ++i)
        asym_codes(x + i * sub, w + i * sub, sub, nmax, r.d * (float)r.sc[i], r.dmin * (float)r.mc[i], r.q + i * sub);
}

}  // namespace ikllm::quant::search
