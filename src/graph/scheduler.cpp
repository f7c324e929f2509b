#include "graph/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "quant/type_traits.h"

namespace ikllm {

// ---- ValidityMap ---------------------------------------------------------------------------

void ValidityMap::split(uintptr_t at) {
    auto it = segs_.upper_bound(at);
    if (it == segs_.begin()) return;
    --it;
    if (it->first < at && at < it->second.hi) {
        const Seg right{it->second.hi, it->second.mask};
        it->second.hi = at;
        segs_.emplace(at, right);
    }
}

std::vector<ValidityMap::Piece> ValidityMap::missing(uintptr_t lo, uintptr_t hi, int dev) {
    std::vector<Piece> out;
    auto it = segs_.upper_bound(lo);
    if (it != segs_.begin()) --it;
    for (; it != segs_.end() && it->first < hi; ++it) {
        const uintptr_t a = std::max(lo, it->first), b = std::min(hi, it->second.hi);
        if (a < b && !(it->second.mask & (1u << dev))) out.push_back({a, b, it->second.mask});
    }
    return out;
}

void ValidityMap::add_holder(uintptr_t lo, uintptr_t hi, int dev) {
    split(lo);
    split(hi);
    for (auto it = segs_.lower_bound(lo); it != segs_.end() && it->first < hi; ++it) it->second.mask |= 1u << dev;
}

void ValidityMap::forget(uintptr_t lo, uintptr_t hi) {
    split(lo);
    split(hi);
    segs_.erase(segs_.lower_bound(lo), segs_.lower_bound(hi));
}

void ValidityMap::written(uintptr_t lo, uintptr_t hi, int dev) {
    if (lo >= hi) return;
    forget(lo, hi);
    segs_.emplace(lo, Seg{hi, 1u << dev});
}

int ValidityMap::sole_holder(uintptr_t p) const {
    auto it = segs_.upper_bound(p);
    if (it == segs_.begin()) return -1;
    --it;
    if (p >= it->second.hi) return -1;
    const uint32_t m = it->second.mask;
    if (m == 0 || (m & (m - 1))) return -1;
    return __builtin_ctz(m);
}

// ---- Scheduler -----------------------------------------------------------------------------

namespace {

// [lo, hi) of the bytes a tensor view covers.
std::pair<uintptr_t, uintptr_t> extent(const Tensor& t) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
    size_t row;
    const quant::TypeTraits* tt = quant::find_type(t.type);
    if (t.type == quant::T_I32 || t.type == quant::T_F32) row = 4 * (size_t)t.ne[0];
    else if (tt) row = quant::row_bytes(*tt, t.ne[0]);
    else row = t.nb[0] * (size_t)t.ne[0];
    size_t last = 0;
    for (int i = 1; i < 4; ++i) last += (size_t)(t.ne[i] - 1) * t.nb[i];
    return {lo, lo + last + row};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool is_weight_op_input(const Op& op, int slot) {
    switch (op.kind) {
        case OpKind::get_rows:
        case OpKind::mul_mat:
        case OpKind::mul_mat_heads: return slot == 0 || (op.kind == OpKind::mul_mat && slot == 2);
        case OpKind::mul_mat_swiglu: return slot == 0 || slot == 2;
        case OpKind::rms_norm: return slot == 1;
        case OpKind::moe_route: return slot == 1;
        default: return false;
    }
}

}  // namespace

Scheduler::Scheduler(std::vector<backend::Backend*> devices, std::vector<backend::Executor*> executors)
    : devices_(std::move(devices)), execs_(std::move(executors)) {
    staging_.resize(devices_.size());
    staging_used_.resize(devices_.size(), 0);
    const char* p = std::getenv("IKLLM_OP_PROFILE");
    prof_.on = p && *p && *p != '0';
}

Scheduler::~Scheduler() {
    if (prof_.on && prof_.runs > 0) {
        const double ms = 1e3 / (double)prof_.runs;
        std::fprintf(stderr,
                     "scheduler profile: %ld runs, host ms per run: total %.3f = scheduling %.3f + CPU slices %.3f + "
                     "issuing device slices %.3f + waiting for devices %.3f\n",
                     prof_.runs, prof_.total * ms, (prof_.total - prof_.cpu - prof_.device_issue - prof_.wait) * ms,
                     prof_.cpu * ms, prof_.device_issue * ms, prof_.wait * ms);
        if (stream_stats_.ops > 0)
            std::fprintf(stderr,
                         "scheduler profile: %ld products streamed host weights to a GPU (%.1f MiB, %.1f MiB of them straight from "
                         "page-locked weights; at most %.1f MiB at once)\n",
                         (long)stream_stats_.ops, (double)stream_stats_.bytes / 1048576.0, (double)stream_stats_.direct / 1048576.0,
                         (double)stream_stats_.most / 1048576.0);
    }
    for (size_t d = 1; d < execs_.size(); ++d) {
        try {
            execs_[d]->synchronize();
        } catch (...) {
        }
    }
}

void Scheduler::add_mirror(const void* host, size_t bytes, int device) {
    auto buf = devices_[(size_t)device]->alloc(bytes);
    devices_[(size_t)device]->fill_zero(buf->data(), bytes);
    void* dev = buf->data();
    regions_.push_back({reinterpret_cast<uintptr_t>(host), bytes, device, dev, true, std::move(buf)});
}

Scheduler::Region* Scheduler::region_of(uintptr_t lo, uintptr_t hi, int device) {
    for (Region& r : regions_)
        if (r.device == device && lo >= r.host && hi <= r.host + r.bytes) return &r;
    return nullptr;
}

// The mirror of [lo, hi) on a GPU: a persistent one (KV rows), or that of the arena block or
// output buffer of this run holding it, made on first use -- so a GPU holds copies only of the
// blocks its ops touch, and a batch too large for it leaves the smaller blocks' mirrors usable.
// Null when the range is neither (a weight on the device itself).
Scheduler::Region* Scheduler::mirror_of(uintptr_t lo, uintptr_t hi, int dev) {
    if (Region* r = region_of(lo, hi, dev)) return r;
    for (auto& [p, n] : transient_) {
        if (lo < p || hi > p + n) continue;
        std::unique_ptr<backend::Buffer> buf;
        for (auto it = spare_.begin(); it != spare_.end(); ++it)
            if ((*it)->size() >= n && (*it)->size() <= 2 * n + (1u << 20) && owner_of_spare(it->get()) == dev) {
                buf = std::move(*it);
                spare_.erase(it);
                break;
            }
        if (!buf) buf = alloc_for_batch(dev, n, n, "activations");
        void* d = buf->data();
        spare_owner_[buf.get()] = dev;
        regions_.push_back({p, n, dev, d, false, std::move(buf)});
        return &regions_.back();
    }
    return nullptr;
}

// Device memory for this run: `want` bytes, or at least `need` when the device has less left.
// Unused spares of the device (mirrors of an earlier, larger batch) go first when it is full, so a
// failed or large batch does not keep smaller ones from running; then a clear out-of-memory error.
std::unique_ptr<backend::Buffer> Scheduler::alloc_for_batch(int dev, size_t want, size_t need, const char* what) {
    for (int attempt = 0;; ++attempt) {
        const size_t n = attempt == 0 ? want : need;
        try {
            return devices_[(size_t)dev]->alloc(n);
        } catch (const std::bad_alloc&) {
        } catch (const Error& e) {
            if (e.status != Status::out_of_memory) throw;
        }
        if (attempt > 0 && !drop_spares(dev)) {
            const backend::Capabilities c = devices_[(size_t)dev]->capabilities();
            fail(Status::out_of_memory, c.name + ": " + std::to_string((need + (1u << 20) - 1) >> 20) +
                 " MiB more for this batch's " + what + " do not fit (" + std::to_string(c.memory_free >> 20) +
                 " MiB free): decode fewer tokens at once (n_batch) or keep fewer layers on this GPU");
        }
    }
}

bool Scheduler::drop_spares(int dev) {
    bool dropped = false;
    for (auto it = spare_.begin(); it != spare_.end();)
        if (owner_of_spare(it->get()) == dev) {
            spare_owner_.erase(it->get());
            it = spare_.erase(it);
            dropped = true;
        } else {
            ++it;
        }
    return dropped;
}

// Where a tensor's bytes are on `device`: weights placed there are used as they are; host
// memory goes through its mirror (made on first use for arena blocks and output buffers).
void* Scheduler::device_ptr(const Tensor& t, int device) {
    if (device == 0) return t.data;
    if (t.device == 0 && !streamed_.empty())
        if (auto it = streamed_.find(t.data); it != streamed_.end()) return it->second;
    const auto [lo, hi] = extent(t);
    if (Region* r = mirror_of(lo, hi, device)) return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(r->dev) + (lo - r->host));
    if (t.device == device) return t.data;  // a weight that lives on the device itself
    throw Error(Status::internal, std::string("scheduler: tensor '") + (t.name ? t.name : "") +
                "' has no memory on device " + std::to_string(device));
}

