// Byte sinks and sources for session-state (de)serialisation: a caller buffer, or a file.
// File output is atomic: written to "<path>.tmp.<pid>" and renamed over the path on commit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ikllm {

class ByteSink {
public:
    virtual ~ByteSink() = default;
    virtual void write(const void* data, size_t n) = 0;
};

class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Reads exactly n bytes; throws Error(invalid_file) when the data ends first.
    virtual void read(void* data, size_t n) = 0;
    virtual bool at_end() = 0;
    virtual void rewind() = 0;
};

class MemorySink : public ByteSink {
public:
    MemorySink(void* buf, size_t size) : p_(static_cast<uint8_t*>(buf)), size_(size) {}
    void write(const void* data, size_t n) override;
    size_t written() const { return n_; }

private:
    uint8_t* p_;
    size_t size_, n_ = 0;
};

class MemorySource : public ByteSource {
public:
    MemorySource(const void* data, size_t size) : p_(static_cast<const uint8_t*>(data)), size_(size) {}
    void read(void* data, size_t n) override;
    bool at_end() override { return at_ == size_; }
    void rewind() override { at_ = 0; }

private:
    const uint8_t* p_;
    size_t size_, at_ = 0;
};

class AtomicFileSink : public ByteSink {
public:
    explicit AtomicFileSink(const std::string& path);  // throws Error(io_error)
    ~AtomicFileSink() override;                        // removes the temporary unless committed
    void write(const void* data, size_t n) override;
    void commit();  // flush, fsync, rename over the path
    AtomicFileSink(const AtomicFileSink&) = delete;
    AtomicFileSink& operator=(const AtomicFileSink&) = delete;

private:
    std::string path_, tmp_;
    std::FILE* f_ = nullptr;
};

class FileSource : public ByteSource {
public:
    explicit FileSource(const std::string& path);  // throws Error(io_error)
    ~FileSource() override;
    void read(void* data, size_t n) override;
    bool at_end() override;
    void rewind() override;
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;

private:
    std::string path_;
    std::FILE* f_ = nullptr;
};

}  // namespace ikllm
