// The CUDA backend: device buffers, an executor that runs op-list slices on one stream, and
// the plug-in entry points libikllm.so looks up with dlsym. Failures are reported as
// std::runtime_error / std::bad_alloc (types shared with the host library; the engine's own
// error type is not, since each shared object has its own copy of its type info).
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"
#include "act_round_cache.h"
#include "act_round_kernel.cuh"
#include "matmul_kernels.cuh"
#include "cuda_ops.cuh"

namespace ikllm::cuda {

namespace {

using backend::Buffer;
using backend::Capabilities;
using backend::Executor;
using backend::OpObserver;

// [lo, hi) of the bytes an op's output may cover (8 bytes per element unless F32: an over-estimate
// only drops a rounded copy early).
std::pair<uintptr_t, uintptr_t> dst_extent(const Tensor& t) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
    uint64_t last = 0;
    for (int i = 1; i < 4; ++i) last += (uint64_t)(t.ne[i] - 1) * t.nb[i];
    return {lo, lo + last + (uint64_t)t.ne[0] * (t.type == 0 /* F32 */ ? 4 : 8)};
}

class DeviceBuffer final : public Buffer {
public:
    DeviceBuffer(int device, size_t bytes) : device_(device), size_(bytes) {
        IKLLM_CUDA_CHECK(cudaSetDevice(device));
        const cudaError_t e = cudaMalloc(&data_, bytes ? bytes : 1);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            if (e == cudaErrorMemoryAllocation) throw std::bad_alloc();
            check(e, "cudaMalloc");
        }
    }
    ~DeviceBuffer() override {
        // Freed from whichever device is current to the caller: select ours (several GPUs).
        if (cudaSetDevice(device_) != cudaSuccess) (void)cudaGetLastError();
        cudaFree(data_);
    }
    void* data() override { return data_; }
    size_t size() const override { return size_; }

private:
    int device_;
    void* data_ = nullptr;
    size_t size_;
};

// Device memory that did not fit, with what and how much (a std::bad_alloc, so the host library
// reports IKLLM_ERR_OUT_OF_MEMORY with this text).
class DeviceOutOfMemory final : public std::bad_alloc {
public:
    explicit DeviceOutOfMemory(std::string msg) : msg_(std::move(msg)) {}
    const char* what() const noexcept override { return msg_.c_str(); }

private:
    std::string msg_;
};

// Temporaries of one op: chunks grow on demand and are reused by the next op (the stream
// orders the next op's kernels after this one's).
class ChunkScratch final : public Scratch {
public:
    explicit ChunkScratch(int device) : device_(device) {}
    // Frees every chunk (after a failed slice: a batch that did not fit keeps nothing; the
    // caller synchronized the stream).
    void drop() {
        chunks_.clear();
        chunk_ = used_ = kept_chunk_ = kept_used_ = 0;
    }
    // Back to the start, or to the end of what keep() reserved (until release()).
    void reset() {
        chunk_ = kept_chunk_;
        used_ = kept_used_;
    }
    void keep() override {
        kept_chunk_ = chunk_;
        kept_used_ = used_;
    }
    void release() { kept_chunk_ = kept_used_ = 0; }
    void* alloc(size_t bytes) override {
        bytes = (bytes + 255) / 256 * 256;
        while (chunk_ < chunks_.size()) {
            if (used_ + bytes <= chunks_[chunk_]->size()) {
                void* p = static_cast<char*>(chunks_[chunk_]->data()) + used_;
                used_ += bytes;
                return p;
            }
            ++chunk_;
            used_ = 0;
        }
        // A chunk of kChunk at least, or just what is asked for when the device has less left
        // (small GPUs, or one nearly filled by weights and cache).
        const size_t size = bytes > kChunk ? bytes : kChunk;
        try {
            chunks_.push_back(std::make_unique<DeviceBuffer>(device_, size));
        } catch (const std::bad_alloc&) {
            try {
                chunks_.push_back(std::make_unique<DeviceBuffer>(device_, bytes));
            } catch (const std::bad_alloc&) {
                size_t free_b = 0, total_b = 0;
                if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
                throw DeviceOutOfMemory("CUDA" + std::to_string(device_) + ": " + std::to_string((bytes + (1u << 20) - 1) >> 20) +
                                        " MiB of temporaries for this batch do not fit (" + std::to_string(free_b >> 20) +
                                        " MiB free): decode fewer tokens at once (n_batch) or keep fewer layers on this GPU");
            }
        }
        chunk_ = chunks_.size() - 1;
        used_ = bytes;
        return chunks_.back()->data();
    }

private:
    static constexpr size_t kChunk = 64u << 20;
    int device_;
    std::vector<std::unique_ptr<DeviceBuffer>> chunks_;
    size_t chunk_ = 0, used_ = 0;
    size_t kept_chunk_ = 0, kept_used_ = 0;
};

