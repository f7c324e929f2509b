#include "session/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"
#include "session/kv_host_shadow.h"

namespace ikllm {

KvCache::KvCache(const HParams& hp, int32_t n_ctx, int32_t n_seq_max, uint32_t type, backend::Backend& be,
                 const std::vector<int>& layer_device)
    : n_ctx_(n_ctx), n_seq_max_(n_seq_max), words_((n_seq_max + 63) / 64), type_(type) {
    if (type != quant::T_F16 && type != quant::T_F32 && type != quant::T_BF16 && type != quant::T_Q8_0)
        fail(Status::unsupported, "KV cache type must be f32, f16, bf16 or q8_0");
    // MLA (deepseek2, architectures.md §8.5): one row per token of [latent c (r_kv) | k_rope
    // (n_rot)], shared by all heads; the values are the latent part of the same row.
    mla_ = hp.kv_lora_rank > 0;
    const int64_t heads = mla_ ? 1 : hp.n_head_kv;
    rope_offset_ = mla_ ? hp.kv_lora_rank : 0;
    const auto device_of = [&](int l) { return (size_t)l < layer_device.size() ? layer_device[(size_t)l] : 0; };
    // A host layer's rows in memory from `be`, zeroed (never read stale memory as floats); a
    // device layer's host range reserved only (KvHostShadow: zero pages, committed on use).
    auto make = [&](Tensor& t, int64_t d, const char* name, int device) -> KvHostShadow* {
        t.type = type;
        t.ne[0] = d;
        t.ne[1] = heads;
        t.ne[2] = n_ctx;
        if (!quant::kv_row_ok(type, d))
            fail(Status::unsupported, std::string("KV cache type ") + quant::kv_type_name(type) + " needs head sizes that are "
                 "multiples of 32 (this model has " + std::to_string(d) + ")");
        t.nb[0] = type == quant::T_F32 ? 4 : 2;
        t.nb[1] = quant::kv_row_bytes(type, d);
        t.nb[2] = t.nb[1] * heads;
        t.nb[3] = t.nb[2] * n_ctx;
        t.name = name;
        t.device = device;
        const size_t bytes = t.nb[3];
        KvHostShadow* shadow = nullptr;
        if (device != 0) {
            auto buf = std::make_unique<KvHostShadow>(bytes);
            shadow = buf.get();
            buffers_.push_back(std::move(buf));
        } else {
            buffers_.push_back(be.alloc(bytes));
            std::memset(buffers_.back()->data(), 0, bytes);
        }
        t.data = buffers_.back()->data();
        return shadow;
    };
    // Refuse what the machine cannot hold before touching it (zeroing an overcommitted cache
    // would get the host process killed instead of returning an error). Device layers are the
    // scheduler's to allocate (Session).
    {
        const auto row = [&](int64_t d) { return (uint64_t)quant::kv_row_bytes(type, d) * heads * (uint64_t)n_ctx; };
        const uint64_t per_layer = mla_ ? row((int64_t)hp.kv_lora_rank + hp.n_rot) : row(hp.d_k) + row(hp.d_v);
        uint64_t need = 0;
        for (int l = 0; l < hp.n_layer; ++l)
            if (device_of(l) == 0) need += per_layer;
        const uint64_t avail = be.capabilities().memory_available;
        if (avail && need > avail)
            fail(Status::out_of_memory, "KV cache for n_ctx " + std::to_string(n_ctx) + " needs " + std::to_string(need) +
                 " bytes (" + std::to_string(need >> 20) + " MiB) of host memory but only " + std::to_string(avail >> 20) +
                 " MiB are available: lower n_ctx or use a smaller kv_type");
    }
    k_.resize(hp.n_layer);
    v_.resize(hp.n_layer);
    shadows_.assign(hp.n_layer, {nullptr, nullptr});
    host_live_.assign(hp.n_layer, 0);
    for (int l = 0; l < hp.n_layer; ++l) {
        const int dev = device_of(l);
        if (mla_) {
            shadows_[l].first = make(k_[l], (int64_t)hp.kv_lora_rank + hp.n_rot, "cache_mla", dev);
            v_[l] = k_[l];
            v_[l].ne[0] = hp.kv_lora_rank;
            v_[l].name = "cache_mla_latent";
        } else {
            shadows_[l].first = make(k_[l], hp.d_k, "cache_k", dev);
            shadows_[l].second = make(v_[l], hp.d_v, "cache_v", dev);
        }
    }
    pos_.assign(n_ctx, -1);
    tok_.assign(n_ctx, -1);
    seqs_.assign((size_t)n_ctx * words_, 0);
}

KvView KvCache::view() const {
    KvView v;
    v.cell_pos = pos_.data();
    v.cell_seqs = seqs_.data();
    v.seq_words = words_;
    int32_t end = n_ctx_;
    while (end > 0 && pos_[end - 1] < 0) --end;
    v.n_cells = end;
    return v;
}

bool KvCache::find_free(int32_t n, std::vector<int32_t>& cells) const {
    cells.clear();
    for (int32_t c = 0; c < n_ctx_ && (int32_t)cells.size() < n; ++c)
        if (pos_[c] < 0) cells.push_back(c);
    return (int32_t)cells.size() == n;
}

void KvCache::occupy(int32_t cell, int32_t seq, int32_t pos, int32_t token) {
    pos_[cell] = pos;
    tok_[cell] = token;
    std::fill_n(&seqs_[(size_t)cell * words_], words_, 0);
    seqs_[(size_t)cell * words_ + seq / 64] |= 1ull << (seq % 64);
}

void KvCache::drop_if_empty(int32_t cell) {
    for (int w = 0; w < words_; ++w)
        if (seqs_[(size_t)cell * words_ + w]) return;
    pos_[cell] = -1;
}

static bool in_range(int32_t p, int32_t p0, int32_t p1) { return p >= p0 && (p1 < 0 || p < p1); }

void KvCache::seq_remove(int32_t seq, int32_t p0, int32_t p1) {
    for (int32_t c = 0; c < n_ctx_; ++c) {
        if (pos_[c] < 0 || !in_range(pos_[c], p0, p1)) continue;
        if (seq < 0) {
            std::fill_n(&seqs_[(size_t)c * words_], words_, 0);
        } else {
            if (!has_seq(c, seq)) continue;
            seqs_[(size_t)c * words_ + seq / 64] &= ~(1ull << (seq % 64));
        }
        drop_if_empty(c);
    }
}

void KvCache::seq_copy(int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    if (src == dst) return;
    for (int32_t c = 0; c < n_ctx_; ++c)
        if (pos_[c] >= 0 && has_seq(c, src) && in_range(pos_[c], p0, p1))
            seqs_[(size_t)c * words_ + dst / 64] |= 1ull << (dst % 64);
}

void KvCache::seq_keep(int32_t seq) {
    for (int32_t c = 0; c < n_ctx_; ++c) {
        if (pos_[c] < 0) continue;
        const bool keep = has_seq(c, seq);
        std::fill_n(&seqs_[(size_t)c * words_], words_, 0);
        if (keep) seqs_[(size_t)c * words_ + seq / 64] |= 1ull << (seq % 64);
        drop_if_empty(c);
    }
}

std::vector<int32_t> KvCache::seq_shift(int32_t seq, int32_t p0, int32_t p1, int32_t delta) {
    std::vector<int32_t> moved;
    for (int32_t c = 0; c < n_ctx_; ++c) {
        if (pos_[c] < 0 || !has_seq(c, seq) || !in_range(pos_[c], p0, p1)) continue;
        // A shared cell can only move if no other sequence holds it.
        for (int w = 0; w < words_; ++w) {
            uint64_t others = seqs_[(size_t)c * words_ + w];
            if (w == seq / 64) others &= ~(1ull << (seq % 64));
            if (others) fail(Status::invalid_argument, "seq_shift: cell at position " + std::to_string(pos_[c]) +
                             " is shared with another sequence; copy or remove that sequence first");
        }
    }
    for (int32_t c = 0; c < n_ctx_; ++c) {
        if (pos_[c] < 0 || !has_seq(c, seq) || !in_range(pos_[c], p0, p1)) continue;
        pos_[c] += delta;
        if (pos_[c] < 0) {  // shifted before the start: dropped
            std::fill_n(&seqs_[(size_t)c * words_], words_, 0);
            pos_[c] = -1;
        } else {
            moved.push_back(c);
        }
    }
    return moved;
}

void KvCache::unshare(int32_t seq, int32_t p0, int32_t p1) {
    std::vector<int32_t> shared;
    for (int32_t c = 0; c < n_ctx_; ++c) {
        if (pos_[c] < 0 || !has_seq(c, seq) || !in_range(pos_[c], p0, p1)) continue;
        for (int w = 0; w < words_; ++w) {
            uint64_t others = seqs_[(size_t)c * words_ + w];
            if (w == seq / 64) others &= ~(1ull << (seq % 64));
            if (others) { shared.push_back(c); break; }
        }
    }
    if (shared.empty()) return;
    std::vector<int32_t> fresh;
    if (!find_free((int32_t)shared.size(), fresh))
        throw Error(Status::context_full, "KV cache full: " + std::to_string(shared.size()) +
                    " cells shared with other sequences must be copied first, " +
                    std::to_string(n_ctx_ - used_cells()) + " are free");
    std::vector<int32_t> touched = shared;
    touched.insert(touched.end(), fresh.begin(), fresh.end());
    for (size_t l = 0; l < k_.size(); ++l) {
        HostRows rows(*this, (int)l, read | write, &touched);
        for (size_t i = 0; i < shared.size(); ++i) {
            const int32_t src = shared[i], dst = fresh[i];
            const size_t kb = k_[l].nb[2];
            std::memcpy(static_cast<uint8_t*>(k_[l].data) + dst * kb, static_cast<uint8_t*>(k_[l].data) + src * kb, kb);
            if (!mla_) {
                const size_t vb = v_[l].nb[2];
                std::memcpy(static_cast<uint8_t*>(v_[l].data) + dst * vb, static_cast<uint8_t*>(v_[l].data) + src * vb, vb);
            }
        }
        rows.done();
    }
    for (size_t i = 0; i < shared.size(); ++i) {
        const int32_t src = shared[i], dst = fresh[i];
        occupy(dst, seq, pos_[src], tok_[src]);
        seqs_[(size_t)src * words_ + seq / 64] &= ~(1ull << (seq % 64));
    }
}

// ---- host access to device layers' rows ----

void KvCache::sync_cells(int layer, int32_t c0, int32_t c1, void (DeviceSync::*f)(const void*, size_t), bool keys_only) const {
    for (const Tensor* t : {&k_[(size_t)layer], mla_ || keys_only ? nullptr : &v_[(size_t)layer]})
        if (t) (sync_->*f)(static_cast<const uint8_t*>(t->data) + (size_t)c0 * t->nb[2], (size_t)(c1 - c0) * t->nb[2]);
}

void KvCache::release_layer(int layer) const {
    if (!host_live_[(size_t)layer]) return;
    sync_cells(layer, 0, n_ctx_, &DeviceSync::to_device_only);
    shadows_[(size_t)layer].first->drop();
    if (shadows_[(size_t)layer].second) shadows_[(size_t)layer].second->drop();
    host_live_[(size_t)layer] = 0;
}

KvCache::HostRows::HostRows(const KvCache& kv, int layer, int access, const std::vector<int32_t>* cells)
    : kv_(kv), layer_(layer), access_(access) {
    if (!kv_.sync_ || !kv_.on_device(layer_)) {
        open_ = false;
        return;
    }
    // A cell's rows are contiguous (all heads): copy runs of cells, joined across small gaps so
    // a fragmented selection costs few transfers -- only when reading, which brings the gap's
    // rows to the host too (a written gap would pass unread host bytes off as the newest).
    if (!cells) {
        runs_.emplace_back(0, kv_.n_ctx_);
    } else {
        std::vector<int32_t> c = *cells;
        std::sort(c.begin(), c.end());
        const int32_t join_gap = (access_ & read) ? 32 : 1;
        for (int32_t x : c) {
            if (!runs_.empty() && x < runs_.back().second + join_gap) runs_.back().second = std::max(runs_.back().second, x + 1);
            else runs_.emplace_back(x, x + 1);
        }
    }
    kv_.host_live_[(size_t)layer_] = 1;
    if (access_ & read)
        for (auto [c0, c1] : runs_) kv_.sync_cells(layer_, c0, c1, &DeviceSync::to_host, access_ & keys_only);
}

void KvCache::HostRows::mark_written() const {
    if (access_ & write)
        for (auto [c0, c1] : runs_) kv_.sync_cells(layer_, c0, c1, &DeviceSync::host_changed, access_ & keys_only);
}

KvCache::HostRows::~HostRows() {
    if (!open_) return;
    try {
        mark_written();  // whatever happened, the host rows are the newest
    } catch (...) {
    }
}

void KvCache::HostRows::done() {
    if (!open_) return;
    open_ = false;
    mark_written();
    kv_.release_layer(layer_);
}

void KvCache::release_host() const {
    if (!sync_) return;
    for (int l = 0; l < n_layer(); ++l) release_layer(l);
}

uint64_t KvCache::host_resident_bytes() const {
    uint64_t b = 0;
    for (int l = 0; l < n_layer(); ++l) {
        const auto& [ks, vs] = shadows_[(size_t)l];
        if (ks) {
            b += ks->resident_bytes() + (vs ? vs->resident_bytes() : 0);
        } else {
            b += k_[(size_t)l].nb[3] + (mla_ ? 0 : v_[(size_t)l].nb[3]);
        }
    }
    return b;
}

int32_t KvCache::seq_pos_max(int32_t seq) const {
    int32_t m = -1;
    for (int32_t c = 0; c < n_ctx_; ++c)
        if (pos_[c] >= 0 && has_seq(c, seq)) m = std::max(m, pos_[c]);
    return m;
}

bool KvCache::seq_has_pos(int32_t seq, int32_t pos) const {
    for (int32_t c = 0; c < n_ctx_; ++c)
        if (pos_[c] == pos && has_seq(c, seq)) return true;
    return false;
}

void KvCache::clear() {
    std::fill(pos_.begin(), pos_.end(), -1);
    std::fill(seqs_.begin(), seqs_.end(), 0);
}

int32_t KvCache::used_cells() const {
    int32_t n = 0;
    for (int32_t p : pos_) n += p >= 0;
    return n;
}

}  // namespace ikllm
