// The CUDA runtime calls of the CUDA backend, answered on the host for the emulated backend
// (libikllm-cuda-emu.so, emu_prelude.h): no GPU, no driver, no libcudart.
//
// Device memory is host memory from malloc, tracked per device so that a device has a size
// (IKLLM_CUDA_EMU_MEMORY bytes each, default 16 GiB; cudaMalloc beyond it fails with
// cudaErrorMemoryAllocation as on a full GPU) and filled with 0xFF bytes when allocated (NaN as
// floats: a kernel that reads memory nothing wrote shows up in the results). Copies check their
// direction against the allocations (a host pointer given as device memory, or the reverse, is
// cudaErrorInvalidValue). Every device allocation is followed by a 256-byte guard zone; a kernel
// that writes past the end of an allocation is reported (stderr) and fails the next synchronizing
// call or cudaFree with cudaErrorIllegalAddress, as a device's memory fault would (sticky).
// IKLLM_CUDA_EMU_DEVICES sets the number of devices (default 1), IKLLM_CUDA_EMU_CC their compute
// capability (default 9.0).
//
// Streams run their work at once, in issue order, on the calling thread -- except while a
// stream is being captured: then launches, copies and memsets are recorded into the graph, and
// run when an executable graph made from it is launched. With IKLLM_CUDA_EMU_SCHEDULE containing
// "deferred" a created stream's work waits instead until the latest moment the device could leave
// it: a synchronizing call (cudaStreamSynchronize, cudaDeviceSynchronize, cudaFree and the other
// calls that wait for the device, a copy to pageable host memory on that stream). A pinned host
// buffer is read or written when its copy runs, a pageable source is taken at the call, as the
// driver stages it. So host code that reuses a pinned buffer before its copy is done, or reads a
// result before waiting, or mixes the legacy stream's synchronous calls (cudaMemcpy, cudaMemset) with
// the backend's non-blocking stream without a wait, gets wrong data here, as it may on a device. cudaGraphExecUpdate accepts a graph
// with the same sequence of nodes (same kernels, same kinds of copies), as the device does for
// a topology-preserving update, and refuses any other.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "emu_cuda.h"

