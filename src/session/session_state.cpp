// Session state (de)serialisation. Layout (little-endian; docs/session-state.md):
//   header  "IKST", format version, ABI version, flags, model fingerprint + file bytes, shape
//           facts, KV type, per-cell K/V bytes, saver n_ctx / n_seq_max, n_seqs, n_cells
//   seq ids[n_seqs]
//   cells   [n_cells] x (cell index, position, token, sequence mask words over the saved seqs)
//   K/V     per layer: K rows of every saved cell, then V rows (none for MLA caches)
//   sampler (flag) u64 length + sampler blob
//   u64     checksum of every byte before it
// Loading makes two passes: the first checks everything and changes nothing; the second
// copies the rows into the chosen cells and commits.
#include "session/session_state.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "core/error.h"
#include "quant/kv_codec.h"
#include "sampling/sampler.h"
#include "session/hash64.h"
#include "session/model_fingerprint.h"
#include "session/session.h"

namespace ikllm {

namespace {

constexpr char kSessionMagic[4] = {'I', 'K', 'S', 'T'};
constexpr uint32_t kFlagSampler = 1;
constexpr int32_t kMaxPos = 1 << 30;               // leaves room for positions after a restore
constexpr uint64_t kMaxSamplerBytes = 1ull << 28;
constexpr uint64_t kHeaderBytes = 4 + 4 * 3 + 8 * 2 + 4 * 9 + 8 * 2 + 4 * 4;
constexpr size_t kCopyChunk = 1 << 20;

struct Header {
    uint32_t version = kStateFormatVersion, abi = kStateAbiVersion, flags = 0;
    uint64_t fingerprint = 0, file_bytes = 0;
    uint32_t n_layer = 0, n_embd = 0, n_vocab = 0, n_head_kv = 0, d_k = 0, d_v = 0, kv_lora_rank = 0, n_rot = 0;
    uint32_t kv_type = 0;
    uint64_t k_cell_bytes = 0, v_cell_bytes = 0;
    uint32_t n_ctx = 0, n_seq_max = 0, n_seqs = 0, n_cells = 0;
};

// What a state for this session looks like (the counts are filled in by the caller).
Header describe(const Session& s) {
    const HParams& hp = s.model().hp;
    const KvCache& kv = s.kv();
    Header h;
    h.fingerprint = model_fingerprint(s.model());
    h.file_bytes = s.model().file->total_file_bytes();
    h.n_layer = (uint32_t)hp.n_layer;
    h.n_embd = (uint32_t)hp.n_embd;
    h.n_vocab = (uint32_t)hp.n_vocab;
    h.n_head_kv = (uint32_t)hp.n_head_kv;
    h.d_k = (uint32_t)hp.d_k;
    h.d_v = (uint32_t)hp.d_v;
    h.kv_lora_rank = (uint32_t)hp.kv_lora_rank;
    h.n_rot = (uint32_t)hp.n_rot;
    h.kv_type = kv.type();
    h.k_cell_bytes = kv.k_cell_bytes();
    h.v_cell_bytes = kv.v_cell_bytes();
    h.n_ctx = (uint32_t)kv.n_ctx();
    h.n_seq_max = (uint32_t)kv.n_seq_max();
    return h;
}

class Out {
public:
    explicit Out(ByteSink& s) : s_(s) {}
    void bytes(const void* p, size_t n) { s_.write(p, n); h_.update(p, n); n_ += n; }
    void u32(uint32_t v) { uint8_t b[4]; for (int i = 0; i < 4; ++i) b[i] = (uint8_t)(v >> (8 * i)); bytes(b, 4); }
    void u64(uint64_t v) { uint8_t b[8]; for (int i = 0; i < 8; ++i) b[i] = (uint8_t)(v >> (8 * i)); bytes(b, 8); }
    void checksum() { u64(h_.digest()); }
    uint64_t count() const { return n_; }

private:
    ByteSink& s_;
    Hash64 h_;
    uint64_t n_ = 0;
};

class In {
public:
    explicit In(ByteSource& s) : s_(s) {}
    void bytes(void* p, size_t n) { s_.read(p, n); h_.update(p, n); n_ += n; }
    uint32_t u32() { uint8_t b[4]; bytes(b, 4); uint32_t v = 0; for (int i = 3; i >= 0; --i) v = (v << 8) | b[i]; return v; }
    uint64_t u64() { uint8_t b[8]; bytes(b, 8); uint64_t v = 0; for (int i = 7; i >= 0; --i) v = (v << 8) | b[i]; return v; }
    void skip(uint64_t n) {  // read and hash, discarding
        std::vector<uint8_t> buf((size_t)std::min<uint64_t>(n, kCopyChunk));
        while (n > 0) {
            const size_t k = (size_t)std::min<uint64_t>(n, buf.size());
            bytes(buf.data(), k);
            n -= k;
        }
    }
    uint64_t digest() const { return h_.digest(); }
    uint64_t count() const { return n_; }

private:
    ByteSource& s_;
    Hash64 h_;
    uint64_t n_ = 0;
};

void write_header(Out& o, const Header& h) {
    o.bytes(kSessionMagic, 4);
    for (uint32_t v : {h.version, h.abi, h.flags}) o.u32(v);
    o.u64(h.fingerprint);
    o.u64(h.file_bytes);
    for (uint32_t v : {h.n_layer, h.n_embd, h.n_vocab, h.n_head_kv, h.d_k, h.d_v, h.kv_lora_rank, h.n_rot, h.kv_type})
        o.u32(v);
    o.u64(h.k_cell_bytes);
    o.u64(h.v_cell_bytes);
    for (uint32_t v : {h.n_ctx, h.n_seq_max, h.n_seqs, h.n_cells}) o.u32(v);
}

[[noreturn]] void incompatible(const std::string& why) {
    fail(Status::incompatible_state, "cannot restore the session state: " + why);
}
[[noreturn]] void corrupt(const std::string& why) { fail(Status::invalid_file, "session state is corrupt: " + why); }

Header read_header(In& in) {
    char magic[4];
    in.bytes(magic, 4);
    if (!std::equal(magic, magic + 4, kSessionMagic)) fail(Status::invalid_file, "not an ikllm session state (bad magic)");
    Header h;
    h.version = in.u32();
    if (h.version != kStateFormatVersion)
        incompatible("format version " + std::to_string(h.version) + " (this library reads version " +
                     std::to_string(kStateFormatVersion) + ")");
    h.abi = in.u32();
    h.flags = in.u32();
    h.fingerprint = in.u64();
    h.file_bytes = in.u64();
    for (uint32_t* v : {&h.n_layer, &h.n_embd, &h.n_vocab, &h.n_head_kv, &h.d_k, &h.d_v, &h.kv_lora_rank, &h.n_rot,
                        &h.kv_type})
        *v = in.u32();
    h.k_cell_bytes = in.u64();
    h.v_cell_bytes = in.u64();
    for (uint32_t* v : {&h.n_ctx, &h.n_seq_max, &h.n_seqs, &h.n_cells}) *v = in.u32();
    return h;
}

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%016" PRIx64, v);
    return b;
}

void check_compatible(const Header& h, const Session& s, const Sampler* sampler) {
    if (h.abi != kStateAbiVersion)
        incompatible("saved by ABI version " + std::to_string(h.abi) + ", this library is ABI version " +
                     std::to_string(kStateAbiVersion));
    if (h.flags & ~kFlagSampler) corrupt("unknown flags " + std::to_string(h.flags));
    const Header me = describe(s);
    if (h.fingerprint != me.fingerprint || h.file_bytes != me.file_bytes)
        incompatible("it was saved for a different model file (fingerprint " + hex(h.fingerprint) + ", " +
                     std::to_string(h.file_bytes) + " bytes; this model: " + hex(me.fingerprint) + ", " +
                     std::to_string(me.file_bytes) + " bytes)");
    const std::pair<const char*, std::pair<uint32_t, uint32_t>> facts[] = {
        {"n_layer", {h.n_layer, me.n_layer}}, {"n_embd", {h.n_embd, me.n_embd}}, {"n_vocab", {h.n_vocab, me.n_vocab}},
        {"n_head_kv", {h.n_head_kv, me.n_head_kv}}, {"d_k", {h.d_k, me.d_k}}, {"d_v", {h.d_v, me.d_v}},
        {"kv_lora_rank", {h.kv_lora_rank, me.kv_lora_rank}}, {"n_rot", {h.n_rot, me.n_rot}}};
    for (const auto& [name, v] : facts)
        if (v.first != v.second)
            incompatible(std::string("model shape differs: ") + name + " " + std::to_string(v.first) + " saved, " +
                         std::to_string(v.second) + " here");
    if (h.kv_type != me.kv_type)
        incompatible(std::string("it was saved with KV cache type ") + quant::kv_type_name(h.kv_type) +
                     ", this session uses " + quant::kv_type_name(me.kv_type));
    if (h.k_cell_bytes != me.k_cell_bytes || h.v_cell_bytes != me.v_cell_bytes)
        incompatible("KV cell layout differs (" + std::to_string(h.k_cell_bytes) + "+" + std::to_string(h.v_cell_bytes) +
                     " bytes saved, " + std::to_string(me.k_cell_bytes) + "+" + std::to_string(me.v_cell_bytes) + " here)");
    if (h.n_seqs > me.n_seq_max)
        incompatible("it holds " + std::to_string(h.n_seqs) + " sequences, this session has n_seq_max " +
                     std::to_string(me.n_seq_max));
    if (h.n_cells > me.n_ctx)
        incompatible("it holds " + std::to_string(h.n_cells) + " KV cells, this session's n_ctx is only " +
                     std::to_string(me.n_ctx));
    if (sampler && !(h.flags & kFlagSampler))
        incompatible("a sampler was given but the state holds no sampler state (it was saved without one)");
}

// The saved cells: every held cell with at least one of the chosen sequences.
struct Selection {
    uint32_t words = 0;
    std::vector<int32_t> cells;
    std::vector<uint64_t> masks;  // cells.size() * words, bit j = seqs[j]
};

Selection select_cells(const KvCache& kv, const std::vector<int32_t>& seqs) {
    Selection sel;
    sel.words = (uint32_t)((seqs.size() + 63) / 64);
    std::vector<uint64_t> m(sel.words);
    for (int32_t c = 0; c < kv.n_ctx(); ++c) {
        if (kv.pos(c) < 0) continue;
        std::fill(m.begin(), m.end(), 0);
        bool any = false;
        for (size_t j = 0; j < seqs.size(); ++j)
            if (kv.has_seq(c, seqs[j])) {
                m[j / 64] |= 1ull << (j % 64);
                any = true;
            }
        if (!any) continue;
        sel.cells.push_back(c);
        sel.masks.insert(sel.masks.end(), m.begin(), m.end());
    }
    return sel;
}

uint64_t meta_bytes(uint64_t n_seqs, uint64_t n_cells, uint64_t words) {
    return kHeaderBytes + 4 * n_seqs + n_cells * (12 + 8 * words);
}

}  // namespace