class CudaExecutor final : public Executor {
public:
    explicit CudaExecutor(int device) : device_(device), scratch_(device) {
        IKLLM_CUDA_CHECK(cudaSetDevice(device));
        IKLLM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        IKLLM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
        const char* r = std::getenv("IKLLM_CUDA_ACT_ROUND");
        act_round_ = !(r && std::string(r) == "0");
        const char* p = std::getenv("IKLLM_OP_PROFILE");
        profile_ = p && *p && *p != '0';
        const char* st = std::getenv("IKLLM_CUDA_STAGED");
        staged_ = st && std::string(st) == "1";
        const char* i8 = std::getenv("IKLLM_CUDA_INT8");
        int8_ = !(i8 && std::string(i8) == "0");
        const char* mma = std::getenv("IKLLM_CUDA_INT8_MMA");
        int8_mma_ = !(mma && std::string(mma) == "0");
        const char* share = std::getenv("IKLLM_CUDA_ACT_SHARE");
        act_share_ = !(share && std::string(share) == "0");
        const char* fuse = std::getenv("IKLLM_CUDA_FUSE");
        fuse_ = !(fuse && std::string(fuse) == "0");
        const char* am = std::getenv("IKLLM_CUDA_ATTN_MMA");
        attn_mma_ = !(am && std::string(am) == "0");
        const char* ks = std::getenv("IKLLM_CUDA_MMA_KSUB");
        mma_k_sub_ = ks && std::string(ks) == "2" ? 2 : 1;
        // (both Hopper instructions: griddepcontrol, cp.async.bulk.prefetch)
        int cc_major = 0;
        IKLLM_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, device));
        const char* pdl = std::getenv("IKLLM_CUDA_PDL");
        pdl_ = cc_major >= 9 && pdl && std::string(pdl) == "1";
        const char* l2 = std::getenv("IKLLM_CUDA_L2_PREFETCH");
        l2_prefetch_ = cc_major >= 9 && l2 && std::string(l2) == "1";
        const char* mu = std::getenv("IKLLM_CUDA_MV_UNROLL");
        mv_unroll_ = mu && std::string(mu) == "4" ? 4 : 2;
        const char* g = std::getenv("IKLLM_CUDA_GRAPHS");
        graphs_ = !(g && std::string(g) == "0") && !profile_;
    }
    ~CudaExecutor() override {
        if (cudaSetDevice(device_) != cudaSuccess) (void)cudaGetLastError();
        cudaStreamSynchronize(stream_);
        if (profile_) {
            harvest_timings();
            print_profile();
        }
        for (cudaEvent_t e : events_) cudaEventDestroy(e);
        for (auto& c : graph_cache_) cudaGraphExecDestroy(c.exec);
        cudaStreamDestroy(stream_);
        for (auto& [lo, r] : locked_)
            if (r.ours) cudaHostUnregister(reinterpret_cast<void*>(lo));
        if (pinned_) cudaFreeHost(pinned_);
    }
    // Observers (importance-matrix collection) see CPU ops only.
    void set_observer(OpObserver* observer) override { observer_ = observer; }
    void run(const Graph& graph, size_t begin, size_t end, const volatile int32_t* cancel) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        OpEnv env;
        env.stream = stream_;
        env.scratch = &scratch_;
        env.sm_count = sm_count_;
        env.act_round = act_round_;
        env.staged = staged_;
        env.mma_k_sub = mma_k_sub_;
        env.int8 = int8_;
        env.int8_mma = int8_mma_;
        env.fuse = fuse_;
        env.attn_mma = attn_mma_;
        env.pdl = pdl_;
        env.l2_prefetch = l2_prefetch_;
        env.mv_unroll = mv_unroll_;
        const auto t0 = std::chrono::steady_clock::now();
        const bool capture = graphs_ && capturable(graph, begin, end);
        if (capture) IKLLM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
        try {
            issue(graph, begin, end, cancel, env);
        } catch (...) {
            if (capture) {
                cudaGraph_t g = nullptr;
                (void)cudaStreamEndCapture(stream_, &g);
                if (g) cudaGraphDestroy(g);
                (void)cudaGetLastError();
            }
            // What the slice grew its temporaries to stays nowhere: the next, smaller batch may
            // need that memory (its mirrors and cache), and kept rounded copies die with it.
            act_cache_.clear();
            pending_copy_ = {};
            if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
            scratch_.drop();
            throw;
        }
        if (capture) launch_captured(signature(graph, begin, end));
        if (profile_) host_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    void issue(const Graph& graph, size_t begin, size_t end, const volatile int32_t* cancel, const OpEnv& slice_env) {
        // A rounded copy of activations lives from one product to the next at most: any other op
        // (and the host, between slices) may write rows it was made from.
        act_cache_.clear();
        pending_copy_ = {};  // (an earlier slice may have thrown before storing one)
        for (size_t i = begin; i < end;) {
            if (cancel && *cancel) throw std::runtime_error("cancelled");
            const Op& op = graph.ops[i];
            const Op* next = i + 1 < end ? &graph.ops[i + 1] : nullptr;
            OpEnv env = slice_env;
            env.batch_invariant = op.batch_invariant;
            const bool product = op.kind == OpKind::mul_mat || op.kind == OpKind::mul_mat_swiglu;
            if (!product) act_cache_.clear();
            if (!act_cache_.valid()) scratch_.release();
            env.act_cache = product && act_share_ ? &act_cache_ : nullptr;
            scratch_.reset();
            if (profile_) record_event((int)op.kind);
            const size_t ran = run_ops(op, next, env);
            for (size_t k = 0; k < ran; ++k)
                if (const Tensor* d = graph.ops[i + k].dst) {
                    const auto [lo, hi] = dst_extent(*d);
                    act_cache_.written(lo, hi);
                }
            if (pending_copy_.x) {  // the op wrote the next product's rounded copy (stored after its own writes)
                act_cache_.store(pending_key_, pending_copy_);
                scratch_.keep();
                pending_copy_ = {};
            }
            if (profile_) record_event(-1);
            i += ran;
        }
    }
    // Runs op, or op and next as one launch (OpEnv::fuse; cuda_ops.cuh): the number of ops run.
    size_t run_ops(const Op& op, const Op* next, const OpEnv& env) {
        if (env.fuse && next) {
            if (mul_mat_add_fusable(op, *next)) {
                run_mul_mat_add(op, *next, env);
                return 2;
            }
            if (rope_pair_fusable(op, *next)) {
                run_rope_pair(op, *next, env);
                return 2;
            }
            if (kv_store_pair_fusable(op, *next)) {
                run_kv_store_pair(op, *next, env);
                return 2;
            }
            // rms_norm or the swiglu of gate/up whose output the next product rounds: the op
            // writes the rounded copy too.
            const Tensor* x = next->src[1];
            const bool writes_rows = op.kind == OpKind::rms_norm || op.kind == OpKind::mul_mat_swiglu;
            if (writes_rows && act_share_ && x && op.dst && x->data == op.dst->data &&
                x->ne[0] == op.dst->ne[0] && x->ne[1] == op.dst->ne[1] && x->nb[1] == op.dst->nb[1] &&
                op.dst->ne[2] == 1 && op.dst->ne[3] == 1) {
                OpEnv penv = env;
                penv.batch_invariant = next->batch_invariant;
                if (product_shared_rounding(*next, penv, &pending_key_)) {
                    pending_copy_ = alloc_rounded_copy(pending_key_, 1, scratch_);
                    ActRoundOut ro;
                    ro.mode = pending_key_.mode;
                    ro.f16 = pending_key_.f16;
                    ro.x = pending_copy_.x;
                    ro.q = pending_copy_.q;
                    ro.d = pending_copy_.d;
                    if (op.kind == OpKind::rms_norm) run_rms_norm(op, env, &ro);
                    else run_mul_mat_swiglu(op, env, &ro);
                    return 1;
                }
            }
        }
        switch (op.kind) {
            case OpKind::get_rows: run_get_rows(op, env); break;
            case OpKind::rms_norm: run_rms_norm(op, env); break;
            case OpKind::mul_mat: run_mul_mat(op, env); break;
            case OpKind::add: run_add(op, env); break;
            case OpKind::swiglu: run_swiglu(op, env); break;
            case OpKind::rope: run_rope(op, env); break;
            case OpKind::kv_store: run_kv_store(op, env); break;
            case OpKind::attention: run_attention(op, env); break;
            case OpKind::gather_rows: run_gather_rows(op, env); break;
            case OpKind::mul_mat_swiglu: run_mul_mat_swiglu(op, env); break;
            case OpKind::mul_mat_heads: run_mul_mat_heads(op, env); break;
            case OpKind::moe_route: run_moe_route(op, env); break;
            case OpKind::moe_ffn: run_moe_ffn(op, env); break;
            case OpKind::copy: run_copy(op, env); break;
        }
        return 1;
    }
    // Through pinned memory, so the copy is truly asynchronous (a copy from pageable memory
    // would wait for the stream's queued work); the staging space is reused after synchronize().
    // Every entry point selects this executor's device first: with several GPUs the calling
    // thread's current device is whichever ran last.
    void to_device(void* dev, const void* host, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        uint8_t* stage = staging(n);
        std::memcpy(stage, host, n);
        IKLLM_CUDA_CHECK(cudaMemcpyAsync(dev, stage, n, cudaMemcpyHostToDevice, stream_));
    }
    void to_host(void* host, const void* dev, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        IKLLM_CUDA_CHECK(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream_));
        sync_stream();
    }
    // Into the pinned staging space (a copy into pageable memory would return only once done,
    // one round trip each); to_host_wait copies the bytes on.
    void to_host_queue(void* host, const void* dev, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        uint8_t* stage = staging(n);
        IKLLM_CUDA_CHECK(cudaMemcpyAsync(stage, dev, n, cudaMemcpyDeviceToHost, stream_));
        readbacks_.push_back(Readback{host, stage, n});
    }
    void to_host_wait() override {
        if (readbacks_.empty()) return;
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        sync_stream();
    }
    void synchronize() override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        sync_stream();
    }
    // Streamed host weights: the whole pages inside the range are page-locked on first use (kept
    // until this executor goes) and copied by DMA straight from the weights; the partial pages at
    // the ends, and ranges the driver will not lock, go through the staging buffer as to_device.
    // (Through staging, a 6 GB expert layer meant a 6 GB pinned buffer and a one-thread memcpy.)
    size_t weights_to_device(void* dev, const void* host, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        const uintptr_t lo = reinterpret_cast<uintptr_t>(host), hi = lo + n;
        const uintptr_t page = host_page_size();
        const uintptr_t plo = (lo + page - 1) / page * page, phi = hi / page * page;
        if (phi <= plo || !page_locked(plo, phi)) {
            to_device(dev, host, n);
            return 0;
        }
        uint8_t* d = static_cast<uint8_t*>(dev);
        if (plo > lo) to_device(d, host, plo - lo);
        IKLLM_CUDA_CHECK(cudaMemcpyAsync(d + (plo - lo), reinterpret_cast<const void*>(plo), phi - plo, cudaMemcpyHostToDevice, stream_));
        if (hi > phi) to_device(d + (phi - lo), reinterpret_cast<const void*>(phi), hi - phi);
        return phi - plo;
    }

