// GGUF reader: maps one model (single file or a split set), validates every count,
// length, offset and size before use, and exposes metadata and tensor infos.
// Spec: docs/gguf.md (shared). All failures throw ikllm::Error(Status::invalid_file|io_error|unsupported).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ikllm::gguf {

enum class ValueType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* value_type_name(ValueType t);

// One metadata value. Scalars are widened into the matching 64-bit slot;
// arrays keep their element type and a list of elements (strings or numbers).
struct Value {
    ValueType type = ValueType::u8;
    ValueType elem_type = ValueType::u8;  // for arrays
    uint64_t u = 0;                        // unsigned ints and bool
    int64_t i = 0;                         // signed ints
    double f = 0;                          // floats
    std::string s;                         // string
    std::vector<std::string> strs;         // array of strings
    std::vector<double> nums;              // array of numbers (exact for |x| < 2^53)
    size_t array_size() const { return elem_type == ValueType::string ? strs.size() : nums.size(); }
    bool is_integer() const;
    // Render for `ikllm info` (arrays abbreviated).
    std::string to_string(size_t max_items = 8) const;
};

struct TensorInfo {
    std::string name;
    uint32_t type = 0;                 // GGUF/ggml type id
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t nbytes = 0;               // nrows * row_size(type, ne0)
    uint32_t file_index = 0;           // which split part
    uint64_t file_offset = 0;          // absolute byte offset in that part
    const uint8_t* data = nullptr;     // into the mapping
    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
};

class MappedFile;  // read-only mmap of one file

// Block geometry of a tensor type, supplied by the caller (the quant layer) so the
// container reader stays independent of the type registry. Return false for unknown ids.
struct TypeGeometry {
    const char* name;
    int32_t block_elems, block_bytes, row_meta_bytes, interleave;
};
using GeometryFn = bool (*)(uint32_t type, TypeGeometry* out);

class File {
public:
    // Opens `path`; when it is the first part of a split set, opens every part.
    // `geometry` validates tensor types and sizes; unknown types are an error naming the tensor.
    // map = false reads the bytes into memory instead of mapping them; huge = true then asks for
    // transparent huge pages on that copy before it is written (fewer TLB misses when token
    // generation streams the weights; a read-only file mapping rarely gets them).
    // on_read(done, total) is called while a copy is read (before every 16 MiB, bytes of this part); it may
    // throw (a cancelled load) and the copy is freed.
    using ReadProgress = std::function<void(uint64_t done, uint64_t total)>;
    static std::unique_ptr<File> open(const std::string& path, GeometryFn geometry, bool map = true, bool huge = false,
                                      const ReadProgress& on_read = nullptr);
    ~File();

    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    size_t n_parts() const { return parts_.size(); }
    uint64_t total_file_bytes() const;
    const std::string& path() const { return path_; }

    // Metadata (of the first part; split keys included).
    const std::vector<std::pair<std::string, Value>>& kvs() const { return kvs_; }
    const Value* find(std::string_view key) const;
    // Typed getters: accept any integer width whose value fits; throw invalid_file on wrong type.
    bool has(std::string_view key) const { return find(key) != nullptr; }
    uint64_t get_u64(std::string_view key) const;
    uint32_t get_u32(std::string_view key) const;
    int64_t get_i64(std::string_view key) const;
    double get_f64(std::string_view key) const;
    bool get_bool(std::string_view key) const;
    const std::string& get_str(std::string_view key) const;
    const std::vector<std::string>& get_str_array(std::string_view key) const;
    std::vector<double> get_num_array(std::string_view key) const;
    // Optional variants return the default when absent (wrong type still throws).
    uint32_t get_u32_or(std::string_view key, uint32_t def) const { return has(key) ? get_u32(key) : def; }
    float get_f32_or(std::string_view key, float def) const { return has(key) ? (float)get_f64(key) : def; }
    bool get_bool_or(std::string_view key, bool def) const { return has(key) ? get_bool(key) : def; }
    std::string get_str_or(std::string_view key, const std::string& def) const { return has(key) ? get_str(key) : def; }

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;

    // io_error when a part no longer has the size it had when opened.
    void check_unchanged() const;
    // Whether the bytes are mapped (else they were read into memory).
    bool mapped() const;
    // Advise the kernel about the mapping (populate / huge pages); best effort.
    void advise_willneed() const;
    // madvise(MADV_HUGEPAGE) on every part; false if the kernel refused.
    bool advise_huge_pages() const;
    // The mapped byte ranges of all parts (for memory placement policies).
    std::vector<std::pair<void*, uint64_t>> mapped_ranges() const;

private:
    File() = default;
    void parse_part(size_t part_index, GeometryFn geometry);

    std::string path_;
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    uint64_t expected_parts_ = 1;
    std::vector<std::unique_ptr<MappedFile>> parts_;
    std::vector<std::pair<std::string, Value>> kvs_;
    std::map<std::string, size_t, std::less<>> kv_index_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace ikllm::gguf