// Copies the parts of t's bytes that `device` does not hold from where they are current.
void Scheduler::ensure_on(const Tensor& t, int device) {
    const auto [lo, hi] = extent(t);
    if (device != 0 && !mirror_of(lo, hi, device)) return;  // device-resident (a weight)
    for (const ValidityMap::Piece& p : valid_.missing(lo, hi, device)) {
        const int from = __builtin_ctz(p.mask);  // the host when it holds the bytes
        flush();
        // From a GPU: read back first. GPU to GPU goes through the host copy (activations
        // crossing a layer split: one row of n_embd floats per token), which then holds them too.
        if (from != 0) to_host_from(p.lo, p.hi, from);
        if (device == 0) continue;
        const size_t n = p.hi - p.lo;
        Region* r = region_of(p.lo, p.hi, device);
        execs_[(size_t)device]->to_device(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(r->dev) + (p.lo - r->host)),
                                          reinterpret_cast<const void*>(p.lo), n);
        valid_.add_holder(p.lo, p.hi, device);
    }
}

// An op's inputs (and destination, which views may partly keep) made current on `device`. For
// the host, every read-back is queued first and each GPU waited for once: a routed-experts op
// on the CPU reads its activations, ids and weights back from the GPU in one round trip.
void Scheduler::ensure_inputs_on(const Op& op, int device) {
    const Tensor* ts[4] = {};
    for (int s = 0; s < 3; ++s)
        if (op.src[s] && !is_weight_op_input(op, s)) ts[s] = op.src[s];
    ts[3] = op.dst;
    if (device != 0) {
        for (const Tensor* t : ts)
            if (t) ensure_on(*t, device);
        return;
    }
    struct Readback {
        uintptr_t lo, hi;
        int from;
    };
    std::vector<Readback> todo;
    for (const Tensor* t : ts) {
        if (!t) continue;
        const auto [lo, hi] = extent(*t);
        for (const ValidityMap::Piece& p : valid_.missing(lo, hi, 0)) todo.push_back({p.lo, p.hi, __builtin_ctz(p.mask)});
    }
    if (todo.empty()) return;
    flush();
    const auto t0 = std::chrono::steady_clock::now();
    uint32_t waits = 0;
    for (const Readback& b : todo) {
        Region* r = region_of(b.lo, b.hi, b.from);
        if (!r) throw Error(Status::internal, "scheduler: no device copy to read back");
        execs_[(size_t)b.from]->to_host_queue(reinterpret_cast<void*>(b.lo),
                                              reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(r->dev) + (b.lo - r->host)),
                                              b.hi - b.lo);
        waits |= 1u << b.from;
    }
    for (size_t dev = 1; dev < execs_.size(); ++dev)
        if (waits & (1u << dev)) execs_[dev]->to_host_wait();
    if (prof_.on) prof_.wait += seconds_since(t0);
    for (const Readback& b : todo) valid_.add_holder(b.lo, b.hi, 0);
}