private:
    // n bytes of the pinned staging space; when it is full, after waiting for the stream (and so
    // for every queued copy through it), grown when too small.
    uint8_t* staging(size_t n) {
        const size_t need = (n + 255) / 256 * 256;
        if (pinned_used_ + need > pinned_size_) {
            sync_stream();
            if (need > pinned_size_) {
                if (pinned_) cudaFreeHost(pinned_);
                pinned_ = nullptr;
                pinned_size_ = 0;
                const size_t size = std::max<size_t>(need, 4u << 20);
                IKLLM_CUDA_CHECK(cudaMallocHost(&pinned_, size));
                pinned_size_ = size;
            }
        }
        uint8_t* stage = static_cast<uint8_t*>(pinned_) + pinned_used_;
        pinned_used_ += need;
        return stage;
    }
    // Waits for the stream; then the queued read-backs' bytes go to their host memory and the
    // staging space is free again.
    void sync_stream() {
        const cudaError_t e = cudaStreamSynchronize(stream_);
        if (e == cudaSuccess)
            for (const Readback& r : readbacks_) std::memcpy(r.host, r.stage, r.n);
        readbacks_.clear();
        pinned_used_ = 0;
        IKLLM_CUDA_CHECK(e);
        if (profile_) harvest_timings();
    }
    struct Readback {
        void* host;
        const void* stage;
        size_t n;
    };
    std::vector<Readback> readbacks_;  // to_host_queue's copies, in the staging space
    struct Locked {
        uintptr_t hi;
        bool ok;    // page-locked (by us, or already by another executor: cudaErrorHostMemoryAlreadyRegistered)
        bool ours;  // registered here: unregistered when this executor goes
    };
    static uintptr_t host_page_size() {
        const long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? (uintptr_t)p : 4096;
    }
    // Whether [lo, hi) (whole pages) is page-locked, registering it on first use. A range that
    // overlaps an earlier one only partly is not registered again (the driver refuses overlaps).
    bool page_locked(uintptr_t lo, uintptr_t hi) {
        auto it = locked_.upper_bound(lo);
        if (it != locked_.begin()) {
            const auto p = std::prev(it);
            if (lo < p->second.hi) return hi <= p->second.hi && p->second.ok;
        }
        if (it != locked_.end() && it->first < hi) return false;
        int ro = 0;
        unsigned flags = cudaHostRegisterDefault;
        if (cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, device_) == cudaSuccess && ro)
            flags |= cudaHostRegisterReadOnly;  // weights of a read-only file mapping can be locked too
        else
            (void)cudaGetLastError();
        const cudaError_t e = cudaHostRegister(reinterpret_cast<void*>(lo), hi - lo, flags);
        if (e != cudaSuccess) (void)cudaGetLastError();  // (not sticky: nothing ran)
        const bool ok = e == cudaSuccess || e == cudaErrorHostMemoryAlreadyRegistered;
        locked_[lo] = Locked{hi, ok, e == cudaSuccess};
        return ok;
    }
    std::map<uintptr_t, Locked> locked_;  // page-locked ranges of streamed weights, by start

    // CUDA graphs (IKLLM_CUDA_GRAPHS=0 turns them off): a slice whose ops never wait for the
    // host is captured and launched as one graph, so the GPU runs its kernels back to back
    // instead of waiting for each launch. A generation step repeats the same kernels with new
    // parameters (positions, cache length), so the executable graph of the last slice with the
    // same op sequence is updated in place (cheap) rather than instantiated again.
    // Generation slices only (every op on at most 8 tokens): prompt batches gain nothing from
    // saving launches and ran slower as graphs (H200, llama-8b pp512: 1 960 -> 1 385 t/s).
    static bool capturable(const Graph& graph, size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            const Op& op = graph.ops[i];
            const Tensor* t = op.kind == OpKind::kv_store ? op.src[0] : op.dst;  // (a cache's rows are cells)
            if (!t) return false;
            const bool per_head = op.kind == OpKind::rope || op.kind == OpKind::mul_mat_heads;  // [d, heads, tokens]
            if ((per_head ? t->ne[2] : t->ne[1]) > 8) return false;
        }
        return end > begin;
    }
    static uint64_t signature(const Graph& graph, size_t begin, size_t end) {
        uint64_t h = 1469598103934665603ull ^ (end - begin);
        for (size_t i = begin; i < end; ++i) h = (h ^ (uint64_t)graph.ops[i].kind) * 1099511628211ull;
        return h;
    }
    void launch_captured(uint64_t sig) {
        cudaGraph_t g = nullptr;
        IKLLM_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
        struct Destroy {
            cudaGraph_t g;
            ~Destroy() { cudaGraphDestroy(g); }
        } destroy{g};
        CachedGraph* entry = nullptr;
        for (auto& c : graph_cache_)
            if (c.sig == sig) entry = &c;
        if (entry) {
            cudaGraphExecUpdateResultInfo info{};
            if (cudaGraphExecUpdate(entry->exec, g, &info) != cudaSuccess) {
                // Another topology (e.g. attention now split over several blocks): start anew.
                (void)cudaGetLastError();
                cudaGraphExecDestroy(entry->exec);
                entry->exec = nullptr;
            }
        } else {
            if (graph_cache_.size() >= kGraphCache) {
                cudaGraphExecDestroy(graph_cache_.front().exec);
                graph_cache_.erase(graph_cache_.begin());
            }
            graph_cache_.push_back({sig, nullptr});
            entry = &graph_cache_.back();
        }
        if (!entry->exec) IKLLM_CUDA_CHECK(cudaGraphInstantiate(&entry->exec, g, 0));
        IKLLM_CUDA_CHECK(cudaGraphLaunch(entry->exec, stream_));
    }
    struct CachedGraph {
        uint64_t sig;
        cudaGraphExec_t exec;
    };
    static constexpr size_t kGraphCache = 8;
    bool graphs_ = true;
    std::vector<CachedGraph> graph_cache_;

    // IKLLM_OP_PROFILE=1: device time per op kind (events around every op) and host time spent
    // issuing them, printed to stderr when the executor goes.
    static constexpr int kKinds = 32;
    void record_event(int kind) {
        if (n_events_ == events_.size()) {
            cudaEvent_t e;
            IKLLM_CUDA_CHECK(cudaEventCreate(&e));
            events_.push_back(e);
        }
        IKLLM_CUDA_CHECK(cudaEventRecord(events_[n_events_], stream_));
        event_kind_.resize(events_.size());
        event_kind_[n_events_++] = kind;
    }
    void harvest_timings() {
        for (size_t i = 0; i + 1 < n_events_; ++i) {
            const int k = event_kind_[i];
            if (k < 0 || k >= kKinds || event_kind_[i + 1] != -1) continue;
            float ms = 0;
            if (cudaEventElapsedTime(&ms, events_[i], events_[i + 1]) == cudaSuccess) {
                prof_ms_[k] += ms;
                prof_n_[k]++;
            } else {
                (void)cudaGetLastError();
            }
        }
        n_events_ = 0;
    }
    void print_profile() const {
        double total = 0;
        for (double v : prof_ms_) total += v;
        std::fprintf(stderr, "op profile (CUDA executor, device time; host time issuing ops %.3f s):\n", host_s_);
        for (int k = 0; k < kKinds; ++k)
            if (prof_n_[k])
                std::fprintf(stderr, "  %-15s %9.3f s %5.1f %%  %ld calls\n", op_kind_name((OpKind)k), prof_ms_[k] / 1e3,
                             total > 0 ? 100 * prof_ms_[k] / total : 0.0, prof_n_[k]);
    }
    bool profile_ = false;
    std::vector<cudaEvent_t> events_;
    std::vector<int> event_kind_;
    size_t n_events_ = 0;
    double prof_ms_[kKinds] = {};
    long prof_n_[kKinds] = {};
    double host_s_ = 0;

    int device_;
    cudaStream_t stream_ = nullptr;
    int sm_count_ = 0;
    bool act_round_ = true;
    bool staged_ = false;
    int mma_k_sub_ = 1;
    bool int8_ = false;
    bool int8_mma_ = false;
    bool attn_mma_ = true;
    bool pdl_ = false, l2_prefetch_ = false;
    int mv_unroll_ = 2;
    ChunkScratch scratch_;
    ActRoundCache act_cache_;  // the last product's rounded activations (act_round_cache.h)
    ActRoundKey pending_key_;  // a rounded copy an op wrote for the next product, stored after it ran
    ActRoundCopy pending_copy_;
    bool act_share_ = true;    // IKLLM_CUDA_ACT_SHARE=0: every product rounds its own copy
    bool fuse_ = true;         // IKLLM_CUDA_FUSE=0: no fused launches (OpEnv::fuse)
    OpObserver* observer_ = nullptr;
    void* pinned_ = nullptr;
    size_t pinned_size_ = 0, pinned_used_ = 0;
};