namespace {

struct Node {
    const void* key;  // the kernel, or a tag for copies and memsets
    std::function<void()> work;
};

char g_copy_tag, g_memset_tag;

struct Allocation {
    size_t bytes;
    int device;  // -1: pinned host memory
};

constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0xA5;

struct Runtime {
    std::mutex mu;
    std::map<uintptr_t, Allocation> allocations;
    std::map<uintptr_t, size_t> registered;  // cudaHostRegister ranges: start -> bytes
    std::vector<size_t> used;
    size_t capacity = 0;
    int cc = 90;                   // compute capability x 10 (IKLLM_CUDA_EMU_CC, e.g. 8.9)
    bool no_kernel_image = false;  // IKLLM_CUDA_EMU_NO_KERNEL_IMAGE=1
    Runtime() {
        if (const char* e = std::getenv("IKLLM_CUDA_EMU_CC")) cc = (int)(std::atof(e) * 10 + 0.5);
        if (const char* e = std::getenv("IKLLM_CUDA_EMU_NO_KERNEL_IMAGE")) no_kernel_image = std::string(e) == "1";
        int n = 1;
        if (const char* e = std::getenv("IKLLM_CUDA_EMU_DEVICES")) n = std::atoi(e);
        used.assign((size_t)(n < 0 ? 0 : n > 8 ? 8 : n), 0);
        capacity = (size_t)16 << 30;
        if (const char* e = std::getenv("IKLLM_CUDA_EMU_MEMORY")) capacity = std::strtoull(e, nullptr, 10);
    }
    ~Runtime() {
        if (!registered.empty())
            std::fprintf(stderr, "cuda emulation: %zu host range(s) still page-locked at exit (a cudaHostUnregister missing)\n",
                         registered.size());
    }
    // The allocation that holds [p, p + n), or null.
    const Allocation* find(const void* p, size_t n) {
        std::lock_guard<std::mutex> lock(mu);
        const uintptr_t a = reinterpret_cast<uintptr_t>(p);
        auto it = allocations.upper_bound(a);
        if (it == allocations.begin()) return nullptr;
        --it;
        return a + n <= it->first + it->second.bytes ? &it->second : nullptr;
    }
};

Runtime& rt() {
    static Runtime r;
    return r;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last = cudaSuccess;
bool g_fault = false;  // a guard zone was overwritten: every later synchronizing call fails

cudaError_t fail(cudaError_t e) {
    t_last = e;
    return e;
}

bool guard_intact(uintptr_t base, const Allocation& a) {
    const unsigned char* g = reinterpret_cast<const unsigned char*>(base) + a.bytes;
    for (size_t i = 0; i < kGuard; ++i)
        if (g[i] != kGuardByte) return false;
    return true;
}

// Checks every device allocation's guard zone (the caller holds rt().mu).
cudaError_t check_guards_locked() {
    for (const auto& [base, a] : rt().allocations)
        if (a.device >= 0 && !guard_intact(base, a)) {
            if (!g_fault)
                std::fprintf(stderr, "emulated CUDA device: a kernel wrote past the end of a %zu-byte allocation\n",
                             a.bytes);
            g_fault = true;
        }
    return g_fault ? fail(cudaErrorIllegalAddress) : cudaSuccess;
}
cudaError_t check_guards() {
    std::lock_guard<std::mutex> lock(rt().mu);
    return check_guards_locked();
}

bool on_device(const void* p, size_t n) {
    const Allocation* a = rt().find(p, n);
    return a && a->device >= 0;
}

// The direction a copy's pointers take, checked against the allocations.
bool copy_ok(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
    if (n == 0) return true;
    switch (kind) {
        case cudaMemcpyHostToDevice: return on_device(dst, n) && !on_device(src, n);
        case cudaMemcpyDeviceToHost: return !on_device(dst, n) && on_device(src, n);
        case cudaMemcpyDeviceToDevice: return on_device(dst, n) && on_device(src, n);
        case cudaMemcpyHostToHost: return !on_device(dst, n) && !on_device(src, n);
        default: return true;
    }
}

// Page-locked host memory (cudaMallocHost, cudaHostRegister): copies to and from it run
// asynchronously; other host memory is staged by the driver.
bool pinned(const void* p, size_t n) {
    const Allocation* a = rt().find(p, n);
    if (a) return a->device < 0;
    std::lock_guard<std::mutex> lock(rt().mu);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    auto it = rt().registered.upper_bound(lo);
    if (it == rt().registered.begin()) return false;
    --it;
    return lo + n <= it->first + it->second;
}

}  // namespace

struct CUstream_st {
    bool capturing = false;
    std::vector<Node> nodes;
    std::vector<std::function<void()>> pending;  // deferred work, oldest first
};
struct CUgraph_st {
    std::vector<Node> nodes;
};
struct CUgraphExec_st {
    std::vector<Node> nodes;
};
struct CUevent_st {
    std::chrono::steady_clock::time_point t;
};

namespace {

// The streams with deferred work (schedule "deferred"), and the lock over their queues.
std::recursive_mutex& streams_mutex() {
    static std::recursive_mutex m;
    return m;
}
std::vector<cudaStream_t>& live_streams() {
    static std::vector<cudaStream_t> v;
    return v;
}
bool deferred() {
    static const bool d = [] {
        const char* e = std::getenv("IKLLM_CUDA_EMU_SCHEDULE");
        return e && std::strstr(e, "deferred") != nullptr;
    }();
    return d;
}

// Runs a stream's deferred work (in order; work issued while it runs waits for the next flush).
void flush(cudaStream_t s) {
    if (!s) return;
    std::lock_guard<std::recursive_mutex> lock(streams_mutex());
    std::vector<std::function<void()>> work;
    work.swap(s->pending);
    for (const auto& w : work) w();
}
void flush_all() {
    std::lock_guard<std::recursive_mutex> lock(streams_mutex());
    for (cudaStream_t s : live_streams()) flush(s);
}

// Work on a capturing stream is recorded, on a created stream in the deferred schedule queued;
// anything else runs now.
bool capture(cudaStream_t s, const void* key, const std::function<void()>& work) {
    if (!s) return false;
    if (s->capturing) {
        s->nodes.push_back({key, work});
        return true;
    }
    if (!deferred()) return false;
    std::lock_guard<std::recursive_mutex> lock(streams_mutex());
    s->pending.push_back(work);
    return true;
}

const bool g_hooked = (emu::g_capture = &capture, true);

cudaError_t run_or_record(cudaStream_t s, const void* key, std::function<void()> work) {
    if (!capture(s, key, work)) work();
    return cudaSuccess;
}

}  // namespace

// ---- devices --------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
    *count = (int)rt().used.size();
    return rt().used.empty() ? fail(cudaErrorNoDevice) : cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= (int)rt().used.size()) return fail(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
    *device = t_device;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (device < 0 || device >= (int)rt().used.size()) return fail(cudaErrorInvalidDevice);
    *prop = cudaDeviceProp{};
    std::snprintf(prop->name, sizeof prop->name, "ikllm CUDA host emulation %d", device);
    prop->major = rt().cc / 10;
    prop->minor = rt().cc % 10;
    prop->multiProcessorCount = 132;
    prop->totalGlobalMem = rt().capacity;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    if (device < 0 || device >= (int)rt().used.size()) return fail(cudaErrorInvalidDevice);
    switch (attr) {
        case cudaDevAttrMultiProcessorCount: *value = 132; return cudaSuccess;
        case cudaDevAttrComputeCapabilityMajor: *value = rt().cc / 10; return cudaSuccess;
        case cudaDevAttrComputeCapabilityMinor: *value = rt().cc % 10; return cudaSuccess;
        case cudaDevAttrHostRegisterReadOnlySupported: *value = 1; return cudaSuccess;
        // An H100 SXM's (3.35 TB/s of HBM3; 1.98 GHz boost)
        case cudaDevAttrMemoryClockRate: *value = 2619000; return cudaSuccess;
        case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; return cudaSuccess;
        case cudaDevAttrClockRate: *value = 1980000; return cudaSuccess;
        default: return fail(cudaErrorInvalidValue);
    }
}
// Whether the module has code for the device: yes, unless IKLLM_CUDA_EMU_NO_KERNEL_IMAGE=1 (a device
// the build has no machine code for).
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void*) {
    *attr = cudaFuncAttributes{};
    return rt().no_kernel_image ? fail(cudaErrorNoKernelImageForDevice) : cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;  // (hints)
    if (value < 0 || value > 227 * 1024) return fail(cudaErrorInvalidValue);      // an H100's limit
    std::lock_guard<std::mutex> lock(emu::opt_in_mutex());
    emu::shared_opt_in()[func] = (size_t)value;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
    std::lock_guard<std::mutex> lock(rt().mu);
    *total = rt().capacity;
    *free_bytes = rt().capacity - rt().used[(size_t)t_device];
    return cudaSuccess;
}

