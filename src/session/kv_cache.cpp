#include "session/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "quant/kv_codec.h"
#include "quant/type_traits.h"

namespace ikllm {

KvCache::KvCache(const HParams& hp, int32_t n_ctx, int32_t n_seq_max, uint32_t type, backend::Backend& be)
    : n_ctx_(n_ctx), n_seq_max_(n_seq_max), words_((n_seq_max + 63) / 64), type_(type) {
    if (type != quant::T_F16 && type != quant::T_F32 && type != quant::T_BF16 && type != quant::T_Q8_0)
        fail(Status::unsupported, "KV cache type must be f32, f16, bf16 or q8_0");
    // MLA (deepseek2, architectures.md §8.5): one row per token of [latent c (r_kv) | k_rope
    // (n_rot)], shared by all heads; the values are the latent part of the same row.
    mla_ = hp.kv_lora_rank > 0;
    const int64_t heads = mla_ ? 1 : hp.n_head_kv;
    rope_offset_ = mla_ ? hp.kv_lora_rank : 0;
    auto make = [&](Tensor& t, int64_t d, const char* name) {
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
        const size_t bytes = t.nb[3];
        buffers_.push_back(be.alloc(bytes));
        t.data = buffers_.back()->data();
        std::memset(t.data, 0, bytes);  // never read stale/uninitialised memory as floats
        t.name = name;
    };
    // Refuse what the machine cannot hold before touching it (zeroing an overcommitted cache
    // would get the host process killed instead of returning an error).
    {
        const auto row = [&](int64_t d) { return (uint64_t)quant::kv_row_bytes(type, d) * heads * (uint64_t)n_ctx; };
        const uint64_t need = (uint64_t)hp.n_layer *
                              (mla_ ? row((int64_t)hp.kv_lora_rank + hp.n_rot) : row(hp.d_k) + row(hp.d_v));
        const uint64_t avail = be.capabilities().memory_available;
        if (avail && need > avail)
            fail(Status::out_of_memory, "KV cache for n_ctx " + std::to_string(n_ctx) + " needs " + std::to_string(need) +
                 " bytes (" + std::to_string(need >> 20) + " MiB) but only " + std::to_string(avail >> 20) +
                 " MiB are available: lower n_ctx or use a smaller kv_type");
    }
    k_.resize(hp.n_layer);
    v_.resize(hp.n_layer);
    for (int l = 0; l < hp.n_layer; ++l) {
        if (mla_) {
            make(k_[l], (int64_t)hp.kv_lora_rank + hp.n_rot, "cache_mla");
            v_[l] = k_[l];
            v_[l].ne[0] = hp.kv_lora_rank;
            v_[l].name = "cache_mla_latent";
        } else {
            make(k_[l], hp.d_k, "cache_k");
            make(v_[l], hp.d_v, "cache_v");
        }
    }
    pos_.assign(n_ctx, -1);
    tok_.assign(n_ctx, -1);
    seqs_.assign((size_t)n_ctx * words_, 0);
}

uint64_t KvCache::bytes() const {
    uint64_t b = 0;
    for (auto& buf : buffers_) b += buf->size();
    return b;
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
    host_read();
    for (size_t i = 0; i < shared.size(); ++i) {
        const int32_t src = shared[i], dst = fresh[i];
        for (size_t l = 0; l < k_.size(); ++l) {
            const size_t kb = k_[l].nb[2];
            std::memcpy(static_cast<uint8_t*>(k_[l].data) + dst * kb, static_cast<uint8_t*>(k_[l].data) + src * kb, kb);
            if (!mla_) {
                const size_t vb = v_[l].nb[2];
                std::memcpy(static_cast<uint8_t*>(v_[l].data) + dst * vb, static_cast<uint8_t*>(v_[l].data) + src * vb, vb);
            }
        }
        occupy(dst, seq, pos_[src], tok_[src]);
        seqs_[(size_t)src * words_ + seq / 64] &= ~(1ull << (seq % 64));
    }
    host_wrote();
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