std::vector<int32_t> resolve_state_seqs(const Session& s, const int32_t* seq_ids, int32_t n_seq_ids) {
    const int32_t n_max = s.options().n_seq_max;
    std::vector<int32_t> seqs;
    if (n_seq_ids < 0) fail(Status::invalid_argument, "n_seq_ids must be >= 0");
    if (n_seq_ids > 0 && !seq_ids) fail(Status::invalid_argument, "seq_ids is NULL");
    if (n_seq_ids == 0) {
        for (int32_t q = 0; q < n_max; ++q)
            if (s.kv().seq_pos_max(q) >= 0) seqs.push_back(q);
        return seqs;
    }
    std::vector<bool> seen(n_max);
    for (int32_t i = 0; i < n_seq_ids; ++i) {
        const int32_t q = seq_ids[i];
        if (q < 0 || q >= n_max)
            fail(Status::invalid_argument, "sequence id " + std::to_string(q) + " out of range [0, " + std::to_string(n_max) + ")");
        if (seen[q]) fail(Status::invalid_argument, "sequence id " + std::to_string(q) + " listed twice");
        seen[q] = true;
        seqs.push_back(q);
    }
    return seqs;
}

uint64_t state_size(const Session& s, const std::vector<int32_t>& seqs, const Sampler* sampler) {
    const Selection sel = select_cells(s.kv(), seqs);
    const KvCache& kv = s.kv();
    uint64_t n = meta_bytes(seqs.size(), sel.cells.size(), sel.words);
    n += (uint64_t)kv.n_layer() * sel.cells.size() * (kv.k_cell_bytes() + kv.v_cell_bytes());
    if (sampler) n += 8 + sampler->save_state().size();
    return n + 8;
}

