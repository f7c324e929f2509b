// Exact ternary code book search (see grid_ternary.h).
#include "quant/grid_ternary.h"

#include <algorithm>
#include <cmath>

namespace ikllm::quant {
namespace {

constexpr int kPow3[9] = {1, 3, 9, 27, 81, 243, 729, 2187, 6561};
// Best-first steps before giving up on the walk and scanning every entry (never reached by the
// grids in use on finite inputs; it bounds the work on pathological ones).
constexpr int kMaxPops = 256;

float wdist8(const float* t, const float* w, const int8_t* p) {
    float s = 0;
    for (int j = 0; j < 8; ++j) {
        const float e = t[j] - (float)p[j];
        s += w[j] * e * e;
    }
    return s;
}

// A point of the walk: digit k of a sorted position = that coordinate's (k+1)-th cheapest value.
struct Node {
    float pen;        // distance above the unconstrained best
    uint16_t digits;  // 2 bits per sorted position
    int16_t code;     // base-3 code of the point
    int8_t last;      // highest sorted position with a nonzero digit
};
struct NodeAfter {
    bool operator()(const Node& a, const Node& b) const { return a.pen > b.pen; }
};

}  // namespace

TernaryBook::TernaryBook(const uint64_t* grid, int n) : pts_((size_t)n * 8), index_(6561, -1) {
    for (int i = 0; i < n; ++i) {
        int code = 0;
        for (int j = 0; j < 8; ++j) {
            const int8_t v = (int8_t)(uint8_t)(grid[i] >> (8 * j));
            pts_[(size_t)i * 8 + j] = v;
            code += (v + 1) * kPow3[j];
        }
        if (index_[code] < 0) index_[code] = (int16_t)i;
    }
}

uint32_t TernaryBook::nearest_exhaustive(const float* t, const float* w, float* err) const {
    uint32_t best = 0;
    float be = INFINITY;
    for (uint32_t i = 0; i < size(); ++i) {
        const float e = wdist8(t, w, point(i));
        if (e < be) be = e, best = i;
    }
    *err = be;
    return best;
}

uint32_t TernaryBook::nearest(const float* t, const float* w, float* err) const {
    // Per coordinate: its three values (as 0..2 = p + 1) from cheapest, the penalties of the
    // second and third, and the code steps of moving to them.
    uint8_t opt[8][3];
    float pen1[8], pen2[8];
    int code0 = 0;
    for (int j = 0; j < 8; ++j) {
        float c[3];
        for (int v = 0; v < 3; ++v) {
            const float e = t[j] - (float)(v - 1);
            c[v] = w[j] * e * e;
        }
        uint8_t a = 0, b = 1, d = 2;  // sort three by cost
        if (c[b] < c[a]) std::swap(a, b);
        if (c[d] < c[b]) std::swap(b, d);
        if (c[b] < c[a]) std::swap(a, b);
        opt[j][0] = a, opt[j][1] = b, opt[j][2] = d;
        pen1[j] = c[b] - c[a], pen2[j] = c[d] - c[a];
        code0 += a * kPow3[j];
    }
    int found = index_[code0];
    if (found < 0) {
        // Sorted positions by ascending first penalty: then every step of the walk below
        // (raise the last digit 1 -> 2, add the next position, or move the last 1 one position
        // on) costs >= 0, every point has exactly one parent, and a heap pops points in order.
        int perm[8];
        for (int i = 0; i < 8; ++i) {
            int k = i;
            while (k > 0 && pen1[perm[k - 1]] > pen1[i]) perm[k] = perm[k - 1], --k;
            perm[k] = i;
        }
        auto step = [&](int pos, int digit) {  // code change of sorted position pos: digit 0 -> digit
            const int j = perm[pos];
            return (opt[j][digit] - opt[j][0]) * kPow3[j];
        };
        Node heap[3 * kMaxPops + 1];
        int n = 0;
        heap[n++] = Node{pen1[perm[0]], 1, (int16_t)(code0 + step(0, 1)), 0};
        for (int pops = 0; n > 0 && pops < kMaxPops; ++pops) {
            std::pop_heap(heap, heap + n, NodeAfter{});
            const Node nd = heap[--n];
            if (index_[nd.code] >= 0) {
                found = index_[nd.code];
                break;
            }
            const int L = nd.last, dL = (nd.digits >> (2 * L)) & 3;
            if (dL == 1) {
                const int j = perm[L];
                heap[n++] = Node{nd.pen + (pen2[j] - pen1[j]), (uint16_t)(nd.digits + (1u << (2 * L))),
                                 (int16_t)(nd.code + step(L, 2) - step(L, 1)), (int8_t)L};
                std::push_heap(heap, heap + n, NodeAfter{});
            }
            if (L + 1 < 8) {
                heap[n++] = Node{nd.pen + pen1[perm[L + 1]], (uint16_t)(nd.digits | (1u << (2 * L + 2))),
                                 (int16_t)(nd.code + step(L + 1, 1)), (int8_t)(L + 1)};
                std::push_heap(heap, heap + n, NodeAfter{});
                if (dL == 1) {
                    heap[n++] = Node{nd.pen - pen1[perm[L]] + pen1[perm[L + 1]],
                                     (uint16_t)((nd.digits & ~(3u << (2 * L))) | (1u << (2 * L + 2))),
                                     (int16_t)(nd.code - step(L, 1) + step(L + 1, 1)), (int8_t)(L + 1)};
                    std::push_heap(heap, heap + n, NodeAfter{});
                }
            }
        }
        if (found < 0) return nearest_exhaustive(t, w, err);
    }
    *err = wdist8(t, w, point((uint32_t)found));
    return (uint32_t)found;
}

}  // namespace ikllm::quant
