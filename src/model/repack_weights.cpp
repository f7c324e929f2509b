#include "model/repack_weights.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "quant/repack.h"
#include "quant/type_traits.h"
#include "quant/unpack_interleaved.h"

namespace ikllm {

bool repack_applies(const backend::Backend& cpu, uint32_t type, bool force) {
    const uint32_t to = cpu.repack_type(type);
    return to && cpu.supports_weight_type(to) && (force || cpu.repack_helps(type));
}

bool repack_grows(const backend::Backend& cpu, uint32_t type, int64_t ne0) {
    const uint32_t to = cpu.repack_type(type);
    const quant::TypeTraits* a = quant::find_type(type);
    const quant::TypeTraits* b = to ? quant::find_type(to) : nullptr;
    return a && b && quant::row_bytes(*b, ne0) != quant::row_bytes(*a, ne0);
}

namespace {

// A tensor can be converted where it lies when its bytes are the model's own (a read copy of the
// file, not a read-only mapping), no other weight tensor views them (that one would still read
// them as the old type) and the interleaved rows take the same room.
bool repack_in_place_ok(const Model& m, const Tensor& t, size_t new_row_bytes) {
    if (!m.file || new_row_bytes != t.nb[1]) return false;
    const uint8_t* lo = static_cast<const uint8_t*>(t.data);
    const uint8_t* hi = lo + t.nb[1] * (size_t)t.n_rows();
    auto within = [&](const void* p, uint64_t n) {
        return lo >= static_cast<const uint8_t*>(p) && hi <= static_cast<const uint8_t*>(p) + n;
    };
    // The file's read copy, or the copy of a mapped file's CPU weights (GPU placement).
    bool in_copy = m.cpu_weight_copy && within(m.cpu_weight_copy, m.cpu_weight_copy_bytes);
    if (!m.file->mapped())
        for (auto [p, n] : m.file->mapped_ranges()) in_copy |= within(p, n);
    if (!in_copy) return false;
    for (const auto& w : m.weights) {
        if (w.get() == &t || !w->data) continue;
        const uint8_t* wl = static_cast<const uint8_t*>(w->data);
        const uint8_t* wh = wl + w->nb[1] * (size_t)w->n_rows();
        if (wl < hi && lo < wh) return false;
    }
    return true;
}

// Runs fn(first_group, end_group) over the n row groups, split across the machine's cores when
// there is enough to convert (load time: a 3 GB model's conversion took 4.4 s on one core).
template <class Fn>
bool parallel_groups(int64_t n, size_t group_bytes, Fn fn) {
    const int64_t want = (int64_t)((size_t)n * group_bytes >> 22);  // ~4 MiB per thread at least
    const int64_t k = std::clamp<int64_t>(std::min<int64_t>(want, std::thread::hardware_concurrency()), 1, 16);
    if (k == 1) return fn(0, n);
    std::vector<char> ok((size_t)k, 0);
    std::vector<std::thread> pool;
    for (int64_t i = 0; i < k; ++i)
        pool.emplace_back([&, i] { ok[(size_t)i] = fn(n * i / k, n * (i + 1) / k) ? 1 : 0; });
    for (auto& t : pool) t.join();
    return std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
}

// Converts nrows rows at data in place, one row group at a time through a group-sized copy.
bool repack_in_place(uint32_t from, uint32_t to, uint8_t* data, size_t row_bytes, int64_t ne0, int64_t nrows,
                     int64_t group) {
    const size_t gb = row_bytes * (size_t)group;
    return parallel_groups(nrows / group, gb, [&](int64_t g0, int64_t g1) {
        std::vector<uint8_t> tmp(gb);
        for (int64_t gi = g0; gi < g1; ++gi) {
            uint8_t* g = data + gb * (size_t)gi;
            std::memcpy(tmp.data(), g, gb);
            if (!quant::convert_rows(from, to, tmp.data(), g, ne0, group)) {
                std::memcpy(g, tmp.data(), gb);  // (not reached: the group fits by construction)
                return false;
            }
        }
        return true;
    });
}

}  // namespace

int repack_weights(Model& m, const std::vector<Tensor*>& matmul_weights, bool force, bool in_place_only, const Logger& log) {
    int n = 0, in_place = 0;
    uint64_t bytes = 0;
    std::set<Tensor*> seen;
    std::map<uint32_t, int> kept;     // types the CPU runs faster as stored: tensors left plain
    std::map<uint32_t, int> results;  // auto: types whose interleaved kernels give other results
    for (Tensor* t : matmul_weights) {
        if (!t || t->device != 0 || !seen.insert(t).second) continue;  // (GPU weights stay plain)
        // Tied embeddings are also looked up row by row; keep them plain.
        if (t == m.tok_embd) continue;
        const uint32_t to = m.cpu->repack_type(t->type);
        if (!to || !m.cpu->supports_weight_type(to)) continue;
        if (!force && !m.cpu->repack_helps(t->type)) {
            ++kept[t->type];
            continue;
        }
        if (in_place_only && m.cpu->repack_changes_results(t->type)) {
            ++results[t->type];
            continue;
        }
        const quant::TypeTraits& dst = *quant::find_type(to);
        // rows converted together: the new form's group, and the stored form's (a file's
        // interleaved form going back to its plain type or on to another form of it)
        const int64_t il = quant::convert_group_rows(t->type, to);
        if (il <= 0 || t->ne[1] % il != 0) continue;
        const int64_t rows = t->n_rows();
        const size_t rb = quant::row_bytes(dst, t->ne[0]);
        if (repack_in_place_ok(m, *t, rb)) {
            if (!repack_in_place(t->type, to, static_cast<uint8_t*>(t->data), rb, t->ne[0], rows, il)) continue;
            ++in_place;
        } else if (in_place_only) {
            continue;
        } else {
            auto buf = m.cpu->alloc(rb * (size_t)rows);
            const uint8_t* src = static_cast<const uint8_t*>(t->data);
            uint8_t* out = static_cast<uint8_t*>(buf->data());
            const size_t src_rb = t->nb[1];
            if (!parallel_groups(rows / il, rb * (size_t)il, [&](int64_t g0, int64_t g1) {
                    return quant::convert_rows(t->type, to, src + src_rb * (size_t)(g0 * il), out + rb * (size_t)(g0 * il),
                                               t->ne[0], (g1 - g0) * il);
                }))
                continue;
            t->data = buf->data();
            m.buffers.push_back(std::move(buf));
        }
        t->type = to;
        t->nb[0] = (size_t)dst.block_bytes;
        t->nb[1] = rb;
        t->nb[2] = rb * (size_t)t->ne[1];
        t->nb[3] = t->nb[2] * (size_t)t->ne[2];
        bytes += rb * (size_t)rows;
        ++n;
    }
    auto listed = [](const std::map<uint32_t, int>& types) {
        std::string list;
        for (auto [type, count] : types)
            list += (list.empty() ? "" : ", ") + std::to_string(count) + " " + quant::find_type(type)->name;
        return list;
    };
    if (!kept.empty())
        log.log(in_place_only ? log_info : log_warn, "run-time repack: tensors kept as stored, faster than interleaved on this CPU (repack 2 "
                          "forces it): %s", listed(kept).c_str());
    if (!results.empty())
        log.log(log_info, "run-time repack (auto): tensors kept as stored, whose interleaved kernels on this CPU give other "
                          "results than the file's (repack 1 converts them: faster prompts): %s", listed(results).c_str());
    log.log(log_info, "repacked %d weight tensors (%.1f MiB; %d in place) to row-interleaved layouts", n,
            bytes / 1048576.0, in_place);
    return n;
}

int repack_mla_heads(Model& m, bool exact_only, const Logger& log) {
    static const std::string kDerived = "(derived)";
    int n = 0;
    std::set<std::string> names;
    for (auto& l : m.layers)
        for (Tensor* t : {l.wk_b, l.wv_b}) {
            if (!t || t->device != 0) continue;
            // wk_b of a quantized file is Q8_0; wv_b keeps attn_kv_b's type, which goes to the
            // CPU's own run-time layout where it has one (IQ4_K -> IQ4_K_R8 ...).
            if (exact_only && m.cpu->repack_changes_results(t->type)) continue;
            const uint32_t to = t->type == quant::T_Q8_0 ? (uint32_t)quant::T_Q8_0_R8
                                : m.cpu->repack_helps(t->type) ? m.cpu->repack_type(t->type)
                                                               : 0;
            const quant::TypeTraits* dst = to ? quant::find_type(to) : nullptr;
            if (!dst || (to != quant::T_Q8_0_R8 && !quant::is_runtime_layout(to)) || !m.cpu->supports_weight_type(to) ||
                t->ne[1] % dst->interleave != 0)
                continue;
            const std::string name = t->name;  // only the loader's own copies: file tensors may be mapped
            if (name.size() < kDerived.size() || name.compare(name.size() - kDerived.size(), kDerived.size(), kDerived))
                continue;
            const size_t rb = quant::row_bytes(*dst, t->ne[0]);
            if (rb != t->nb[1] ||
                !repack_in_place(t->type, to, static_cast<uint8_t*>(t->data), rb, t->ne[0], t->n_rows(), dst->interleave))
                continue;
            t->type = to;
            t->nb[0] = (size_t)dst->block_bytes;
            names.insert(dst->name);
            ++n;
        }
    if (n) {
        std::string list;
        for (const std::string& s : names) list += (list.empty() ? "" : ", ") + s;
        log.log(log_info, "MLA per-head products: %d tensors interleaved (%s)", n, list.c_str());
    }
    return n;
}

}  // namespace ikllm
