#include "session/state_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace ikllm {

namespace {
[[noreturn]] void truncated() { fail(Status::invalid_file, "session state is truncated"); }
constexpr size_t kFileBuffer = 1 << 20;
}  // namespace

void MemorySink::write(const void* data, size_t n) {
    if (n > size_ - n_) fail(Status::internal, "session state: buffer smaller than the computed size");
    if (n) std::memcpy(p_ + n_, data, n);  // n = 0 may come with a null pointer (empty vector)
    n_ += n;
}

void MemorySource::read(void* data, size_t n) {
    if (n > size_ - at_) truncated();
    if (n) std::memcpy(data, p_ + at_, n);  // n = 0 may come with a null pointer (empty vector)
    at_ += n;
}

AtomicFileSink::AtomicFileSink(const std::string& path) : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) fail(Status::io_error, "cannot create '" + tmp_ + "': " + std::strerror(errno));
    std::setvbuf(f_, nullptr, _IOFBF, kFileBuffer);
}

AtomicFileSink::~AtomicFileSink() {
    if (f_) {
        std::fclose(f_);
        std::remove(tmp_.c_str());
    }
}

void AtomicFileSink::write(const void* data, size_t n) {
    if (n && std::fwrite(data, 1, n, f_) != n)
        fail(Status::io_error, "cannot write '" + tmp_ + "': " + std::strerror(errno));
}

void AtomicFileSink::commit() {
    const bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    const int err = errno;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok || !closed) {
        std::remove(tmp_.c_str());
        fail(Status::io_error, "cannot finish writing '" + tmp_ + "': " + std::strerror(ok ? errno : err));
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp_.c_str());
        fail(Status::io_error, "cannot rename '" + tmp_ + "' to '" + path_ + "': " + std::strerror(e));
    }
}

FileSource::FileSource(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) fail(Status::io_error, "cannot open '" + path + "': " + std::strerror(errno));
    std::setvbuf(f_, nullptr, _IOFBF, kFileBuffer);
}

FileSource::~FileSource() {
    if (f_) std::fclose(f_);
}

void FileSource::read(void* data, size_t n) {
    if (n == 0) return;
    if (std::fread(data, 1, n, f_) != n) {
        if (std::ferror(f_)) fail(Status::io_error, "cannot read '" + path_ + "': " + std::strerror(errno));
        truncated();
    }
}

bool FileSource::at_end() {
    const int c = std::fgetc(f_);
    if (c == EOF) return true;
    std::ungetc(c, f_);
    return false;
}

void FileSource::rewind() {
    std::clearerr(f_);
    if (std::fseek(f_, 0, SEEK_SET) != 0) fail(Status::io_error, "cannot seek in '" + path_ + "': " + std::strerror(errno));
}

}  // namespace ikllm
