// The backend interface: what the engine needs from a compute device. The CPU backend is
// built in; others (CUDA) implement the same table and may be loaded as plug-ins.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ops.h"
#include "quant/repack.h"

namespace ikllm::backend {

struct Capabilities {
    std::string name;          // "CPU", "CUDA0"
    std::string description;   // e.g. CPU model / ISA, GPU name
    int compute_major = 0;     // GPUs: compute capability (9.0 for Hopper)
    int compute_minor = 0;
    uint64_t memory_total = 0;
    uint64_t memory_free = 0;
    // What new allocations can still get without failing or thrashing (host: MemAvailable plus
    // free swap); 0 = unknown. Large allocations are checked against it first, because on an
    // overcommitting OS they would "succeed" and the process be killed when they are touched.
    uint64_t memory_available = 0;
    // GPUs: peak bytes per second of device memory (memory clock x bus width, double data rate);
    // 0 = unknown. Benchmarks divide the weights a token reads by it (the generation bound).
    uint64_t memory_bandwidth = 0;
};

// Memory owned by a backend.
class Buffer {
public:
    virtual ~Buffer() = default;
    virtual void* data() = 0;   // device address (host address for CPU)
    virtual size_t size() const = 0;
};

// Sees each op just before a backend runs it, with its inputs ready (importance-matrix
// collection, debugging). Must not modify anything.
class OpObserver {
public:
    virtual ~OpObserver() = default;
    virtual void before(const Op& op) = 0;
};

// Per-session execution state of a backend (threads, scratch).
class Executor {
public:
    virtual ~Executor() = default;
    // null: no observer. Backends with device memory hand the observer host copies.
    virtual void set_observer(OpObserver* observer) = 0;
    // Runs ops [begin, end) of the graph in order. cancel may be null. Device backends may
    // return before the work is done (stream order); copies and synchronize() wait for it.
    virtual void run(const Graph& graph, size_t begin, size_t end, const volatile int32_t* cancel) = 0;
    // Copies between host memory and this backend's memory, ordered after the work run so far
    // (CPU: memcpy). to_device may return before the copy is done when `host` is not touched
    // again before the next synchronize(); to_host returns when the bytes are there.
    virtual void to_device(void* dev, const void* host, size_t n) = 0;
    virtual void to_host(void* host, const void* dev, size_t n) = 0;
    // Read-backs in a batch: to_host_queue queues a copy whose host bytes are valid only after
    // the next to_host_wait(), which waits for all queued ones (one wait for an op's inputs
    // instead of one per tensor). synchronize() completes them too.
    virtual void to_host_queue(void* host, const void* dev, size_t n) { to_host(host, dev, n); }
    virtual void to_host_wait() {}
    // to_device for weight bytes (host weights streamed for a big batch), which stay unchanged
    // while queued work may read them: a device backend may copy straight from them, without a
    // staging copy (CUDA: the range page-locked on first use, for this executor's lifetime).
    // Returns the bytes that went without staging.
    virtual size_t weights_to_device(void* dev, const void* host, size_t n) {
        to_device(dev, host, n);
        return 0;
    }
    virtual void synchronize() = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual Capabilities capabilities() const = 0;
    // Can this backend run the op (given its input types)? Asked before placement.
    virtual bool supports(const Op& op) const = 0;
    // Can weights of this type be used by this backend's mul_mat / get_rows?
    virtual bool supports_weight_type(uint32_t type) const = 0;
    // Whether converting weights of `type` to its row-interleaved form (repack_type) makes this
    // backend's products faster; run-time repack (model option "repack" 1) asks.
    virtual bool repack_helps(uint32_t type) const {
        (void)type;
        return false;
    }
    // Whether multiplying repack_type(type) gives other results than multiplying `type` as stored
    // (another activation rounding or summation order), beyond the float rounding the stored
    // form's own kernels differ by between instruction sets. Automatic repack (option -1) converts
    // only where it does not, so the default follows the file's reference results; an explicit
    // repack (1, 2) converts anyway, as the reference's -rtr does.
    virtual bool repack_changes_results(uint32_t type) const {
        (void)type;
        return true;
    }
    // The row-interleaved type run-time repack converts `type` to for this backend (0: none):
    // the reference's form (quant::repack_target) unless the backend has a layout of its own.
    virtual uint32_t repack_type(uint32_t type) const { return quant::repack_target(type); }
    virtual std::unique_ptr<Buffer> alloc(size_t bytes) = 0;
    // True when buffers are ordinary host memory (the CPU backend).
    virtual bool host_memory() const { return true; }
    // Synchronous copies into / out of a buffer of this backend, and zero-filling.
    virtual void upload(void* dev, const void* host, size_t n) = 0;
    virtual void download(void* host, const void* dev, size_t n) = 0;
    virtual void fill_zero(void* dev, size_t n) = 0;
    virtual std::unique_ptr<Executor> make_executor(int n_threads) = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
// Tests: a "GPU" named CUDA<index> that runs the CPU kernels on memory of its own
// (IKLLM_TEST_GPU_DOUBLE=N), of `memory` bytes (0 = unlimited; IKLLM_TEST_GPU_DOUBLE_MEM).
std::unique_ptr<Backend> make_host_device_double(int index, uint64_t memory);

// Version of this interface; a plug-in built against another version is not loaded.
constexpr int kInterfaceVersion = 1;

}  // namespace ikllm::backend