void save_state(const Session& s, const std::vector<int32_t>& seqs, const Sampler* sampler, ByteSink& sink) {
    const KvCache& kv = s.kv();
    const Selection sel = select_cells(kv, seqs);
    Header h = describe(s);
    h.flags = sampler ? kFlagSampler : 0;
    h.n_seqs = (uint32_t)seqs.size();
    h.n_cells = (uint32_t)sel.cells.size();
    Out o(sink);
    write_header(o, h);
    for (int32_t q : seqs) o.u32((uint32_t)q);
    for (size_t i = 0; i < sel.cells.size(); ++i) {
        const int32_t c = sel.cells[i];
        o.u32((uint32_t)c);
        o.u32((uint32_t)kv.pos(c));
        o.u32((uint32_t)kv.token(c));
        for (uint32_t w = 0; w < sel.words; ++w) o.u64(sel.masks[i * sel.words + w]);
    }
    for (int32_t l = 0; l < kv.n_layer(); ++l) {
        KvCache::HostRows rows(kv, l, KvCache::read, &sel.cells);
        const uint8_t* kd = static_cast<const uint8_t*>(kv.k(l)->data);
        for (int32_t c : sel.cells) o.bytes(kd + (size_t)c * h.k_cell_bytes, h.k_cell_bytes);
        if (h.v_cell_bytes) {
            const uint8_t* vd = static_cast<const uint8_t*>(kv.v(l)->data);
            for (int32_t c : sel.cells) o.bytes(vd + (size_t)c * h.v_cell_bytes, h.v_cell_bytes);
        }
        rows.done();
    }
    if (sampler) {
        const std::vector<uint8_t> blob = sampler->save_state();
        o.u64(blob.size());
        o.bytes(blob.data(), blob.size());
    }
    o.checksum();
}

