// Search routines shared by the K-quant and ik K/KS quantizers (kquant_quantize.cpp,
// iqk_quantize.cpp). All fits minimise the importance-weighted squared error
// sum_j w_j (x_j - y_j)^2 and try several candidate scales, refining each by least squares.
#pragma once
#include <cstdint>
#include <vector>

namespace ikllm::quant::search {

// Per-weight importance of a group of n weights. With an importance matrix: imatrix_j *
// sqrt(sigma2 + x_j^2) (sigma2 = mean square of the group); without one: rms + |x_j|, which
// leans towards large weights while keeping the plain squared error nearly minimal.
void make_weights(const float* x, const float* imatrix, int n, float* w);

// Ascending levels of one value set; nearest() finds the closest level through a coarse
// lookup grid (cells narrower than the smallest gap between levels, so each cell meets at most
// two Voronoi intervals) followed by one comparison.
struct Levels {
    static constexpr int kCells = 512;
    float v[64];
    float mid[64];  // mid[i] = (v[i] + v[i+1]) / 2; mid[n-1] = +inf
    int n = 0;
    float lo = 0, cell_scale = 0;
    uint8_t cell[kCells + 1];
    void set(const float* values, int count);
    void set_i8(const int8_t* values, int count, int offset = 0);
    int nearest(float t) const {
        float c = (t - lo) * cell_scale;
        if (!(c >= 0.0f)) c = 0.0f;  // also NaN
        else if (c > (float)kCells) c = (float)kCells;
        const int i = cell[(int)c];
        return i + (int)(t > mid[i]);  // a flag, not a branch (to a predictor, a coin flip)
    }
};

// Picks the codes of n weights for a fixed scale; writes codes q[] and the chosen level
// values lv[] (so that y_j = scale * lv[j]); returns the weighted squared error.
// `ctx` is the type's own data (for example its value sets).
using PickFn = float (*)(const void* ctx, const float* x, const float* w, int n, int set, float scale,
                         uint8_t* q, float* lv);
// Default picker: nearest level of ((const Levels*)ctx)[set].
float pick_nearest(const void* ctx, const float* x, const float* w, int n, int set, float scale, uint8_t* q,
                   float* lv);

// A non-linear (or symmetric linear) format: groups of sub-blocks, each with an integer scale
// times one group scale d (per 256-block or per row) and an optional choice of value set.
struct NlFormat {
    int sub;              // weights per sub-block (16 or 32)
    int nsets;            // value sets to choose from per sub-block (1 or 2)
    PickFn pick;          // code picker
    const void* ctx;      // picker data
    float lo[2], hi[2];   // extreme levels of each set (candidate scales map the largest weight there)
    int lmin, lmax;       // allowed integer sub-block scales
    bool odd;             // only odd integer scales are representable
    bool d_fp16;          // d is stored as fp16 (else float32)
    int ntry;             // candidate scales per side when fitting one sub-block
    float rel_range;      // relative spread of those candidates
    int ndtry;            // candidate group scales
    int fit_iters = 1;    // least-squares refinements per candidate scale
};

struct NlResult {
    float d = 0;               // stored group scale (already rounded to its storage type)
    std::vector<int> ls;       // integer scale per sub-block
    std::vector<uint8_t> set;  // value set per sub-block
    std::vector<uint8_t> q;    // code per weight
    float err = 0;
};

// Quantizes n weights (a multiple of f.sub) sharing one group scale.
void quantize_nl_group(const NlFormat& f, const float* x, const float* w, int n, NlResult& r);

// Asymmetric sub-block fit x ~ a*q - m with q in [0, nmax], a >= 0, m >= 0.
float fit_asym(const float* x, const float* w, int n, int nmax, float* a, float* m);

// K-quant block with per-sub-block (scale, min) integer pairs: y = (d*sc)*q - dmin*mc.
struct AsymResult {
    float d = 0, dmin = 0;  // fp16-rounded
    int sc[16] = {}, mc[16] = {};
    uint8_t q[256] = {};
};
// 256 weights, nsub sub-blocks, codes in [0,nmax], sc/mc in [0,scmax].
void quantize_asym_block(const float* x, const float* w, int nsub, int nmax, int scmax, AsymResult& r);

// Round to the storage precision of a scale.
float round_fp16(float v);

}  // namespace ikllm::quant::search