// Reads [lo, hi) back from device `from`'s mirror into host memory (waits for it).
void Scheduler::to_host_from(uintptr_t lo, uintptr_t hi, int from) {
    Region* r = region_of(lo, hi, from);
    if (!r) throw Error(Status::internal, "scheduler: no device copy to read back");
    const auto t0 = std::chrono::steady_clock::now();
    execs_[(size_t)from]->to_host(reinterpret_cast<void*>(lo),
                                  reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(r->dev) + (lo - r->host)), hi - lo);
    if (prof_.on) prof_.wait += seconds_since(t0);
    valid_.add_holder(lo, hi, 0);
}

namespace {
// Weight tensors a streamed op reads (matrix, bias / second matrix, experts).
std::vector<const Tensor*> streamed_weights(const Op& op) {
    if (op.kind == OpKind::moe_ffn) return {op.ex[0], op.ex[1], op.ex[2]};
    return {op.src[0], op.src[2]};
}
}  // namespace

// Whether the op streams: a matrix product on at least stream_min_tokens_ tokens whose weights
// are all in host memory, of an op and weight types GPU 1 runs.
bool Scheduler::streams(const Op& op) const {
    if (stream_min_tokens_ <= 0 || devices_.size() < 2) return false;
    const Tensor* w = nullptr;
    switch (op.kind) {
        case OpKind::mul_mat:
        case OpKind::mul_mat_swiglu: w = op.src[0]; break;
        case OpKind::moe_ffn: w = op.ex[0]; break;
        default: return false;
    }
    if (w->device != 0 || !op.src[1] || op.src[1]->ne[1] * op.src[1]->ne[2] < stream_min_tokens_) return false;
    if (op.kind == OpKind::moe_ffn && op.src[0]->ne[1] < stream_min_tokens_) return false;
    for (const Tensor* t : streamed_weights(op))
        if (t && (t->device != 0 || !devices_[1]->supports_weight_type(t->type))) return false;
    return devices_[1]->supports(op);
}

