// The built-in CPU backend: host buffers, op capability answers and an executor that runs
// op lists on a per-session thread pool.
#include <sys/sysinfo.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "backend.h"
#include "core/aligned_memory.h"
#include "core/cancel_flag.h"
#include "core/error.h"
#include "cpu_ops.h"
#include "kernels/matmul.h"
#include "quant/repack.h"
#include "quant/type_traits.h"
#include "quant/unpack_interleaved.h"

namespace ikllm::backend {

namespace {

class HostBuffer final : public Buffer {
public:
    explicit HostBuffer(size_t bytes) : size_(bytes) {
        if (!bytes) return;
        try {
            data_ = aligned_alloc64(bytes);
        } catch (const std::bad_alloc&) {
            throw Error(Status::out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes");
        }
        // Big buffers (repacked or derived weights, KV caches) are streamed through: huge pages
        // save a TLB miss per 4 KiB. Advised before anything is written, so faults take them.
        if (bytes >= (8u << 20)) advise_huge_pages(data_, bytes);
    }
    ~HostBuffer() override { aligned_free64(data_); }
    void* data() override { return data_; }
    size_t size() const override { return size_; }

private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

class CpuExecutor final : public Executor {
public:
    explicit CpuExecutor(int n_threads) : pool_(n_threads) {}
    void set_observer(OpObserver* observer) override { observer_ = observer; }
    void to_device(void* dev, const void* host, size_t n) override { std::memcpy(dev, host, n); }
    void to_host(void* host, const void* dev, size_t n) override { std::memcpy(host, dev, n); }
    void synchronize() override {}
    void run(const Graph& graph, size_t begin, size_t end, const volatile int32_t* cancel) override {
        for (size_t i = begin; i < end; ++i) {
            if (cancel_requested(cancel)) throw Error(Status::cancelled, "cancelled");
            const Op& op = graph.ops[i];
            if (observer_) observer_->before(op);
            const auto t0 = std::chrono::steady_clock::now();
            if (const size_t n = matmul_group(graph, i, end); n > 1) {
                cpu::op_mul_mat_group(&graph.ops[i], n, pool_, scratch_);
                if (profile_) profile_group(&graph.ops[i], n, std::chrono::steady_clock::now() - t0);
                i += n - 1;
                continue;
            }
            switch (op.kind) {
                case OpKind::get_rows: cpu::op_get_rows(op, pool_); break;
                case OpKind::rms_norm: cpu::op_rms_norm(op, pool_); break;
                case OpKind::mul_mat: cpu::op_mul_mat(op, pool_, scratch_); break;
                case OpKind::add: cpu::op_add(op, pool_); break;
                case OpKind::swiglu: cpu::op_swiglu(op, pool_); break;
                case OpKind::rope: cpu::op_rope(op, pool_); break;
                case OpKind::kv_store: cpu::op_kv_store(op, pool_); break;
                case OpKind::attention: cpu::op_attention(op, pool_, scratch_); break;
                case OpKind::gather_rows: cpu::op_gather_rows(op, pool_); break;
                case OpKind::mul_mat_swiglu: cpu::op_mul_mat_swiglu(op, pool_, scratch_); break;
                case OpKind::mul_mat_heads: cpu::op_mul_mat_heads(op, pool_, scratch_); break;
                case OpKind::moe_route: cpu::op_moe_route(op, pool_, scratch_); break;
                case OpKind::moe_ffn: cpu::op_moe_ffn(op, pool_, scratch_); break;
                case OpKind::copy: cpu::op_copy(op, pool_); break;
            }
            if (profile_ && (int)op.kind < kKinds) {
                const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                prof_s_[(int)op.kind] += dt;
                prof_n_[(int)op.kind]++;
                if (profile_ > 1) profile_detail(op, dt);
            }
        }
    }
    // Consecutive products of one input (a layer's Q, K, V) run as one group: one encoding of the
    // input and one pool barrier instead of three. Not with an observer (imatrix collection), which
    // sees each op's inputs just before that op runs.
    size_t matmul_group(const Graph& graph, size_t i, size_t end) const {
        const Op& op = graph.ops[i];
        if (observer_ || op.kind != OpKind::mul_mat) return 1;
        size_t n = 1;
        while (n < cpu::kMaxMatmulGroup && i + n < end && graph.ops[i + n].kind == OpKind::mul_mat &&
               graph.ops[i + n].src[1] == op.src[1])
            ++n;
        return n;
    }
    // A group's time shared out over its products by their weight bytes.
    void profile_group(const Op* ops, size_t n, std::chrono::steady_clock::duration d) {
        const double dt = std::chrono::duration<double>(d).count();
        double total = 0;
        for (size_t j = 0; j < n; ++j) total += (double)ops[j].src[0]->nb[1] * (double)ops[j].src[0]->ne[1];
        for (size_t j = 0; j < n; ++j) {
            const double part = total > 0 ? dt * (double)ops[j].src[0]->nb[1] * (double)ops[j].src[0]->ne[1] / total : dt / n;
            prof_s_[(int)OpKind::mul_mat] += part;
            prof_n_[(int)OpKind::mul_mat]++;
            if (profile_ > 1) profile_detail(ops[j], part);
        }
    }
    // IKLLM_OP_PROFILE=1: wall time per op kind, printed to stderr when the executor goes (a
    // developer's view of where a graph's time goes; docs/cpu-speed.md).
    ~CpuExecutor() override {
        if (!profile_) return;
        double total = 0;
        for (double v : prof_s_) total += v;
        std::fprintf(stderr, "op profile (CPU executor):\n");
        for (int k = 0; k < kKinds; ++k)
            if (prof_n_[k])
                std::fprintf(stderr, "  %-15s %9.3f s %5.1f %%  %ld calls\n", op_kind_name((OpKind)k),
                             prof_s_[k], 100 * prof_s_[k] / total, prof_n_[k]);
        if (profile_ > 1) {
            std::fprintf(stderr, "by op and first operand (layer index dropped; GB/s = its bytes / time):\n");
            for (const auto& [key, d] : detail_)
                std::fprintf(stderr, "  %-44s %9.4f s %5.1f %%  %6ld calls %7.1f GB/s\n", key.c_str(), d.s,
                             100 * d.s / total, d.n, d.s > 0 ? d.bytes / d.s / 1e9 : 0.0);
        }
    }

private:
    // IKLLM_OP_PROFILE=2: time per (op kind, first operand name without "blk.N.") and the
    // rate at which that operand's bytes went by (the weights' read rate for the matmuls).
    void profile_detail(const Op& op, double dt) {
        const Tensor* w = op.src[0];
        std::string name = w && w->name ? w->name : "";
        if (name.rfind("blk.", 0) == 0) name = name.substr(std::min(name.size(), name.find('.', 4) + 1));
        Detail& d = detail_[std::string(op_kind_name(op.kind)) + " " + name];
        d.s += dt;
        d.n++;
        if (w && w->data && op.kind != OpKind::moe_ffn)
            d.bytes += (double)w->nb[3] * (double)w->ne[3];
        if (op.kind == OpKind::mul_mat_swiglu) d.bytes += (double)op.src[2]->nb[3] * (double)op.src[2]->ne[3];
    }
    struct Detail {
        double s = 0, bytes = 0;
        long n = 0;
    };
    std::map<std::string, Detail> detail_;

    cpu::ThreadPool pool_;
    cpu::Scratch scratch_;
    OpObserver* observer_ = nullptr;
    static constexpr int kKinds = 32;
    const int profile_ = [] {
        const char* e = std::getenv("IKLLM_OP_PROFILE");
        return e && *e ? std::atoi(e) : 0;
    }();
    double prof_s_[kKinds] = {};
    long prof_n_[kKinds] = {};
};

// MemAvailable of /proc/meminfo (free memory plus what the kernel can reclaim) plus free swap;
// 0 when unknown.
uint64_t available_memory(uint64_t free_swap) {
    FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kib = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) break;
    std::fclose(f);
    return kib ? kib * 1024 + free_swap : 0;
}

class CpuBackend : public Backend {
public:
    Capabilities capabilities() const override {
        Capabilities c;
        c.name = "CPU";
        c.description = std::string("CPU (") + cpu::isa_name(cpu::best_isa()) + ")";
        struct sysinfo si;
        if (sysinfo(&si) == 0) {
            c.memory_total = (uint64_t)si.totalram * si.mem_unit;
            c.memory_free = (uint64_t)si.freeram * si.mem_unit;
            c.memory_available = available_memory((uint64_t)si.freeswap * si.mem_unit);
        }
        return c;
    }
    bool supports_weight_type(uint32_t type) const override {
        const quant::TypeTraits* tt = quant::find_type(type);
        return tt && tt->dequant && cpu::find_matmul(type, cpu::best_isa()) != nullptr;
    }
    // Measured with ikllm bench (docs/cpu-speed.md, "Run-time repack"): with AVX-512 the plain
    // Q8_0 kernel has prompt-batch panels and the reference's interleaved forms do not (pp512
    // about half); with AVX2 the interleaved forms win. Q4_0_R8 on AVX-512 fills the plain panels
    // for prompts (same speed) and streams faster in token generation (legacy_r8_avx512.h).
    // Q2_K .. Q6_K, IQ4_K, IQ4_XS: the reference's Q4_K_R4 helps with AVX2 (its IQ4_XS_R8,
    // Q2_K_R4, Q3_K_R4 do not); with AVX-512 ikllm's own Q2_K_R8, Q3_K_R8, Q4_K_R8, Q5_K_R8,
    // Q6_K_R8, IQ4_K_R8, IQ4_XS_X8, IQ2_K_R8, IQ3_K_R8, IQ2_KS_R8, IQ3_KS_R8, IQ4_KS_R8, IQ5_KS_R8 and IQ2_KL_R8
    // (kernels/kquant_r8_avx512.h, iqk_r8_avx512.h) decode a token's rows 1.4-2x as fast as the
    // plain types and give the plain types' prompt results.
    bool repack_helps(uint32_t type) const override {
        const bool avx512 = cpu::best_isa() == cpu::Isa::avx512;
        if (stored_form_slower(type)) return true;
        switch (type) {
            case quant::T_Q4_0: return true;
            case quant::T_Q8_0: return !avx512;
            case quant::T_Q4_K: return true;
            case quant::T_Q6_K:
            case quant::T_IQ4_K:
            case quant::T_IQ4_XS:
            case quant::T_Q2_K:
            case quant::T_Q3_K:
            case quant::T_Q5_K:
            case quant::T_IQ2_K:
            case quant::T_IQ3_K:
            case quant::T_IQ2_KS:
            case quant::T_IQ3_KS:
            case quant::T_IQ4_KS:
            case quant::T_IQ5_KS:
            case quant::T_IQ2_KL: return avx512;
            case quant::T_BF16: return true;
            default: return false;
        }
    }
    // With AVX-512 the converted forms run ikllm's own kernels, written to give the plain kernels'
    // results (kernels/legacy_r8_avx512.h, kquant_r8_avx512.h, iqk_r8_avx512.h). Elsewhere Q4_0,
    // Q8_0 and Q4_K go to the reference's interleaved forms, whose kernels sum in another order
    // (Q4_K_R4 also rounds activations per 256 columns, Q8_K32): the plain scalar and AVX2 kernels
    // reproduce the reference's logits (conformance: llama-q-Q8_0 exactly, qwen3moe-tiny-Q4_K_M
    // to 1e-7) and the interleaved ones move them by 1e-2 (three chaotic reference models fail).
    // A file's slow interleaved form has only the generic float kernel, the reference's
    // numerics neither way. BF16 products are float either way.
    bool repack_changes_results(uint32_t type) const override {
        if (stored_form_slower(type) || type == quant::T_BF16) return false;
        if (cpu::best_isa() != cpu::Isa::avx512) return true;
        const uint32_t to = repack_type(type);
        return !(quant::is_runtime_layout(to) || to == quant::T_Q4_0_R8 || to == quant::T_Q8_0_R8);
    }
    uint32_t repack_type(uint32_t type) const override {
        if (stored_form_slower(type)) {  // back to the plain type, or on to this CPU's layout of it
            const uint32_t base = quant::repack_base(type);
            const uint32_t next = repack_helps(base) ? repack_type(base) : 0;
            if (next && next != type && supports_weight_type(next)) return next;
            return supports_weight_type(base) ? base : 0;
        }
        if (cpu::best_isa() == cpu::Isa::avx512) {
            if (type == quant::T_Q4_K) return quant::T_Q4_K_R8;
            if (type == quant::T_Q6_K) return quant::T_Q6_K_R8;
            if (type == quant::T_IQ4_K) return quant::T_IQ4_K_R8;
            if (type == quant::T_IQ4_XS) return quant::T_IQ4_XS_X8;
            if (type == quant::T_Q2_K) return quant::T_Q2_K_R8;
            if (type == quant::T_Q3_K) return quant::T_Q3_K_R8;
            if (type == quant::T_Q5_K) return quant::T_Q5_K_R8;
            if (type == quant::T_IQ2_K) return quant::T_IQ2_K_R8;
            if (type == quant::T_IQ3_K) return quant::T_IQ3_K_R8;
            if (type == quant::T_IQ2_KS) return quant::T_IQ2_KS_R8;
            if (type == quant::T_IQ3_KS) return quant::T_IQ3_KS_R8;
            if (type == quant::T_IQ4_KS) return quant::T_IQ4_KS_R8;
            if (type == quant::T_IQ5_KS) return quant::T_IQ5_KS_R8;
            if (type == quant::T_IQ2_KL) return quant::T_IQ2_KL_R8;
        }
        return quant::repack_target(type);
    }
    // The reference's interleaved file forms this CPU multiplies slower than their plain type or
    // than ikllm's own layout of it (bench/quant_matmul_bench, one core, from cache: Q2_K_R4 /
    // Q3_K_R4 / Q5_0_R4 / Q6_0_R4 / MXFP4_R8 have only the generic dequantize-and-dot kernel,
    // 0.1-0.9 GB/s; with AVX-512 Q4_K_R4 13.6 GB/s against Q4_K_R8 55, Q6_K_R4 37 against
    // Q6_K_R8 47) and whose repack only moves bits, so run-time repack can undo it
    // (quant/unpack_interleaved.h). Not IQ4_K_R4 / IQ4_XS_R8 (10 and 17 GB/s): the reference
    // multiplies them without the saturating pair sums of its plain kernels, and its logits for
    // such files are those of the interleaved forms (refdata conformance). Not IQ2_S_R4 /
    // IQ3_S_R4 either: they have the grid kernel on every ISA (grid_int.h, exact at every batch
    // size; AVX-512 1 token 3.5 / 4.0 GB/s, plain 3.9 / 7.2), and the plain types re-encode
    // prompt batches where the reference multiplies these forms exactly (llama-q-IQ2_M_R4
    // converted: rms 2e-2 from the reference's logits, as stored 2e-3).
    static bool stored_form_slower(uint32_t type) {
        bool slower = false;
        switch (type) {
            case quant::T_Q2_K_R4:
            case quant::T_Q3_K_R4:
            case quant::T_Q5_0_R4:
            case quant::T_Q6_0_R4:
            case quant::T_MXFP4_R8: slower = true; break;
            case quant::T_Q4_K_R4:
            case quant::T_Q6_K_R4: slower = cpu::best_isa() == cpu::Isa::avx512; break;
            default: break;
        }
        return slower && quant::unpack_supported(type);
    }
    bool supports(const Op& op) const override {
        if (op.kind == OpKind::mul_mat || op.kind == OpKind::mul_mat_heads) return supports_weight_type(op.src[0]->type);
        if (op.kind == OpKind::mul_mat_swiglu)
            return supports_weight_type(op.src[0]->type) && supports_weight_type(op.src[2]->type);
        if (op.kind == OpKind::moe_ffn)
            for (const Tensor* w : op.ex)
                if (w && !supports_weight_type(w->type)) return false;
        if (op.kind == OpKind::get_rows) {
            const quant::TypeTraits* tt = quant::find_type(op.src[0]->type);
            return tt && tt->dequant;
        }
        return true;
    }
    std::unique_ptr<Buffer> alloc(size_t bytes) override { return std::make_unique<HostBuffer>(bytes); }
    void upload(void* dev, const void* host, size_t n) override { std::memcpy(dev, host, n); }
    void download(void* host, const void* dev, size_t n) override { std::memcpy(host, dev, n); }
    void fill_zero(void* dev, size_t n) override { std::memset(dev, 0, n); }
    std::unique_ptr<Executor> make_executor(int n_threads) override { return std::make_unique<CpuExecutor>(n_threads); }
};

// A stand-in GPU for tests on machines without one: the CPU kernels, but memory of its own
// (filled with 0xff, i.e. NaN, until written) that the scheduler must copy activations into
// and out of, and no row-interleaved weight types (like CUDA). With a memory size it behaves
// like a GPU of that size: allocations beyond it throw std::bad_alloc (as the CUDA backend's
// do on cudaErrorMemoryAllocation) and the capabilities report what is free.
class HostDeviceDouble final : public CpuBackend {
public:
    HostDeviceDouble(int index, uint64_t memory) : index_(index), memory_(memory), used_(std::make_shared<std::atomic<uint64_t>>(0)) {}
    Capabilities capabilities() const override {
        Capabilities c = CpuBackend::capabilities();
        c.name = "CUDA" + std::to_string(index_);
        c.description = "test double (CPU kernels, separate memory)";
        if (memory_) {
            const uint64_t used = used_->load();
            c.memory_total = memory_;
            c.memory_free = c.memory_available = used < memory_ ? memory_ - used : 0;
        }
        return c;
    }
    bool host_memory() const override { return false; }
    bool supports_weight_type(uint32_t type) const override {
        const quant::TypeTraits* tt = quant::find_type(type);
        return tt && tt->interleave == 1 && CpuBackend::supports_weight_type(type);
    }
    std::unique_ptr<Buffer> alloc(size_t bytes) override {
        if (memory_ && used_->fetch_add(bytes) + bytes > memory_) {
            used_->fetch_sub(bytes);
            throw std::bad_alloc();
        }
        struct Counted final : Buffer {
            HostBuffer mem;
            std::shared_ptr<std::atomic<uint64_t>> used;
            size_t bytes;
            Counted(size_t n, std::shared_ptr<std::atomic<uint64_t>> u) : mem(n), used(std::move(u)), bytes(n) {}
            ~Counted() override { used->fetch_sub(bytes); }
            void* data() override { return mem.data(); }
            size_t size() const override { return mem.size(); }
        };
        std::unique_ptr<Counted> b;
        try {
            b = std::make_unique<Counted>(bytes, used_);
        } catch (...) {
            used_->fetch_sub(bytes);
            throw;
        }
        std::memset(b->data(), 0xff, bytes);
        return b;
    }

private:
    int index_;
    uint64_t memory_;  // 0 = unlimited
    std::shared_ptr<std::atomic<uint64_t>> used_;  // shared with the buffers, which may outlive the backend
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }
std::unique_ptr<Backend> make_host_device_double(int index, uint64_t memory) {
    return std::make_unique<HostDeviceDouble>(index, memory);
}

}  // namespace ikllm::backend