bool is_kv_type(uint32_t t) { return t == 0 || t == 1 || t == 8 || t == 30; }  // f32 f16 q8_0 bf16

// A kernel to ask the runtime whether this module has code the device can run.
__global__ void probe_kernel() {}

#ifndef IKLLM_CUDA_ARCHS
#define IKLLM_CUDA_ARCHS "?"
#endif

class CudaBackend final : public backend::Backend {
public:
    explicit CudaBackend(int device) : device_(device) {
        IKLLM_CUDA_CHECK(cudaSetDevice(device));
        IKLLM_CUDA_CHECK(cudaGetDeviceProperties(&prop_, device));
        int mem_khz = 0, bus_bits = 0;  // (either may be unsupported: then unknown)
        if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
            cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
            memory_bandwidth_ = 2ull * (uint64_t)mem_khz * 1000ull * (uint64_t)bus_bits / 8ull;
        else
            (void)cudaGetLastError();
        // A device this build has no machine code (or loadable PTX) for would fail its first
        // launch mid-decode; refuse it here, saying what to rebuild with.
        cudaFuncAttributes attr{};
        const cudaError_t e = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&probe_kernel));
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            const std::string cc = std::to_string(prop_.major) + std::to_string(prop_.minor);
            throw std::runtime_error(std::string(prop_.name) + " (compute capability " + std::to_string(prop_.major) + "." +
                                     std::to_string(prop_.minor) + "): libikllm-cuda.so has no code for it (built for " +
                                     IKLLM_CUDA_ARCHS + "; " + cudaGetErrorString(e) +
                                     "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + cc +
                                     (prop_.major < 8 ? " (compute capability 8.0 or newer is what the kernels are tested on)" : ""));
        }
    }
    Capabilities capabilities() const override {
        Capabilities c;
        c.name = "CUDA" + std::to_string(device_);
        c.description = prop_.name;
        c.compute_major = prop_.major;
        c.compute_minor = prop_.minor;
        c.memory_bandwidth = memory_bandwidth_;
        size_t free_b = 0, total_b = 0;
        if (cudaSetDevice(device_) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
            c.memory_total = total_b;
            c.memory_free = free_b;
            c.memory_available = free_b;
        } else {
            (void)cudaGetLastError();
            c.memory_total = prop_.totalGlobalMem;
        }
        return c;
    }
    bool supports_weight_type(uint32_t type) const override { return weight_type_supported(type); }
    bool supports(const Op& op) const override {
        switch (op.kind) {
            case OpKind::get_rows:
            case OpKind::mul_mat:
            case OpKind::mul_mat_heads: return weight_type_supported(op.src[0]->type);
            case OpKind::mul_mat_swiglu:
                return weight_type_supported(op.src[0]->type) && weight_type_supported(op.src[2]->type);
            case OpKind::moe_ffn:
                return weight_type_supported(op.ex[0]->type) && (!op.ex[1] || weight_type_supported(op.ex[1]->type)) &&
                       weight_type_supported(op.ex[2]->type);
            case OpKind::kv_store: return is_kv_type(op.dst->type);
            case OpKind::attention: return is_kv_type(op.src[1]->type) && is_kv_type(op.src[2]->type);
            default: return true;
        }
    }
    std::unique_ptr<Buffer> alloc(size_t bytes) override { return std::make_unique<DeviceBuffer>(device_, bytes); }
    bool host_memory() const override { return false; }
    void upload(void* dev, const void* host, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        IKLLM_CUDA_CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
    }
    void download(void* host, const void* dev, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        IKLLM_CUDA_CHECK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
    }
    void fill_zero(void* dev, size_t n) override {
        IKLLM_CUDA_CHECK(cudaSetDevice(device_));
        IKLLM_CUDA_CHECK(cudaMemset(dev, 0, n));
    }
    std::unique_ptr<Executor> make_executor(int) override { return std::make_unique<CudaExecutor>(device_); }