// ---- errors ---------------------------------------------------------------------------------

cudaError_t cudaGetLastError() {
    cudaError_t e = t_last;
    if (e == cudaSuccess) e = emu::g_launch_error;
    t_last = cudaSuccess;
    emu::g_launch_error = cudaSuccess;
    return e;
}
const char* cudaGetErrorName(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
        case cudaErrorNotSupported: return "cudaErrorNotSupported";
        case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
        case cudaErrorGraphExecUpdateFailure: return "cudaErrorGraphExecUpdateFailure";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
        case cudaErrorHostMemoryAlreadyRegistered: return "cudaErrorHostMemoryAlreadyRegistered";
        case cudaErrorHostMemoryNotRegistered: return "cudaErrorHostMemoryNotRegistered";
        case cudaErrorNoKernelImageForDevice: return "cudaErrorNoKernelImageForDevice";
        default: return "cudaError (emulation)";
    }
}
const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidDevice: return "invalid device ordinal";
        case cudaErrorNoDevice: return "no CUDA-capable device is detected";
        case cudaErrorNotSupported: return "operation not supported (by the host emulation)";
        case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
        case cudaErrorGraphExecUpdateFailure: return "the graph update was not performed";
        case cudaErrorIllegalAddress: return "an illegal memory access was encountered (emulation: a write past an allocation)";
        case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
        default: return "unknown error (emulation)";
    }
}

