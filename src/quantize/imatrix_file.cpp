#include "quantize/imatrix_file.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace ikllm::quantize {

namespace {
struct FileCloser {
    void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

class Reader {
public:
    Reader(FILE* f, const std::string& path) : f_(f), path_(path) {
        std::fseek(f, 0, SEEK_END);
        size_ = (uint64_t)std::ftell(f);
        std::fseek(f, 0, SEEK_SET);
    }
    void read(void* p, size_t n) {
        if (n > remaining() || (n && std::fread(p, 1, n, f_) != n))
            fail(Status::invalid_file, "importance matrix '" + path_ + "' is truncated or corrupt");
        pos_ += n;
    }
    int32_t i32() {
        int32_t v;
        read(&v, 4);
        return v;
    }
    uint64_t remaining() const { return size_ - pos_; }

private:
    FILE* f_;
    std::string path_;
    uint64_t size_ = 0, pos_ = 0;
};
}  // namespace

Imatrix load_imatrix(const std::string& path) {
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f) fail(Status::io_error, "cannot open importance matrix '" + path + "': " + std::strerror(errno));
    Reader r(f.get(), path);
    Imatrix m;
    const int32_t n = r.i32();
    if (n <= 0 || (uint64_t)n > r.remaining() / 12)
        fail(Status::invalid_file, "importance matrix '" + path + "': bad entry count " + std::to_string(n));
    for (int32_t e = 0; e < n; ++e) {
        const int32_t len = r.i32();
        if (len <= 0 || (uint64_t)len > r.remaining())
            fail(Status::invalid_file, "importance matrix '" + path + "': bad name length in entry " + std::to_string(e));
        std::string name((size_t)len, '\0');
        r.read(name.data(), (size_t)len);
        ImatrixEntry en;
        en.ncall = r.i32();
        const int32_t nval = r.i32();
        if (nval <= 0 || (uint64_t)nval > r.remaining() / 4)
            fail(Status::invalid_file, "importance matrix '" + path + "': bad value count for '" + name + "'");
        en.mean_sq.resize((size_t)nval);
        r.read(en.mean_sq.data(), (size_t)nval * 4);
        for (float& v : en.mean_sq) {
            if (!std::isfinite(v) || v < 0)
                fail(Status::invalid_file, "importance matrix '" + path + "': invalid value for '" + name + "'");
            if (en.ncall > 0) v /= (float)en.ncall;
        }
        m.entries[name] = std::move(en);
    }
    if (r.remaining() >= 8) {  // optional trailer: chunk count and dataset name
        m.chunks = r.i32();
        const int32_t len = r.i32();
        if (len > 0 && (uint64_t)len <= r.remaining()) {
            m.dataset.resize((size_t)len);
            r.read(m.dataset.data(), (size_t)len);
        }
    }
    return m;
}

void save_imatrix(const Imatrix& m, const std::string& path) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    FilePtr f(std::fopen(tmp.c_str(), "wb"));
    if (!f) fail(Status::io_error, "cannot create '" + tmp + "': " + std::strerror(errno));
    bool ok = true;
    auto put = [&](const void* p, size_t n) { ok = ok && std::fwrite(p, 1, n, f.get()) == n; };
    auto put_i32 = [&](int32_t v) { put(&v, 4); };
    put_i32((int32_t)m.entries.size());
    std::vector<float> scaled;
    for (const auto& [name, e] : m.entries) {
        put_i32((int32_t)name.size());
        put(name.data(), name.size());
        const int32_t ncall = e.ncall > 0 ? e.ncall : 1;
        put_i32(ncall);
        put_i32((int32_t)e.mean_sq.size());
        scaled.resize(e.mean_sq.size());
        for (size_t i = 0; i < scaled.size(); ++i) scaled[i] = e.mean_sq[i] * (float)ncall;
        put(scaled.data(), scaled.size() * 4);
    }
    put_i32(m.chunks);
    put_i32((int32_t)m.dataset.size());
    put(m.dataset.data(), m.dataset.size());
    ok = ok && std::fflush(f.get()) == 0 && ::fsync(fileno(f.get())) == 0;
    f.reset();
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        fail(Status::io_error, "cannot write importance matrix '" + path + "': " + std::strerror(errno));
    }
}

}  // namespace ikllm::quantize