private:
    int device_;
    cudaDeviceProp prop_{};
    uint64_t memory_bandwidth_ = 0;  // bytes/s peak (Capabilities::memory_bandwidth)
};

void put_error(char* err, size_t err_size, const std::string& msg) {
    if (err && err_size) std::snprintf(err, err_size, "%s", msg.c_str());
}

}  // namespace
}  // namespace ikllm::cuda

// Plug-in entry points (C linkage, looked up by name).
extern "C" __attribute__((visibility("default"))) int ikllm_cuda_plugin_interface_version() {
    return ikllm::backend::kInterfaceVersion;
}

// Number of usable devices, or -1 with a reason (no driver, driver too old, ...).
extern "C" __attribute__((visibility("default"))) int ikllm_cuda_plugin_device_count(char* err, size_t err_size) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        ikllm::cuda::put_error(err, err_size, std::string("CUDA unavailable: ") + cudaGetErrorString(e));
        return -1;
    }
    return n;
}

// A new backend for device `index`, or null with a reason. Ownership passes to the caller.
extern "C" __attribute__((visibility("default"))) ikllm::backend::Backend* ikllm_cuda_plugin_create(int index, char* err,
                                                                                                  size_t err_size) {
    try {
        return new ikllm::cuda::CudaBackend(index);
    } catch (const std::exception& e) {
        ikllm::cuda::put_error(err, err_size, e.what());
        return nullptr;
    }
}