// ---- memory ---------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** p, size_t bytes) {
    Runtime& r = rt();
    {
        std::lock_guard<std::mutex> lock(r.mu);
        size_t& used = r.used[(size_t)t_device];
        if (bytes > r.capacity - used) return fail(cudaErrorMemoryAllocation);
        used += bytes;
    }
    void* m = std::malloc(bytes + kGuard);
    if (!m) {
        std::lock_guard<std::mutex> lock(r.mu);
        r.used[(size_t)t_device] -= bytes;
        return fail(cudaErrorMemoryAllocation);
    }
    std::memset(m, 0xFF, bytes);
    std::memset(static_cast<char*>(m) + bytes, kGuardByte, kGuard);
    std::lock_guard<std::mutex> lock(r.mu);
    r.allocations[reinterpret_cast<uintptr_t>(m)] = {bytes, t_device};
    *p = m;
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
    void* m = std::malloc(bytes ? bytes : 1);
    if (!m) return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().allocations[reinterpret_cast<uintptr_t>(m)] = {bytes, -1};
    *p = m;
    return cudaSuccess;
}
namespace {
cudaError_t release(void* p, bool device) {
    if (!p) return cudaSuccess;
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.allocations.end() || (it->second.device >= 0) != device) return fail(cudaErrorInvalidValue);
    if (device && check_guards_locked() != cudaSuccess) return cudaErrorIllegalAddress;
    if (device) r.used[(size_t)it->second.device] -= it->second.bytes;
    r.allocations.erase(it);
    std::free(p);
    return cudaSuccess;
}
}  // namespace
// cudaFree, cudaFreeHost and cudaHostUnregister wait for the device's work first.
cudaError_t cudaFree(void* p) {
    flush_all();
    return release(p, true);
}
// Page-locking existing host memory: tracked only (the emulation copies from anywhere), with the
// driver's refusals: an empty range, one overlapping a registered range, unregistering what was
// not registered. Ranges still registered at exit are reported (a missing cudaHostUnregister).
cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned int flags) {
    if (!p || !bytes || (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterReadOnly)))
        return fail(cudaErrorInvalidValue);
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
    auto it = r.registered.upper_bound(lo);
    if (it != r.registered.end() && it->first < hi) return fail(cudaErrorHostMemoryAlreadyRegistered);
    if (it != r.registered.begin() && std::prev(it)->first + std::prev(it)->second > lo)
        return fail(cudaErrorHostMemoryAlreadyRegistered);
    r.registered[lo] = bytes;
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* p) {
    flush_all();
    Runtime& r = rt();
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.registered.erase(reinterpret_cast<uintptr_t>(p))) return fail(cudaErrorHostMemoryNotRegistered);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
    flush_all();
    return release(p, false);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
    if (check_guards() != cudaSuccess) return cudaErrorIllegalAddress;
    if (!copy_ok(dst, src, n, kind)) return fail(cudaErrorInvalidValue);
    if (n) std::memmove(dst, src, n);
    return cudaSuccess;
}
namespace {
// An asynchronous copy of `height` rows of `width` bytes. While the stream is not captured: a
// pageable source is taken now (the driver stages it before returning), a copy to pageable host
// memory has finished when the call returns (with the stream's earlier work).
cudaError_t copy_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                       cudaMemcpyKind kind, cudaStream_t s) {
    const size_t span = height ? spitch * (height - 1) + width : 0;
    const bool staged_src = kind == cudaMemcpyHostToDevice && s && !s->capturing && !pinned(src, span);
    const bool wait = kind == cudaMemcpyDeviceToHost && s && !s->capturing && !pinned(dst, dpitch * (height ? height - 1 : 0) + width);
    std::shared_ptr<std::vector<char>> copy;
    if (staged_src && deferred()) {
        copy = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + span);
        src = copy->data();
    }
    run_or_record(s, &g_copy_tag, [=, staged = std::move(copy)] {
        for (size_t r = 0; r < height; ++r)
            std::memmove(static_cast<char*>(dst) + dpitch * r, static_cast<const char*>(src) + spitch * r, width);
    });
    if (wait) flush(s);
    return cudaSuccess;
}
}  // namespace
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
    if (!copy_ok(dst, src, n, kind)) return fail(cudaErrorInvalidValue);
    return copy_async(dst, n, src, n, n, n ? 1 : 0, kind, s);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t s) {
    if (height && (!copy_ok(dst, src, width, kind) ||
                   !copy_ok(static_cast<char*>(dst) + dpitch * (height - 1),
                            static_cast<const char*>(src) + spitch * (height - 1), width, kind)))
        return fail(cudaErrorInvalidValue);
    return copy_async(dst, dpitch, src, spitch, width, height, kind, s);
}
cudaError_t cudaMemset(void* p, int value, size_t n) {
    if (n && !on_device(p, n)) return fail(cudaErrorInvalidValue);
    std::memset(p, value, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s) {
    if (n && !on_device(p, n)) return fail(cudaErrorInvalidValue);
    return run_or_record(s, &g_memset_tag, [=] { std::memset(p, value, n); });
}

// ---- streams, events, graphs ----------------------------------------------------------------

cudaError_t cudaDeviceSynchronize() {
    flush_all();
    return check_guards();
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
    *s = new CUstream_st;
    std::lock_guard<std::recursive_mutex> lock(streams_mutex());
    live_streams().push_back(*s);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return cudaSuccess;
    flush(s);  // (the device finishes a destroyed stream's work)
    std::lock_guard<std::recursive_mutex> lock(streams_mutex());
    auto& v = live_streams();
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (s && s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
    flush(s);
    return check_guards();
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
    if (!s || s->capturing) return fail(cudaErrorInvalidValue);
    s->capturing = true;
    s->nodes.clear();
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
    if (!s || !s->capturing) return fail(cudaErrorInvalidValue);
    s->capturing = false;
    *g = new CUgraph_st{std::move(s->nodes)};
    s->nodes.clear();
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
    *e = new CUgraphExec_st{g->nodes};
    return cudaSuccess;
}
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo* info) {
    bool same = e->nodes.size() == g->nodes.size();
    for (size_t i = 0; same && i < g->nodes.size(); ++i) same = e->nodes[i].key == g->nodes[i].key;
    if (info) *info = cudaGraphExecUpdateResultInfo{};
    if (!same) {
        if (info) info->result = cudaGraphExecUpdateErrorTopologyChanged;
        return fail(cudaErrorGraphExecUpdateFailure);
    }
    e->nodes = g->nodes;
    if (info) info->result = cudaGraphExecUpdateSuccess;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
    if (s && s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
    for (const Node& n : e->nodes) run_or_record(s, n.key, n.work);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = new CUevent_st;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (s && s->capturing) return fail(cudaErrorStreamCaptureUnsupported);
    e->t = std::chrono::steady_clock::now();
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
    return cudaSuccess;
}
