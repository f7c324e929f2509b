// Runs an op list across devices: each op runs where its weights live (else where its input
// was last written), consecutive ops of one device run as one slice, and activations cross
// between host and device only when an op on the other side reads them. Host memory that GPU
// ops touch (the activation arena, KV cache layers, output buffers) has a device mirror at
// the same offset; which side holds the current bytes is tracked per byte range.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "backend.h"
#include "graph/arena.h"
#include "ops.h"

namespace ikllm {

// Per byte range: the set of devices (bit d) holding its current value. Ranges never written
// are absent (no copy needed).
class ValidityMap {
public:
    struct Piece {
        uintptr_t lo, hi;
        uint32_t mask;
    };
    // Pieces of [lo, hi) that device `dev` does not hold.
    std::vector<Piece> missing(uintptr_t lo, uintptr_t hi, int dev);
    void add_holder(uintptr_t lo, uintptr_t hi, int dev);   // after a copy to dev
    void written(uintptr_t lo, uintptr_t hi, int dev);      // dev holds the only current copy
    void forget(uintptr_t lo, uintptr_t hi);
    // Device holding the byte at p alone, or -1 (unknown / several).
    int sole_holder(uintptr_t p) const;

private:
    struct Seg {
        uintptr_t hi;
        uint32_t mask;
    };
    void split(uintptr_t at);
    std::map<uintptr_t, Seg> segs_;
};

class Scheduler {
public:
    // devices[0] is the CPU; executors[i] runs ops on devices[i].
    Scheduler(std::vector<backend::Backend*> devices, std::vector<backend::Executor*> executors);
    ~Scheduler();
    // A persistent host range with a device copy (a KV cache layer); the device memory is
    // allocated and zeroed here.
    void add_mirror(const void* host, size_t bytes, int device);
    // Runs the graph. `outputs` are host ranges the caller reads afterwards.
    void run(const Graph& graph, Arena& arena, const std::vector<std::pair<void*, size_t>>& outputs,
             const volatile int32_t* cancel);
    // Host code works on bytes [p, p + n) of a persistent mirror (KV cache rows): brings the host
    // copy up to date / marks it the newest / makes the device copy current and the only one
    // (waits for the copy; the host bytes may be discarded afterwards).
    void mirror_to_host(const void* p, size_t n);
    void mirror_host_written(const void* p, size_t n);
    void mirror_to_device_only(const void* p, size_t n);
    // Matrix products on at least `tokens` tokens whose weights are in host memory run on the
    // first GPU, their weights uploaded for each op (session option offload_min_batch; 0 = never).
    void set_stream_min_tokens(int64_t tokens) { stream_min_tokens_ = tokens; }
    struct StreamStats {
        int64_t ops = 0;    // ops run on a GPU with streamed weights
        int64_t bytes = 0;  // weight bytes uploaded for them
        int64_t most = 0;   // the largest one op needed (the stream buffer; ikllm_plan's "stream")
        int64_t direct = 0; // of `bytes`, those copied straight from the weights (page-locked, no staging)
    };
    const StreamStats& stream_stats() const { return stream_stats_; }

private:
    struct Region {
        uintptr_t host;
        size_t bytes;
        int device;
        void* dev;
        bool persistent;  // KV layers; else an arena block or an output buffer
        std::unique_ptr<backend::Buffer> buffer;
    };
    int place(const Op& op, int prev) const;
    bool streams(const Op& op) const;
    bool stream_weights(const Op& op, int device);
    Region* region_of(uintptr_t lo, uintptr_t hi, int device);
    Region* mirror_of(uintptr_t lo, uintptr_t hi, int device);
    std::unique_ptr<backend::Buffer> alloc_for_batch(int device, size_t want, size_t need, const char* what);
    bool drop_spares(int device);  // frees the device's unused spare mirrors; false if it had none
    void* device_ptr(const Tensor& t, int device);
    void ensure_on(const Tensor& t, int device);
    void ensure_inputs_on(const Op& op, int device);
    void to_host_from(uintptr_t lo, uintptr_t hi, int from);
    void flush();
    Op translate(const Op& op, int device, Graph& g);
    const void* stage(const void* host, size_t bytes, int device);
    int owner_of_spare(const backend::Buffer* b) const;

    std::vector<backend::Backend*> devices_;
    std::vector<backend::Executor*> execs_;
    std::vector<Region> regions_;
    std::vector<std::pair<uintptr_t, size_t>> transient_;  // this run's arena blocks and output buffers
    std::vector<std::unique_ptr<backend::Buffer>> owned_;
    ValidityMap valid_;
    // Device memory of retired output-buffer mirrors, reused by later runs.
    std::vector<std::unique_ptr<backend::Buffer>> spare_;
    static constexpr size_t kMaxSpare = 8;
    std::map<const backend::Buffer*, int> spare_owner_;
    // The slice being collected: its device, and (GPU) its translated ops or (CPU) op range.
    int seg_device_ = -1;
    const Graph* graph_ = nullptr;
    size_t cpu_begin_ = 0, cpu_end_ = 0;
    std::unique_ptr<Graph> seg_graph_;
    const volatile int32_t* cancel_ = nullptr;
    // Small host arrays (positions, cell lists) uploaded once per run, by host address.
    std::map<std::pair<const void*, int>, const void*> staged_;
    std::vector<std::unique_ptr<backend::Buffer>> staging_;  // per device
    std::vector<size_t> staging_used_;
    // Streamed weights: one device buffer, refilled for each streamed op after the ops queued
    // before it (stream order makes the reuse safe); host address -> device copy of this op.
    int64_t stream_min_tokens_ = 0;
    std::unique_ptr<backend::Buffer> stream_buf_;
    std::map<const void*, void*> streamed_;
    StreamStats stream_stats_;
    // IKLLM_OP_PROFILE=1: host wall time of run() split into scheduling, CPU slices, issuing
    // device slices and waiting for devices; printed to stderr at destruction.
    struct Profile {
        bool on = false;
        long runs = 0;
        double total = 0, cpu = 0, device_issue = 0, wait = 0;
    } prof_;
};

}  // namespace ikllm