// Uploads the op's weights into the stream buffer (growing it between uses); false, and
// streaming off for this session, when the device has no memory for them.
bool Scheduler::stream_weights(const Op& op, int device) {
    streamed_.clear();
    std::vector<std::pair<const Tensor*, size_t>> todo;  // tensor, offset
    size_t need = 0;
    for (const Tensor* t : streamed_weights(op)) {
        if (!t || streamed_.count(t->data)) continue;
        const auto [lo, hi] = extent(*t);
        todo.emplace_back(t, need);
        streamed_[t->data] = nullptr;
        need += (hi - lo + 255) / 256 * 256;
    }
    flush();  // ops queued before read the buffer's previous contents: queue them first
    if (!stream_buf_ || stream_buf_->size() < need) {
        execs_[(size_t)device]->synchronize();
        stream_buf_.reset();
        try {
            stream_buf_ = devices_[(size_t)device]->alloc(need);
        } catch (const std::bad_alloc&) {
        } catch (const Error& e) {
            if (e.status != Status::out_of_memory) throw;
        }
        if (!stream_buf_) {
            stream_min_tokens_ = 0;
            streamed_.clear();
            return false;
        }
    }
    uint8_t* base = static_cast<uint8_t*>(stream_buf_->data());
    for (auto [t, off] : todo) {
        const auto [lo, hi] = extent(*t);
        stream_stats_.direct +=
            (int64_t)execs_[(size_t)device]->weights_to_device(base + off, reinterpret_cast<const void*>(lo), hi - lo);
        streamed_[t->data] = base + off;
        stream_stats_.bytes += (int64_t)(hi - lo);
    }
    stream_stats_.ops++;
    stream_stats_.most = std::max(stream_stats_.most, (int64_t)need);
    return true;
}

// The op's device: that of the weights it reads (or the GPU that their streamed copy goes to,
// see streams()), else of the KV cache it touches, else where its main input was last written
// (ties: the previous op's device).
int Scheduler::place(const Op& op, int prev) const {
    if (streams(op)) return 1;
    switch (op.kind) {
        case OpKind::get_rows:
        case OpKind::mul_mat:
        case OpKind::mul_mat_swiglu:
        case OpKind::mul_mat_heads: return op.src[0]->device;
        case OpKind::moe_ffn: return op.ex[0]->device;
        case OpKind::rms_norm:
            if (op.src[1]) return op.src[1]->device;
            break;
        case OpKind::kv_store: return op.dst->device;
        case OpKind::attention: return op.src[1]->device;
        default: break;
    }
    const Tensor* in = op.kind == OpKind::rope ? op.dst : op.src[0];
    if (in) {
        const int d = valid_.sole_holder(reinterpret_cast<uintptr_t>(in->data));
        if (d >= 0) return d;
    }
    return prev < 0 ? 0 : prev;
}

int Scheduler::owner_of_spare(const backend::Buffer* b) const {
    auto it = spare_owner_.find(b);
    return it == spare_owner_.end() ? -1 : it->second;
}

