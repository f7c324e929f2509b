// GGUF writer (version 3, little-endian). Metadata and tensors are collected, then written
// to a temporary file that is renamed over the destination only when complete, so an
// interrupted write never leaves a broken file under the final name.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace ikllm::gguf {

class Writer {
public:
    explicit Writer(uint32_t alignment = 32);
    void set(const std::string& key, const Value& v);
    void set_str(const std::string& key, const std::string& v);
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_str_array(const std::string& key, const std::vector<std::string>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
    // Copies every key of another file (except general.alignment and split keys).
    void copy_kvs(const File& f);

    // The data is copied; ne has n_dims entries.
    void add_tensor(const std::string& name, uint32_t type, const std::vector<int64_t>& ne, const void* data,
                    uint64_t nbytes);
    void write(const std::string& path) const;

    // Streaming use, for outputs larger than memory: declare every tensor with its size, then
    // begin() writes the header to a temporary file, write_data() appends each declared tensor's
    // bytes in declaration order, and commit() syncs and renames it over `path`. Destroying the
    // writer before commit() removes the temporary file.
    void declare_tensor(const std::string& name, uint32_t type, const std::vector<int64_t>& ne, uint64_t nbytes);
    void begin(const std::string& path);
    void write_data(const void* data, uint64_t nbytes);
    void commit();
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

private:
    struct T {
        std::string name;
        uint32_t type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
        uint64_t nbytes = 0;
    };
    struct Stream;
    void write_header(Stream& st) const;
    uint32_t alignment_;
    std::unique_ptr<Stream> stream_;
    size_t next_tensor_ = 0;
    std::vector<std::pair<std::string, Value>> kvs_;
    std::vector<T> tensors_;
};

}  // namespace ikllm::gguf
