// The CUDA backend: device buffers, an executor that runs op-list slices on one stream, and
// the plug-in entry points libikllm.so looks up with dlsym. Failures are reported as
// std::runtime_error / std::bad_alloc (types shared with the host library; the engine's own
// error type is not, since each shared object has its own copy of its type info).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "cuda_ops.cuh"

namespace ikllm::cuda {

namespace {

using backend::Buffer;
using backend::Capabilities;
using backend::Executor;
using backend::OpObserver;

class DeviceBuffer final : public Buffer {
public:
    DeviceBuffer(int device, size_t bytes) : size_(bytes) {
        IKLLM_CUDA_CHECK(cudaSetDevice(device));
        const cudaError_t e = cudaMalloc(&data_, bytes ? bytes : 1);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            if (e == cudaErrorMemoryAllocation) throw std::bad_alloc();
            check(e, "cudaMalloc");
        }
    }
    ~DeviceBuffer() override { cudaFree(data_); }
    void* data() override { return data_; }
    size_t size() const override { return size_; }

private:
    void* data_ = nullptr;
    size_t size_;
};

// Temporaries of one op: chunks grow on demand and are reused by the next op (the stream
// orders the next op's kernels after this one's).
class ChunkScratch final : public Scratch {
public:
    explicit ChunkScratch(int device) : device_(device) {}
    void reset() {
        chunk_ = 0;
        used_ = 0;
    }
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
        const size_t size = bytes > kChunk ? bytes : kChunk;
        chunks_.push_back(std::make_unique<DeviceBuffer>(device_, size));
        chunk_ = chunks_.size() - 1;
        used_ = bytes;
        return chunks_.back()->data();
    }

private:
    static constexpr size_t kChunk = 64u << 20;
    int device_;
    std::vector<std::unique_ptr<DeviceBuffer>> chunks_;
    size_t chunk_ = 0, used_ = 0;
};

class CudaExecutor final : public Executor {
public:
    explicit CudaExecutor(int device) : device_(device), scratch_(device) {
        IKLLM_CUDA_CHECK(cudaSetDevice(device));
        IKLLM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        IKLLM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
        const char* r = std::getenv("IKLLM_CUDA_ACT_ROUND");
        act_round_ = !(r && std::string(r) == "0");
    }
    ~CudaExecutor() override {
        cudaStreamSynchronize(stream_);
        cudaStreamDestroy(stream_);
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
        for (size_t i = begin; i < end; ++i) {
            if (cancel && *cancel) throw std::runtime_error("cancelled");
            const Op& op = graph.ops[i];
            scratch_.reset();
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
        }
    }
    // Through pinned memory, so the copy is truly asynchronous (a copy from pageable memory
    // would wait for the stream's queued work); the staging space is reused after synchronize().
    void to_device(void* dev, const void* host, size_t n) override {
        const size_t need = (n + 255) / 256 * 256;
        if (pinned_used_ + need > pinned_size_) {
            IKLLM_CUDA_CHECK(cudaStreamSynchronize(stream_));
            pinned_used_ = 0;
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
        std::memcpy(stage, host, n);
        pinned_used_ += need;
        IKLLM_CUDA_CHECK(cudaMemcpyAsync(dev, stage, n, cudaMemcpyHostToDevice, stream_));
    }
    void to_host(void* host, const void* dev, size_t n) override {
        IKLLM_CUDA_CHECK(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream_));
        IKLLM_CUDA_CHECK(cudaStreamSynchronize(stream_));
        pinned_used_ = 0;
    }
    void synchronize() override {
        IKLLM_CUDA_CHECK(cudaStreamSynchronize(stream_));
        pinned_used_ = 0;
    }

private:
    int device_;
    cudaStream_t stream_ = nullptr;
    int sm_count_ = 0;
    bool act_round_ = true;
    ChunkScratch scratch_;
    OpObserver* observer_ = nullptr;
    void* pinned_ = nullptr;
    size_t pinned_size_ = 0, pinned_used_ = 0;
};

bool is_kv_type(uint32_t t) { return t == 0 || t == 1 || t == 8 || t == 30; }  // f32 f16 q8_0 bf16

class CudaBackend final : public backend::Backend {
public:
    explicit CudaBackend(int device) : device_(device) {
        IKLLM_CUDA_CHECK(cudaSetDevice(device));
        IKLLM_CUDA_CHECK(cudaGetDeviceProperties(&prop_, device));
    }
    Capabilities capabilities() const override {
        Capabilities c;
        c.name = "CUDA" + std::to_string(device_);
        c.description = prop_.name;
        c.compute_major = prop_.major;
        c.compute_minor = prop_.minor;
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