const void* Scheduler::stage(const void* host, size_t bytes, int device) {
    if (!host || bytes == 0) return host;
    auto key = std::make_pair(host, device);
    auto it = staged_.find(key);
    if (it != staged_.end()) return it->second;
    const size_t need = (bytes + 255) / 256 * 256;
    auto& buf = staging_[(size_t)device];
    size_t& used = staging_used_[(size_t)device];
    if (!buf || used + need > buf->size()) {
        // Grow only between runs' uses: wait for queued work that may read the old buffer.
        execs_[(size_t)device]->synchronize();
        const size_t size = std::max<size_t>({need * 2, (buf ? buf->size() * 2 : 0), (size_t)1 << 20});
        if (buf && used > 0) {
            // Keep the old buffer alive (already staged pointers still refer to it).
            owned_.push_back(std::move(buf));
        }
        buf = alloc_for_batch(device, size, need, "small operands");
        used = 0;
    }
    void* dst = static_cast<uint8_t*>(buf->data()) + used;
    used += need;
    execs_[(size_t)device]->to_device(dst, host, bytes);
    staged_[key] = dst;
    return dst;
}

Op Scheduler::translate(const Op& op, int device, Graph& g) {
    Op d = op;
    auto tr = [&](Tensor* t) -> Tensor* {
        if (!t) return nullptr;
        Tensor* c = g.new_tensor();
        *c = *t;
        c->data = device_ptr(*t, device);
        return c;
    };
    d.dst = tr(op.dst);
    for (int i = 0; i < 3; ++i) d.src[i] = tr(op.src[i]);
    for (int i = 0; i < 3; ++i) d.ex[i] = tr(op.ex[i]);
    d.aux = tr(op.aux);
    d.i32 = static_cast<const int32_t*>(stage(op.i32, sizeof(int32_t) * (size_t)op.n_i32, device));
    if (op.kind == OpKind::attention) {
        d.seq_ids = static_cast<const int32_t*>(stage(op.seq_ids, sizeof(int32_t) * (size_t)op.n_i32, device));
        d.kv.cell_pos = static_cast<const int32_t*>(stage(op.kv.cell_pos, sizeof(int32_t) * (size_t)op.kv.n_cells, device));
        d.kv.cell_seqs = static_cast<const uint64_t*>(
            stage(op.kv.cell_seqs, sizeof(uint64_t) * (size_t)op.kv.n_cells * (size_t)op.kv.seq_words, device));
    }
    if (op.kind == OpKind::rope && op.rope.freq_factors)
        d.rope.freq_factors = static_cast<const float*>(stage(op.rope.freq_factors, sizeof(float) * (size_t)(op.rope.n_dims / 2), device));
    return d;
}

void Scheduler::flush() {
    if (seg_device_ < 0) return;
    const int d = seg_device_;
    seg_device_ = -1;
    if (cancel_ && *cancel_) throw Error(Status::cancelled, "cancelled");
    const auto t0 = std::chrono::steady_clock::now();
    if (d == 0) {
        if (cpu_end_ > cpu_begin_) execs_[0]->run(*graph_, cpu_begin_, cpu_end_, cancel_);
        if (prof_.on) prof_.cpu += seconds_since(t0);
    } else if (seg_graph_ && !seg_graph_->ops.empty()) {
        // Device slices are queued whole; cancellation is checked between slices (above).
        execs_[(size_t)d]->run(*seg_graph_, 0, seg_graph_->ops.size(), nullptr);
        if (prof_.on) prof_.device_issue += seconds_since(t0);
    }
    seg_graph_.reset();
}

