#include "registry.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ikllm::backend {

namespace {

using VersionFn = int (*)();
using CountFn = int (*)(char*, size_t);
using CreateFn = Backend* (*)(int, char*, size_t);

// The directory libikllm.so was loaded from (the plug-in is installed beside it).
std::string own_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&own_directory), &info) && info.dli_fname) {
        std::string p = info.dli_fname;
        const size_t slash = p.rfind('/');
        if (slash != std::string::npos) return p.substr(0, slash + 1);
    }
    return "";
}

}  // namespace

Registry::~Registry() {
    // Backends go before the plug-in would; the plug-in itself stays mapped for the process
    // (unloading a CUDA runtime is not reliably safe).
    gpus_.clear();
}

void Registry::load() {
    // IKLLM_TEST_GPU_DOUBLE=N (1..8): N stand-in GPUs CUDA0..CUDA<N-1> (tests).
    if (const char* dbl = std::getenv("IKLLM_TEST_GPU_DOUBLE"); dbl && dbl[0] >= '1' && dbl[0] <= '8' && !dbl[1]) {
        const int n = dbl[0] - '0';
        // IKLLM_TEST_GPU_DOUBLE_MEM=BYTES[,BYTES...]: memory of each double (the last repeats;
        // a K/M/G suffix multiplies by 2^10/2^20/2^30), to test out-of-memory paths.
        std::vector<uint64_t> mem;
        if (const char* m = std::getenv("IKLLM_TEST_GPU_DOUBLE_MEM"))
            for (const char* p = m; *p;) {
                char* end = nullptr;
                uint64_t v = std::strtoull(p, &end, 10);
                if (end == p) break;
                if (*end == 'K') v <<= 10, ++end;
                else if (*end == 'M') v <<= 20, ++end;
                else if (*end == 'G') v <<= 30, ++end;
                mem.push_back(v);
                p = *end == ',' ? end + 1 : end;
                if (*end != ',') break;
            }
        for (int i = 0; i < n; ++i)
            gpus_.push_back(make_host_device_double(i, mem.empty() ? 0 : mem[std::min<size_t>((size_t)i, mem.size() - 1)]));
        status_ = std::string(n == 1 ? "CUDA0: test double" : "CUDA0..CUDA" + std::to_string(n - 1) + ": test doubles") +
                  " (IKLLM_TEST_GPU_DOUBLE=" + dbl + ": CPU kernels on separate memory)";
        return;
    }
    const char* env = std::getenv("IKLLM_CUDA_PLUGIN");
    std::vector<std::string> candidates;
    if (env && *env) {
        if (std::string(env) == "none") {
            status_ = "CUDA: disabled (IKLLM_CUDA_PLUGIN=none)";
            return;
        }
        candidates.push_back(env);
    } else {
        candidates.push_back(own_directory() + "libikllm-cuda.so");
        candidates.push_back("libikllm-cuda.so");
    }
    void* h = nullptr;
    std::string why;
    for (const std::string& c : candidates) {
        h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h) break;
        const char* e = dlerror();
        if (why.empty() && e) why = e;
    }
    if (!h) {
        status_ = "CUDA: plug-in libikllm-cuda.so not loaded (" + why + ")";
        return;
    }
    auto version = reinterpret_cast<VersionFn>(dlsym(h, "ikllm_cuda_plugin_interface_version"));
    auto count = reinterpret_cast<CountFn>(dlsym(h, "ikllm_cuda_plugin_device_count"));
    auto create = reinterpret_cast<CreateFn>(dlsym(h, "ikllm_cuda_plugin_create"));
    if (!version || !count || !create) {
        status_ = "CUDA: libikllm-cuda.so lacks the plug-in entry points";
        return;
    }
    if (version() != kInterfaceVersion) {
        status_ = "CUDA: libikllm-cuda.so was built for backend interface " + std::to_string(version()) + ", this library has " +
                  std::to_string(kInterfaceVersion);
        return;
    }
    char err[512] = {0};
    const int n = count(err, sizeof err);
    if (n < 0) {
        status_ = std::string("CUDA: ") + err;
        return;
    }
    if (n == 0) {
        status_ = "CUDA: no device found";
        return;
    }
    std::string names;
    for (int i = 0; i < n; ++i) {
        err[0] = 0;
        Backend* b = create(i, err, sizeof err);
        if (!b) {
            status_ = "CUDA: device " + std::to_string(i) + " failed to start: " + err;
            gpus_.clear();
            return;
        }
        gpus_.emplace_back(b);
        const Capabilities c = b->capabilities();
        char line[256];
        std::snprintf(line, sizeof line, "%s%s: %s (sm_%d%d, %.1f GiB)", i ? "; " : "", c.name.c_str(), c.description.c_str(),
                      c.compute_major, c.compute_minor, c.memory_total / 1073741824.0);
        names += line;
    }
    status_ = "CUDA: " + std::to_string(n) + (n == 1 ? " device: " : " devices: ") + names;
}

int Registry::gpu_count() {
    std::call_once(once_, [this] { load(); });
    return (int)gpus_.size();
}

Backend* Registry::gpu(int index) {
    if (index < 0 || index >= gpu_count()) return nullptr;
    return gpus_[(size_t)index].get();
}

std::string Registry::status() {
    std::call_once(once_, [this] { load(); });
    return status_;
}

}  // namespace ikllm::backend