void load_state(Session& s, ByteSource& src, Sampler* sampler, bool replace_all) {
    KvCache& kv = s.kv();
    // ---- pass 1: read and check everything; nothing changes ----
    In in(src);
    const Header h = read_header(in);
    check_compatible(h, s, sampler);
    std::vector<int32_t> seqs(h.n_seqs);
    std::vector<bool> seen(kv.n_seq_max());
    for (int32_t& q : seqs) {
        q = (int32_t)in.u32();
        if (q < 0 || q >= kv.n_seq_max())
            incompatible("it holds sequence " + std::to_string(q) + ", this session has n_seq_max " +
                         std::to_string(kv.n_seq_max()));
        if (seen[q]) corrupt("sequence " + std::to_string(q) + " listed twice");
        seen[q] = true;
    }
    const uint32_t words = (h.n_seqs + 63) / 64;
    if (h.n_cells > 0 && h.n_seqs == 0) corrupt("cells without sequences");
    std::vector<uint32_t> index(h.n_cells);
    std::vector<int32_t> pos(h.n_cells), tok(h.n_cells);
    std::vector<uint64_t> masks((size_t)h.n_cells * words);
    std::vector<std::vector<int32_t>> seq_pos(h.n_seqs);
    for (uint32_t i = 0; i < h.n_cells; ++i) {
        index[i] = in.u32();
        pos[i] = (int32_t)in.u32();
        tok[i] = (int32_t)in.u32();
        if (index[i] >= h.n_ctx) corrupt("cell index " + std::to_string(index[i]) + " beyond the saved n_ctx");
        if (pos[i] < 0 || pos[i] > kMaxPos) corrupt("cell position " + std::to_string(pos[i]) + " out of range");
        if (tok[i] < -1 || tok[i] >= (int32_t)h.n_vocab) corrupt("token " + std::to_string(tok[i]) + " out of range");
        bool any = false;
        for (uint32_t w = 0; w < words; ++w) {
            uint64_t m = in.u64();
            masks[(size_t)i * words + w] = m;
            const uint32_t valid = std::min<uint32_t>(64, h.n_seqs - 64 * w);
            if (valid < 64 && (m >> valid)) corrupt("sequence mask names unknown sequences");
            any |= m != 0;
            for (; m; m &= m - 1) seq_pos[64 * w + __builtin_ctzll(m)].push_back(pos[i]);
        }
        if (!any) corrupt("a cell belongs to no sequence");
    }
    {
        std::vector<uint32_t> sorted = index;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) corrupt("a cell index appears twice");
    }
    for (auto& p : seq_pos) {
        std::sort(p.begin(), p.end());
        if (std::adjacent_find(p.begin(), p.end()) != p.end()) corrupt("a sequence holds a position twice");
    }
    const uint64_t n_meta = in.count();
    const uint64_t kv_bytes = (uint64_t)h.n_layer * h.n_cells * (h.k_cell_bytes + h.v_cell_bytes);
    in.skip(kv_bytes);
    std::vector<uint8_t> blob;
    if (h.flags & kFlagSampler) {
        const uint64_t n = in.u64();
        if (n > kMaxSamplerBytes) corrupt("sampler section of " + std::to_string(n) + " bytes");
        blob.resize((size_t)n);
        in.bytes(blob.data(), blob.size());
    }
    const uint64_t digest = in.digest();
    uint8_t stored_bytes[8];
    src.read(stored_bytes, 8);
    uint64_t stored = 0;
    for (int i = 7; i >= 0; --i) stored = (stored << 8) | stored_bytes[i];
    if (stored != digest) corrupt("checksum mismatch (damaged or modified data)");
    if (!src.at_end()) corrupt("unexpected bytes after the end of the state");

    // The sampler first: its load is all-or-nothing and the cache is still untouched.
    std::vector<uint8_t> old_sampler;
    if (sampler) {
        old_sampler = sampler->save_state();
        sampler->load_state(blob.data(), blob.size());
    }

    // ---- pass 2: free the target sequences, pick cells, copy rows, commit ----
    auto snap = kv.snapshot();
    auto clear_targets = [&] {
        if (replace_all) kv.clear();
        else for (int32_t q : seqs) kv.seq_remove(q, 0, -1);
    };
    clear_targets();
    std::vector<int32_t> cells(h.n_cells);
    // The saved cell indices when they are free: the same layout gives bit-identical attention.
    bool same = true;
    for (uint32_t i = 0; i < h.n_cells && same; ++i) {
        same = index[i] < (uint32_t)kv.n_ctx() && kv.pos((int32_t)index[i]) < 0;
        cells[i] = (int32_t)index[i];
    }
    if (!same && !kv.find_free((int32_t)h.n_cells, cells)) {
        kv.restore(std::move(snap));
        if (sampler) sampler->load_state(old_sampler.data(), old_sampler.size());
        throw Error(Status::context_full, "cannot restore the session state: it needs " + std::to_string(h.n_cells) +
                    " free KV cells, only " + std::to_string(kv.n_ctx() - kv.used_cells()) +
                    " are free (other sequences hold the rest)");
    }
    auto undo = [&] {  // rows may have overwritten the targets' old cells: leave the targets empty
        kv.restore(std::move(snap));
        clear_targets();
        if (sampler) sampler->load_state(old_sampler.data(), old_sampler.size());
    };
    try {
        src.rewind();
        In in2(src);
        in2.skip(n_meta);
        // Only the target cells' rows are written (a GPU layer's are uploaded once per layer;
        // the rest of its rows stay on the device). On a failure the targets are left empty.
        for (int32_t l = 0; l < (int32_t)h.n_layer; ++l) {
            KvCache::HostRows rows(kv, l, KvCache::write, &cells);
            uint8_t* kd = static_cast<uint8_t*>(kv.k(l)->data);
            for (int32_t c : cells) in2.bytes(kd + (size_t)c * h.k_cell_bytes, h.k_cell_bytes);
            if (h.v_cell_bytes) {
                uint8_t* vd = static_cast<uint8_t*>(kv.v(l)->data);
                for (int32_t c : cells) in2.bytes(vd + (size_t)c * h.v_cell_bytes, h.v_cell_bytes);
            }
            rows.done();
        }
        if (h.flags & kFlagSampler) in2.skip(8 + blob.size());
        if (in2.digest() != digest) fail(Status::io_error, "the state changed while it was being loaded");
    } catch (const Error& e) {
        undo();
        throw Error(e.status, std::string(e.what()) + "; the sequences being restored were left empty");
    } catch (...) {
        undo();
        throw;
    }
    for (uint32_t i = 0; i < h.n_cells; ++i) {
        bool first = true;
        for (uint32_t w = 0; w < words; ++w)
            for (uint64_t m = masks[(size_t)i * words + w]; m; m &= m - 1) {
                const int32_t q = seqs[64 * w + __builtin_ctzll(m)];
                if (first) kv.occupy(cells[i], q, pos[i], tok[i]);
                else kv.add_seq(cells[i], q);
                first = false;
            }
    }
    s.forget_logits();
}

}  // namespace ikllm