void Scheduler::run(const Graph& graph, Arena& arena, const std::vector<std::pair<void*, size_t>>& outputs,
                    const volatile int32_t* cancel) {
    const auto t_run = std::chrono::steady_clock::now();
    graph_ = &graph;
    cancel_ = cancel;
    staged_.clear();
    std::fill(staging_used_.begin(), staging_used_.end(), 0);
    // The arena blocks and this run's output buffers: GPUs mirror those their ops touch
    // (mirror_of, on first use).
    transient_.clear();
    arena.for_each_block([&](const void* p, size_t n) {
        if (n) transient_.emplace_back(reinterpret_cast<uintptr_t>(p), n);
    });
    for (auto& [p, n] : outputs)
        if (n) transient_.emplace_back(reinterpret_cast<uintptr_t>(p), n);
    const std::vector<std::pair<uintptr_t, size_t>> transient = transient_;
    // Output buffers move between runs: mirrors of ranges that are not this run's are retired,
    // their device memory kept for reuse (no allocation per decode step), so no stale mirror
    // can overlap a range of this run.
    for (auto it = regions_.begin(); it != regions_.end();) {
        const bool current = it->persistent || std::find(transient.begin(), transient.end(),
                                                         std::make_pair(it->host, it->bytes)) != transient.end();
        if (current) {
            ++it;
            continue;
        }
        spare_.push_back(std::move(it->buffer));
        it = regions_.erase(it);
    }
    // Keep a few for reuse; the last run synchronized every device, so none is still read.
    while (spare_.size() > kMaxSpare) {
        spare_owner_.erase(spare_.front().get());
        spare_.erase(spare_.begin());
    }
    for (auto& [p, n] : transient) valid_.forget(p, p + n);

    int prev = -1;
    size_t next_recycled = 0;
    try {
        for (size_t i = 0; i < graph.ops.size(); ++i) {
            if (cancel && *cancel) throw Error(Status::cancelled, "cancelled");
            // Activation memory reused from here on: its old bytes need no copy anywhere.
            for (; next_recycled < graph.recycled.size() && graph.recycled[next_recycled].op <= i; ++next_recycled) {
                const auto lo = reinterpret_cast<uintptr_t>(graph.recycled[next_recycled].data);
                valid_.forget(lo, lo + graph.recycled[next_recycled].bytes);
            }
            const Op& op = graph.ops[i];
            int d = place(op, prev);
            streamed_.clear();
            if (d != 0 && streams(op) && !stream_weights(op, d)) d = 0;  // no device memory: on the CPU
            if (d != 0 && !devices_[(size_t)d]->supports(op))
                throw Error(Status::unsupported, std::string("op on device ") + std::to_string(d) + " is not supported there (" +
                            (op.src[0] && op.src[0]->name ? op.src[0]->name : "") + ")");
            ensure_inputs_on(op, d);
            if (seg_device_ != d) {
                flush();
                seg_device_ = d;
                if (d == 0) cpu_begin_ = cpu_end_ = i;
                else seg_graph_ = std::make_unique<Graph>();
            }
            if (d == 0) cpu_end_ = i + 1;
            else seg_graph_->ops.push_back(translate(op, d, *seg_graph_));
            if (op.dst) {
                const auto [lo, hi] = extent(*op.dst);
                valid_.written(lo, hi, d);
            }
            if (op.aux) {
                const auto [lo, hi] = extent(*op.aux);
                valid_.written(lo, hi, d);
            }
            prev = d;
        }
        flush();
        for (auto& [p, n] : outputs) {
            Tensor t;
            t.type = quant::T_I32;  // byte range of n bytes
            t.data = p;
            t.ne[0] = (int64_t)(n / 4);
            ensure_on(t, 0);
        }
        const auto t_wait = std::chrono::steady_clock::now();
        for (size_t dev = 1; dev < execs_.size(); ++dev) execs_[dev]->synchronize();
        if (prof_.on) prof_.wait += seconds_since(t_wait);
    } catch (...) {
        seg_graph_.reset();
        seg_device_ = -1;
        for (size_t dev = 1; dev < execs_.size(); ++dev) {
            try {
                execs_[dev]->synchronize();
            } catch (...) {
            }
        }
        for (auto& [p, n] : transient) valid_.forget(p, p + n);
        graph_ = nullptr;
        throw;
    }
    for (auto& [p, n] : transient) valid_.forget(p, p + n);
    graph_ = nullptr;
    if (prof_.on) {
        prof_.total += seconds_since(t_run);
        prof_.runs++;
    }
}

namespace {
Tensor byte_range(const void* p, size_t n) {
    Tensor t;
    t.type = quant::T_I8;
    t.data = const_cast<void*>(p);
    t.ne[0] = (int64_t)n;
    return t;
}
}  // namespace

void Scheduler::mirror_to_host(const void* p, size_t n) {
    if (n) ensure_on(byte_range(p, n), 0);
}

void Scheduler::mirror_host_written(const void* p, size_t n) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    if (n) valid_.written(lo, lo + n, 0);
}

void Scheduler::mirror_to_device_only(const void* p, size_t n) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
    if (!n) return;
    const auto r = std::find_if(regions_.begin(), regions_.end(),
                                [&](const Region& x) { return x.persistent && lo >= x.host && hi <= x.host + x.bytes; });
    if (r == regions_.end()) throw Error(Status::internal, "scheduler: no device copy of these KV rows");
    const int dev = r->device;
    ensure_on(byte_range(p, n), dev);
    execs_[(size_t)dev]->synchronize();  // the host bytes may go once the copies are done
    valid_.written(lo, hi, dev);
}

}  // namespace ikllm
