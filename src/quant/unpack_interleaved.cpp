#include "quant/unpack_interleaved.h"

#include <cstring>
#include <numeric>
#include <vector>

#include "quant/interleaved_impl.h"
#include "quant/repack.h"

namespace ikllm::quant {
namespace {

// `len` bits of a group block starting at bit `src` belong to row `row`'s plain block from bit
// `dst` on (bit i of a byte array = bit i % 8 of byte i / 8).
struct BitRun {
    uint32_t src, dst, len;
    int row;
};

struct Inverse {
    uint32_t id = 0;
    bool ok = false;
    int rows = 0;         // N
    size_t block_bytes = 0;  // plain bytes of one block of one row
    size_t meta_bytes = 0;   // per-row metadata before the blocks (the group's N copies lead it)
    int64_t block_elems = 0;
    std::vector<BitRun> runs;       // within a block column (sources after the group's metadata)
    std::vector<BitRun> meta_runs;  // the group's metadata to each row's
};

inline bool get_bit(const uint8_t* p, size_t i) { return (p[i >> 3] >> (i & 7)) & 1; }

// Where each input bit of N plain rows of nblk blocks goes in the repacked group (-1: the repack
// is not a bit permutation). Index: row * (row bits) + bit.
std::vector<int64_t> probe(const InterleavedCodec& c, const TypeTraits& base, const TypeTraits& it, int64_t nblk) {
    const int N = c.rows;
    const int64_t ne0 = base.block_elems * nblk;
    const size_t rb = row_bytes(base, ne0), gb = row_bytes(it, ne0) * (size_t)N;
    if (gb != rb * (size_t)N) return {};
    std::vector<uint8_t> in(rb * (size_t)N, 0), out(gb + 8, 0);
    std::vector<const uint8_t*> rows((size_t)N);
    for (int k = 0; k < N; ++k) rows[(size_t)k] = in.data() + rb * (size_t)k;
    c.repack(rows.data(), out.data(), ne0);
    for (size_t i = 0; i < gb; ++i)
        if (out[i]) return {};  // zero must stay zero
    std::vector<int64_t> where(in.size() * 8, -1);
    std::vector<char> taken(gb * 8, 0);
    for (size_t bit = 0; bit < in.size() * 8; ++bit) {
        in[bit >> 3] = (uint8_t)(1u << (bit & 7));
        std::memset(out.data(), 0, gb);
        c.repack(rows.data(), out.data(), ne0);
        in[bit >> 3] = 0;
        int64_t found = -1;
        for (size_t w = 0; w < gb; w += 8) {
            uint64_t v;
            std::memcpy(&v, out.data() + w, 8);
            if (!v) continue;
            for (size_t j = w; j < std::min(gb, w + 8); ++j)
                for (int b = 0; b < 8; ++b)
                    if ((out[j] >> b) & 1) {
                        if (found >= 0) return {};  // one input bit set two output bits
                        found = (int64_t)(8 * j + (size_t)b);
                    }
        }
        if (found < 0 || taken[(size_t)found]) return {};
        taken[(size_t)found] = 1;
        where[bit] = found;
    }
    return where;
}

// Appends bit `s` -> bit `d` of row k to runs, extending the last run where both continue it.
void add_bit(std::vector<BitRun>& runs, uint32_t s, uint32_t d, int k) {
    if (!runs.empty()) {
        BitRun& r = runs.back();
        if (r.row == k && r.dst + r.len == d && r.src + r.len == s) {
            ++r.len;
            return;
        }
    }
    runs.push_back({s, d, 1, k});
}

Inverse derive(const InterleavedCodec& c) {
    Inverse inv;
    inv.id = c.id;
    const TypeTraits* base = find_type(c.base);
    const TypeTraits* it = find_type(c.id);
    if (!c.repack || !base || !it || base->interleave != 1 || base->row_meta_bytes != it->row_meta_bytes) return inv;
    const std::vector<int64_t> one = probe(c, *base, *it, 1), two = probe(c, *base, *it, 2);
    if (one.empty() || two.empty()) return inv;
    const int N = c.rows;
    const size_t m = base->row_meta_bytes, bb = (size_t)base->block_bytes, group_bits = bb * 8 * (size_t)N;
    const size_t r1 = (m + bb) * 8, r2 = (m + 2 * bb) * 8, head = m * 8 * (size_t)N;
    // Row metadata lands in the group's head, the same way for any row length; block bits the same
    // way in every block column: block 1 of row k lands one group block later.
    for (int k = 0; k < N; ++k)
        for (size_t j = 0; j < r1; ++j) {
            const int64_t a = one[(size_t)k * r1 + j];
            if (two[(size_t)k * r2 + j] != a) return inv;
            if (j < m * 8 ? (size_t)a >= head
                          : (size_t)a < head || two[(size_t)k * r2 + j + bb * 8] != a + (int64_t)group_bits)
                return inv;
        }
    for (int k = 0; k < N; ++k)
        for (size_t j = 0; j < r1; ++j) {
            const uint32_t a = (uint32_t)one[(size_t)k * r1 + j];
            if (j < m * 8) add_bit(inv.meta_runs, a, (uint32_t)j, k);
            else add_bit(inv.runs, a - (uint32_t)head, (uint32_t)(j - m * 8), k);
        }
    inv.ok = true;
    inv.rows = N;
    inv.block_bytes = bb;
    inv.meta_bytes = m;
    inv.block_elems = base->block_elems;
    return inv;
}

const Inverse* find_inverse(uint32_t id) {
    // Derived once for every codec on first use (a few tens of milliseconds), read-only after.
    static const std::vector<Inverse> table = [] {
        std::vector<Inverse> out;
        const InterleavedCodec* c = nullptr;
        for (uint32_t t = 0; t < 8192; ++t)
            if ((c = find_interleaved_codec(t)) && c->repack) out.push_back(derive(*c));
        return out;
    }();
    for (const Inverse& inv : table)
        if (inv.id == id) return inv.ok ? &inv : nullptr;
    return nullptr;
}

// len bits from src (starting at bit s) to dst (starting at bit d); whole bytes when aligned.
void copy_bits(const uint8_t* src, uint32_t s, uint8_t* dst, uint32_t d, uint32_t len) {
    if (!(s & 7) && !(d & 7)) {
        std::memcpy(dst + (d >> 3), src + (s >> 3), len >> 3);
        s += len & ~7u;
        d += len & ~7u;
        len &= 7;
    }
    for (uint32_t i = 0; i < len; ++i, ++s, ++d) {
        const uint8_t m = (uint8_t)(1u << (d & 7));
        dst[d >> 3] = get_bit(src, s) ? (uint8_t)(dst[d >> 3] | m) : (uint8_t)(dst[d >> 3] & ~m);
    }
}

}  // namespace

bool unpack_supported(uint32_t interleaved_type) { return find_inverse(interleaved_type) != nullptr; }

bool unpack_rows(uint32_t interleaved_type, const uint8_t* src, uint8_t* dst, int64_t ne0, int64_t nrows) {
    const Inverse* inv = find_inverse(interleaved_type);
    if (!inv || ne0 <= 0 || ne0 % inv->block_elems || nrows % inv->rows) return false;
    const int64_t nb = ne0 / inv->block_elems;
    const size_t m = inv->meta_bytes, bb = inv->block_bytes, rb = m + bb * (size_t)nb, gb = bb * (size_t)inv->rows;
    for (int64_t g = 0; g < nrows / inv->rows; ++g) {
        const uint8_t* sg = src + rb * (size_t)(g * inv->rows);
        uint8_t* dg = dst + rb * (size_t)(g * inv->rows);
        for (const BitRun& r : inv->meta_runs) copy_bits(sg, r.src, dg + rb * (size_t)r.row, r.dst, r.len);
        const uint8_t* sb = sg + m * (size_t)inv->rows;
        for (int64_t b = 0; b < nb; ++b)
            for (const BitRun& r : inv->runs)
                copy_bits(sb + gb * (size_t)b, r.src, dg + rb * (size_t)r.row + m + bb * (size_t)b, r.dst, r.len);
    }
    return true;
}

int64_t convert_group_rows(uint32_t from, uint32_t to) {
    const TypeTraits* a = find_type(from);
    const TypeTraits* b = find_type(to);
    return a && b ? std::lcm<int64_t>(a->interleave, b->interleave) : 0;
}

bool convert_rows(uint32_t from, uint32_t to, const uint8_t* src, uint8_t* dst, int64_t ne0, int64_t nrows) {
    const TypeTraits* a = find_type(from);
    const TypeTraits* b = find_type(to);
    if (!a || !b || from == to) return false;
    if (a->interleave == 1) return repack_rows_to(from, to, src, dst, ne0, nrows);
    const uint32_t base = repack_base(from);
    if (!base || !unpack_supported(from)) return false;
    if (to == base) return unpack_rows(from, src, dst, ne0, nrows);
    if (repack_base(to) != base) return false;
    const int64_t unit = convert_group_rows(from, to);
    if (nrows % unit) return false;
    const TypeTraits& bt = *find_type(base);
    const size_t in_rb = row_bytes(*a, ne0), out_rb = row_bytes(*b, ne0);
    std::vector<uint8_t> plain(row_bytes(bt, ne0) * (size_t)unit);
    for (int64_t r = 0; r < nrows; r += unit)
        if (!unpack_rows(from, src + in_rb * (size_t)r, plain.data(), ne0, unit) ||
            !repack_rows_to(base, to, plain.data(), dst + out_rb * (size_t)r, ne0, unit))
            return false;
    return true;
}

}  // namespace ikllm::quant
