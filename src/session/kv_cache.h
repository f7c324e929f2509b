// KV cache: per layer K and V tensors over n_ctx cells, and per cell the position, the token
// decoded there (for prompt reuse) and the set of sequences sharing it (a forked sequence
// shares cells instead of copying them).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backend.h"
#include "model/hparams.h"
#include "ops.h"

namespace ikllm {

class KvHostShadow;

class KvCache {
public:
    // layer_device[l] != 0: layer l's attention runs on that GPU, which holds its rows (empty:
    // every layer on the host). Host memory is allocated from `be` for the others.
    KvCache(const HParams& hp, int32_t n_ctx, int32_t n_seq_max, uint32_t type, backend::Backend& be,
            const std::vector<int>& layer_device = {});

    int32_t n_ctx() const { return n_ctx_; }
    int32_t n_seq_max() const { return n_seq_max_; }
    uint32_t type() const { return type_; }
    Tensor* k(int layer) { return &k_[layer]; }
    // For MLA caches this is the latent view of k (no separate V memory).
    Tensor* v(int layer) { return &v_[layer]; }
    const Tensor* k(int layer) const { return &k_[layer]; }
    const Tensor* v(int layer) const { return &v_[layer]; }
    int32_t n_layer() const { return (int32_t)k_.size(); }
    // Bytes of one cell's K (resp. V) rows in one layer, all heads; V is 0 for MLA caches
    // (the values are part of the K row).
    size_t k_cell_bytes() const { return k_.empty() ? 0 : k_[0].nb[2]; }
    size_t v_cell_bytes() const { return mla_ || v_.empty() ? 0 : v_[0].nb[2]; }
    // Where the RoPE-rotated part of a cached key row sits (for position shifts).
    int32_t rope_offset() const { return rope_offset_; }
    bool is_mla() const { return mla_; }

    // Cell metadata.
    bool has_seq(int32_t cell, int32_t seq) const { return (seqs_[cell * words_ + seq / 64] >> (seq % 64)) & 1u; }
    int32_t pos(int32_t cell) const { return pos_[cell]; }
    int32_t token(int32_t cell) const { return tok_[cell]; }  // -1: unknown
    KvView view() const;  // cells [0, used_end)

    // Picks free cells for n tokens (lowest first). False if fewer than n are free.
    bool find_free(int32_t n, std::vector<int32_t>& cells) const;
    void occupy(int32_t cell, int32_t seq, int32_t pos, int32_t token = -1);
    void add_seq(int32_t cell, int32_t seq) { seqs_[(size_t)cell * words_ + seq / 64] |= 1ull << (seq % 64); }
    // Copy-on-write: every cell of `seq` in [p0, p1) that another sequence shares is copied
    // (K/V rows, position, token) into a free cell owned by `seq` alone. Throws context_full,
    // changing nothing, when there are not enough free cells.
    void unshare(int32_t seq, int32_t p0, int32_t p1);
    // Saved metadata, to undo a failed decode.
    struct Snapshot { std::vector<int32_t> pos; std::vector<uint64_t> seqs; };
    Snapshot snapshot() const { return {pos_, seqs_}; }
    void restore(Snapshot s) { pos_ = std::move(s.pos); seqs_ = std::move(s.seqs); }

    // Layers whose attention runs on a GPU keep their rows there (the scheduler's mirror of a
    // host range, KvHostShadow, whose pages are committed only while host code works on the
    // rows). Host code that reads or writes a layer's rows opens a HostRows for it.
    struct DeviceSync {
        virtual ~DeviceSync() = default;
        virtual void to_host(const void* p, size_t n) = 0;         // host copy brought up to date
        virtual void host_changed(const void* p, size_t n) = 0;    // host copy is the newest
        virtual void to_device_only(const void* p, size_t n) = 0;  // device copy current; host's not needed
    };
    void set_device_sync(DeviceSync* s) { sync_ = s; }
    bool on_device(int layer) const { return k_[(size_t)layer].device != 0; }
    // Host access to one layer's rows for a scope: of the given cells (null: all), to read
    // (host copy brought up to date) and / or to write. done() hands a device layer's rows back
    // to the device and frees the host pages (may throw: a device error); without it (an
    // exception) the destructor still records the write and release_host() frees the pages.
    // keys_only: the K rows alone (position shifts re-rotate keys; values stay as they are).
    enum Access : int { read = 1, write = 2, keys_only = 4 };
    class HostRows {
    public:
        HostRows(const KvCache& kv, int layer, int access, const std::vector<int32_t>* cells = nullptr);
        ~HostRows();
        void done();
        HostRows(const HostRows&) = delete;
        HostRows& operator=(const HostRows&) = delete;

    private:
        void mark_written() const;
        const KvCache& kv_;
        int layer_, access_;
        bool open_ = true;
        std::vector<std::pair<int32_t, int32_t>> runs_;  // cell ranges [first, last)
    };
    // Frees the host pages of device layers that a HostRows left in use (device copy made current).
    void release_host() const;
    // Host memory the cache holds now: host layers in full, device layers' committed pages.
    uint64_t host_resident_bytes() const;

    // Sequence operations (p1 < 0: to the end).
    void seq_remove(int32_t seq, int32_t p0, int32_t p1);  // seq < 0: every sequence
    void seq_copy(int32_t src, int32_t dst, int32_t p0, int32_t p1);
    void seq_keep(int32_t seq);
    // Moves positions; returns the cells whose keys must be re-rotated by `delta`.
    std::vector<int32_t> seq_shift(int32_t seq, int32_t p0, int32_t p1, int32_t delta);
    int32_t seq_pos_max(int32_t seq) const;
    bool seq_has_pos(int32_t seq, int32_t pos) const;
    void clear();
    int32_t used_cells() const;

private:
    void drop_if_empty(int32_t cell);
    int32_t n_ctx_, n_seq_max_, words_;
    uint32_t type_;
    bool mla_ = false;
    int32_t rope_offset_ = 0;
    void sync_cells(int layer, int32_t c0, int32_t c1, void (DeviceSync::*f)(const void*, size_t), bool keys_only = false) const;
    void release_layer(int layer) const;
    std::vector<std::unique_ptr<backend::Buffer>> buffers_;
    // Per layer: a device layer's K and V host ranges (owned by buffers_; V null for MLA), else null.
    std::vector<std::pair<KvHostShadow*, KvHostShadow*>> shadows_;
    std::vector<Tensor> k_, v_;
    std::vector<int32_t> pos_;    // -1: free
    std::vector<int32_t> tok_;    // token of each cell (-1: unknown); meaningful while held
    std::vector<uint64_t> seqs_;  // n_ctx * words_
    DeviceSync* sync_ = nullptr;
    mutable std::vector<uint8_t> host_live_;  // per layer: host pages of a device layer in use
};

}  // namespace ikllm
