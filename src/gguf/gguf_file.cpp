// GGUF reader. Every count, length and offset read from the file is checked against the
// bytes that remain before it is used to size anything, so corrupt or hostile files give
// an error naming what is wrong and where, never a crash or a huge allocation.
#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/aligned_memory.h"
#include "core/error.h"

namespace ikllm::gguf {

namespace {
constexpr uint32_t kMagic = 0x46554747u;  // "GGUF" little-endian
constexpr uint64_t kMaxNameLen = 1u << 16;  // far above any real tensor name
constexpr uint64_t kMaxTensors = 1u << 24;

std::string hex_offset(uint64_t off) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, off);
    return buf;
}
}  // namespace

// One file's bytes: a read-only mapping, or (map = false) a private copy read with pread so
// that a file that shrinks or fails while being read gives an io_error instead of SIGBUS later.
class MappedFile {
public:
    MappedFile(const std::string& path, bool map, bool huge, const File::ReadProgress& on_read) : path_(path) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) fail(Status::io_error, "cannot open '" + path + "': " + std::strerror(errno));
        struct stat st;
        if (::fstat(fd_, &st) != 0) {
            int e = errno;
            ::close(fd_);
            fail(Status::io_error, "cannot stat '" + path + "': " + std::strerror(e));
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd_);
            fail(Status::io_error, "'" + path + "' is not a regular file");
        }
        size_ = (uint64_t)st.st_size;
        if (size_ == 0) return;
        if (map) {
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
            if (p == MAP_FAILED) {
                int e = errno;
                ::close(fd_);
                fail(e == ENOMEM ? Status::out_of_memory : Status::io_error,
                     "cannot map '" + path + "': " + std::strerror(e));
            }
            base_ = static_cast<const uint8_t*>(p);
            mapped_ = true;
            return;
        }
        try {
            read_all(huge, on_read);
        } catch (...) {
            aligned_free64(owned_);
            ::close(fd_);
            throw;
        }
        base_ = owned_;
    }
    ~MappedFile() {
        if (mapped_) ::munmap(const_cast<uint8_t*>(base_), size_);
        aligned_free64(owned_);
        if (fd_ >= 0) ::close(fd_);
    }
    // io_error when the file no longer has the size it had at open (a mapping would fault on
    // the missing pages; a copy would no longer match the file).
    void check_size() const {
        struct stat st;
        if (::fstat(fd_, &st) != 0) fail(Status::io_error, "cannot stat '" + path_ + "': " + std::strerror(errno));
        if ((uint64_t)st.st_size != size_)
            fail(Status::io_error, "'" + path_ + "' changed size while being loaded (" + std::to_string(size_) +
                 " -> " + std::to_string((uint64_t)st.st_size) + " bytes)");
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return base_; }
    uint64_t size() const { return size_; }
    bool mapped() const { return mapped_; }
    const std::string& path() const { return path_; }
    void advise_willneed() const {
        if (base_) ::madvise(const_cast<uint8_t*>(base_), size_, MADV_WILLNEED);
    }
    // Transparent huge pages for the mapping (effective where the kernel supports file THP).
    bool advise_huge_pages() const {
        return base_ && ::madvise(const_cast<uint8_t*>(base_), size_, MADV_HUGEPAGE) == 0;
    }
    std::pair<void*, uint64_t> range() const { return {const_cast<uint8_t*>(base_), size_}; }

private:
    void read_all(bool huge, const File::ReadProgress& on_read) {
        owned_ = static_cast<uint8_t*>(aligned_alloc64(size_));
        if (huge) ikllm::advise_huge_pages(owned_, size_);  // before the first write faults the pages in
        uint64_t done = 0;
        while (done < size_) {
            if (on_read) on_read(done, size_);  // before each 16 MiB piece
            const size_t want = (size_t)std::min<uint64_t>(size_ - done, on_read ? 16u << 20 : 1u << 30);
            const ssize_t n = ::pread(fd_, owned_ + done, want, (off_t)done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail(Status::io_error, "cannot read '" + path_ + "': " + std::strerror(errno));
            if (n == 0)
                fail(Status::io_error, "short read: '" + path_ + "' ended at byte " + std::to_string(done) + " of " +
                     std::to_string(size_) + " (changed while being read?)");
            done += (uint64_t)n;
        }
    }
    std::string path_;
    int fd_ = -1;
    const uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    uint8_t* owned_ = nullptr;  // the read copy (map = false)
    bool mapped_ = false;
};

namespace {

// Bounds-checked little-endian cursor over one mapped file.
class Cursor {
public:
    Cursor(const uint8_t* p, uint64_t size, const std::string& file) : p_(p), size_(size), file_(file) {}
    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    [[noreturn]] void error(const std::string& what) const {
        fail(Status::invalid_file, "invalid GGUF '" + file_ + "' at offset " + hex_offset(pos_) + ": " + what);
    }
    void need(uint64_t n, const char* what) const {
        if (n > remaining()) error(std::string("truncated file while reading ") + what);
    }
    template <typename T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string read_string(const char* what, uint64_t max_len = UINT64_MAX) {
        const uint64_t len = read<uint64_t>(what);
        if (len > remaining()) error(std::string(what) + " length " + std::to_string(len) + " exceeds the file");
        if (len > max_len) error(std::string(what) + " length " + std::to_string(len) + " is too long");
        std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
        pos_ += len;
        return s;
    }

private:
    const uint8_t* p_;
    uint64_t size_;
    uint64_t pos_ = 0;
    const std::string& file_;
};

size_t scalar_size(ValueType t) {
    switch (t) {
        case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
        case ValueType::u16: case ValueType::i16: return 2;
        case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
        case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
        default: return 0;
    }
}

// Reads one scalar of type t into v (u/i/f slots). Cursor has been bounds-checked by caller or read<> checks.
void read_scalar(Cursor& c, ValueType t, Value& v) {
    switch (t) {
        case ValueType::u8: v.u = c.read<uint8_t>("u8"); v.i = (int64_t)v.u; v.f = (double)v.u; break;
        case ValueType::i8: v.i = c.read<int8_t>("i8"); v.f = (double)v.i; break;
        case ValueType::u16: v.u = c.read<uint16_t>("u16"); v.i = (int64_t)v.u; v.f = (double)v.u; break;
        case ValueType::i16: v.i = c.read<int16_t>("i16"); v.f = (double)v.i; break;
        case ValueType::u32: v.u = c.read<uint32_t>("u32"); v.i = (int64_t)v.u; v.f = (double)v.u; break;
        case ValueType::i32: v.i = c.read<int32_t>("i32"); v.f = (double)v.i; break;
        case ValueType::u64: v.u = c.read<uint64_t>("u64"); v.i = (int64_t)v.u; v.f = (double)v.u; break;
        case ValueType::i64: v.i = c.read<int64_t>("i64"); v.f = (double)v.i; break;
        case ValueType::f32: v.f = c.read<float>("f32"); break;
        case ValueType::f64: v.f = c.read<double>("f64"); break;
        case ValueType::boolean: {
            uint8_t b = c.read<uint8_t>("bool");
            if (b > 1) c.error("bool value " + std::to_string(b) + " is not 0 or 1");
            v.u = b; v.i = b; v.f = b;
            break;
        }
        default: c.error("internal: not a scalar type");
    }
}

double scalar_as_double(const Value& v, ValueType t) {
    switch (t) {
        case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64:
        case ValueType::boolean: return (double)v.u;
        case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64: return (double)v.i;
        default: return v.f;
    }
}

bool is_valid_value_type(uint32_t t) { return t <= 12; }

// Keys and tensor names are handed out and looked up as C strings (ikllm_model_meta_key, ...): they
// must be non-empty, free of NUL bytes and valid UTF-8 (strict, Unicode Table 3-7).
const char* bad_name_reason(const std::string& s) {
    if (s.empty()) return "is empty";
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    const size_t n = s.size();
    for (size_t i = 0; i < n;) {
        const uint8_t b = p[i];
        if (b == 0) return "contains a NUL byte";
        size_t len = 1;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b < 0x80) len = 1;
        else if (b >= 0xC2 && b <= 0xDF) len = 2;
        else if (b == 0xE0) { len = 3; lo = 0xA0; }
        else if (b == 0xED) { len = 3; hi = 0x9F; }
        else if (b >= 0xE1 && b <= 0xEF) len = 3;
        else if (b == 0xF0) { len = 4; lo = 0x90; }
        else if (b >= 0xF1 && b <= 0xF3) len = 4;
        else if (b == 0xF4) { len = 4; hi = 0x8F; }
        else return "is not valid UTF-8";
        if (n - i < len) return "is not valid UTF-8";
        for (size_t j = 1; j < len; ++j) {
            const uint8_t c = p[i + j];
            if (c < (j == 1 ? lo : 0x80) || c > (j == 1 ? hi : 0xBF)) return "is not valid UTF-8";
        }
        i += len;
    }
    return nullptr;
}

}  // namespace

const char* value_type_name(ValueType t) {
    switch (t) {
        case ValueType::u8: return "u8"; case ValueType::i8: return "i8";
        case ValueType::u16: return "u16"; case ValueType::i16: return "i16";
        case ValueType::u32: return "u32"; case ValueType::i32: return "i32";
        case ValueType::f32: return "f32"; case ValueType::boolean: return "bool";
        case ValueType::string: return "string"; case ValueType::array: return "array";
        case ValueType::u64: return "u64"; case ValueType::i64: return "i64";
        case ValueType::f64: return "f64";
    }
    return "?";
}

bool Value::is_integer() const {
    switch (type) {
        case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16:
        case ValueType::u32: case ValueType::i32: case ValueType::u64: case ValueType::i64: return true;
        default: return false;
    }
}

std::string Value::to_string(size_t max_items) const {
    auto num = [](double d, ValueType t) {
        char buf[64];
        if (t == ValueType::f32 || t == ValueType::f64) std::snprintf(buf, sizeof buf, "%g", d);
        else std::snprintf(buf, sizeof buf, "%.0f", d);
        return std::string(buf);
    };
    switch (type) {
        case ValueType::string: return s;
        case ValueType::boolean: return u ? "true" : "false";
        case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64: return std::to_string(u);
        case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64: return std::to_string(i);
        case ValueType::f32: case ValueType::f64: return num(f, type);
        case ValueType::array: {
            std::string out = "[";
            const size_t n = array_size();
            for (size_t k = 0; k < n && k < max_items; ++k) {
                if (k) out += ", ";
                out += elem_type == ValueType::string ? "'" + strs[k] + "'" : num(nums[k], elem_type);
            }
            if (n > max_items) out += ", ... (" + std::to_string(n) + " items)";
            return out + "]";
        }
    }
    return "";
}

File::~File() = default;

uint64_t File::total_file_bytes() const {
    uint64_t t = 0;
    for (auto& p : parts_) t += p->size();
    return t;
}

const Value* File::find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
[[noreturn]] void key_error(std::string_view key, const std::string& what) {
    fail(Status::invalid_file, "metadata key '" + std::string(key) + "': " + what);
}
const Value& must(const File& f, std::string_view key) {
    const Value* v = f.find(key);
    if (!v) fail(Status::invalid_file, "missing required metadata key '" + std::string(key) + "'");
    return *v;
}
}  // namespace

uint64_t File::get_u64(std::string_view key) const {
    const Value& v = must(*this, key);
    if (!v.is_integer() && v.type != ValueType::boolean)
        key_error(key, std::string("expected an integer, found ") + value_type_name(v.type));
    if (v.type == ValueType::i8 || v.type == ValueType::i16 || v.type == ValueType::i32 || v.type == ValueType::i64) {
        if (v.i < 0) key_error(key, "negative value " + std::to_string(v.i));
        return (uint64_t)v.i;
    }
    return v.u;
}
uint32_t File::get_u32(std::string_view key) const {
    uint64_t x = get_u64(key);
    if (x > UINT32_MAX) key_error(key, "value " + std::to_string(x) + " out of range");
    return (uint32_t)x;
}
int64_t File::get_i64(std::string_view key) const {
    const Value& v = must(*this, key);
    if (!v.is_integer()) key_error(key, std::string("expected an integer, found ") + value_type_name(v.type));
    if (v.type == ValueType::u64 && v.u > (uint64_t)INT64_MAX) key_error(key, "value out of range");
    return v.i;
}
double File::get_f64(std::string_view key) const {
    const Value& v = must(*this, key);
    if (v.type == ValueType::f32 || v.type == ValueType::f64) return v.f;
    if (v.is_integer()) return scalar_as_double(v, v.type);
    key_error(key, std::string("expected a number, found ") + value_type_name(v.type));
}
bool File::get_bool(std::string_view key) const {
    const Value& v = must(*this, key);
    if (v.type != ValueType::boolean) key_error(key, std::string("expected bool, found ") + value_type_name(v.type));
    return v.u != 0;
}
const std::string& File::get_str(std::string_view key) const {
    const Value& v = must(*this, key);
    if (v.type != ValueType::string) key_error(key, std::string("expected string, found ") + value_type_name(v.type));
    return v.s;
}
const std::vector<std::string>& File::get_str_array(std::string_view key) const {
    const Value& v = must(*this, key);
    if (v.type != ValueType::array || v.elem_type != ValueType::string)
        key_error(key, "expected an array of strings");
    return v.strs;
}
std::vector<double> File::get_num_array(std::string_view key) const {
    const Value& v = must(*this, key);
    if (v.type != ValueType::array || v.elem_type == ValueType::string) key_error(key, "expected an array of numbers");
    return v.nums;
}

void File::advise_willneed() const {
    for (auto& p : parts_) p->advise_willneed();
}

bool File::advise_huge_pages() const {
    bool ok = true;
    for (auto& p : parts_) ok = p->advise_huge_pages() && ok;
    return ok;
}

void File::check_unchanged() const {
    for (auto& p : parts_) p->check_size();
}

bool File::mapped() const { return !parts_.empty() && parts_[0]->mapped(); }

std::vector<std::pair<void*, uint64_t>> File::mapped_ranges() const {
    std::vector<std::pair<void*, uint64_t>> r;
    for (auto& p : parts_) r.push_back(p->range());
    return r;
}

void File::parse_part(size_t part_index, GeometryFn geometry) {
    const MappedFile& mf = *parts_[part_index];
    const bool first = part_index == 0;
    Cursor c(mf.data(), mf.size(), mf.path());

    if (mf.size() < 4) c.error("file too small to be GGUF (" + std::to_string(mf.size()) + " bytes)");
    const uint32_t magic = c.read<uint32_t>("magic");
    if (magic != kMagic) c.error("bad magic (not a GGUF file)");
    const uint32_t version = c.read<uint32_t>("version");
    if (version == 1) fail(Status::unsupported, "'" + mf.path() + "': GGUF version 1 is obsolete and not supported");
    if (version == 0x02000000u || version == 0x03000000u)
        fail(Status::unsupported, "'" + mf.path() + "': big-endian GGUF files are not supported");
    if (version != 2 && version != 3)
        fail(Status::unsupported, "'" + mf.path() + "': unsupported GGUF version " + std::to_string(version));
    if (first) version_ = version;

    const uint64_t n_tensors = c.read<uint64_t>("tensor count");
    const uint64_t n_kv = c.read<uint64_t>("metadata count");
    // Every KV record needs >= 13 bytes, every tensor info >= 24: bound the counts by the file.
    if (n_kv > c.remaining() / 13 || n_tensors > c.remaining() / 24 ||
        n_kv * 13 + n_tensors * 24 > c.remaining())
        c.error("counts (" + std::to_string(n_tensors) + " tensors, " + std::to_string(n_kv) +
                " metadata keys) exceed what the file can hold");
    if (n_tensors > kMaxTensors) c.error("tensor count " + std::to_string(n_tensors) + " is beyond sane limits");

    std::vector<std::pair<std::string, Value>> kvs;
    std::set<std::string, std::less<>> seen;
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key = c.read_string("metadata key", kMaxNameLen);
        if (const char* why = bad_name_reason(key)) c.error("metadata key " + std::to_string(k) + " " + why);
        const uint32_t t = c.read<uint32_t>("value type");
        if (!is_valid_value_type(t)) c.error("unknown value type " + std::to_string(t) + " for key '" + key + "'");
        Value v;
        v.type = (ValueType)t;
        if (v.type == ValueType::string) {
            v.s = c.read_string("string value");
        } else if (v.type == ValueType::array) {
            const uint32_t et = c.read<uint32_t>("array element type");
            if (!is_valid_value_type(et)) c.error("unknown array element type " + std::to_string(et) + " for key '" + key + "'");
            if ((ValueType)et == ValueType::array) c.error("nested arrays are not supported (key '" + key + "')");
            v.elem_type = (ValueType)et;
            const uint64_t n = c.read<uint64_t>("array length");
            if (v.elem_type == ValueType::string) {
                if (n > c.remaining() / 8) c.error("array length " + std::to_string(n) + " of key '" + key + "' exceeds the file");
                v.strs.reserve(n);
                for (uint64_t j = 0; j < n; ++j) v.strs.push_back(c.read_string("array string"));
            } else {
                const size_t es = scalar_size(v.elem_type);
                if (n > c.remaining() / es) c.error("array length " + std::to_string(n) + " of key '" + key + "' exceeds the file");
                v.nums.resize(n);
                Value tmp;
                for (uint64_t j = 0; j < n; ++j) {
                    read_scalar(c, v.elem_type, tmp);
                    v.nums[j] = scalar_as_double(tmp, v.elem_type);
                }
            }
        } else {
            read_scalar(c, v.type, v);
        }
        if (!seen.insert(key).second) c.error("duplicate metadata key '" + key + "'");
        kvs.emplace_back(std::move(key), std::move(v));
    }

    // Container keys of this part.
    auto find_local = [&](std::string_view key) -> const Value* {
        for (auto& kv : kvs)
            if (kv.first == key) return &kv.second;
        return nullptr;
    };
    uint32_t alignment = 32;
    if (const Value* a = find_local("general.alignment")) {
        if (!a->is_integer()) c.error("general.alignment must be an integer");
        const uint64_t al = a->u ? a->u : (uint64_t)a->i;
        if (al == 0 || (al & (al - 1)) != 0 || al > (1u << 20))
            c.error("general.alignment " + std::to_string(al) + " is not a power of two");
        alignment = (uint32_t)al;
    }
    if (first) {
        alignment_ = alignment;
        kvs_ = std::move(kvs);
        for (size_t k = 0; k < kvs_.size(); ++k) kv_index_.emplace(kvs_[k].first, k);
    } else {
        // Later split parts must agree on their place in the set.
        const Value* no = find_local("split.no");
        const Value* cnt = find_local("split.count");
        if (!no || no->u != part_index || !cnt || cnt->u != expected_parts_)
            c.error("split part " + std::to_string(part_index + 1) + " has inconsistent split.no/split.count");
    }

    // Tensor infos.
    struct Pending { TensorInfo info; uint64_t rel_offset; };
    std::vector<Pending> pending;
    pending.reserve(n_tensors);
    for (uint64_t k = 0; k < n_tensors; ++k) {
        Pending p;
        TensorInfo& ti = p.info;
        ti.name = c.read_string("tensor name", kMaxNameLen);
        if (const char* why = bad_name_reason(ti.name)) c.error("tensor name " + std::to_string(k) + " " + why);
        const uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
        if (n_dims > 4) c.error("tensor '" + ti.name + "' has " + std::to_string(n_dims) + " dimensions (max 4)");
        ti.n_dims = (int)n_dims;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t ne = c.read<uint64_t>("tensor dimension");
            if (ne == 0 || ne > (uint64_t)INT64_MAX)
                c.error("tensor '" + ti.name + "' has invalid dimension " + std::to_string(d) + " = " + std::to_string(ne));
            ti.ne[d] = (int64_t)ne;
        }
        // Element count must fit in int64.
        int64_t total = 1;
        for (int d = 0; d < 4; ++d) {
            if (total > INT64_MAX / ti.ne[d]) c.error("tensor '" + ti.name + "' has too many elements");
            total *= ti.ne[d];
        }
        ti.type = c.read<uint32_t>("tensor type");
        p.rel_offset = c.read<uint64_t>("tensor offset");
        TypeGeometry g{};
        if (!geometry || !geometry(ti.type, &g))
            fail(Status::unsupported, "tensor '" + ti.name + "' has unknown or unsupported type id " + std::to_string(ti.type));
        if (ti.ne[0] % g.block_elems != 0)
            c.error("tensor '" + ti.name + "': row length " + std::to_string(ti.ne[0]) + " is not a multiple of the " +
                    std::string(g.name) + " block size " + std::to_string(g.block_elems));
        if (g.interleave > 1 && ti.n_rows() % g.interleave != 0)
            c.error("tensor '" + ti.name + "': row count " + std::to_string(ti.n_rows()) + " is not a multiple of " +
                    std::to_string(g.interleave) + " required by " + g.name);
        const uint64_t row = (uint64_t)g.row_meta_bytes + (uint64_t)g.block_bytes * (uint64_t)(ti.ne[0] / g.block_elems);
        const uint64_t rows = (uint64_t)ti.n_rows();
        if (row != 0 && rows > UINT64_MAX / row) c.error("tensor '" + ti.name + "' byte size overflows");
        ti.nbytes = row * rows;
        if (p.rel_offset % alignment != 0)
            c.error("tensor '" + ti.name + "' offset " + std::to_string(p.rel_offset) + " is not aligned to " +
                    std::to_string(alignment));
        ti.file_index = (uint32_t)part_index;
        pending.push_back(std::move(p));
    }

    const uint64_t data_offset = (c.pos() + alignment - 1) / alignment * alignment;
    if (data_offset > mf.size() && n_tensors > 0) c.error("data section starts beyond the end of the file");
    for (auto& p : pending) {
        TensorInfo& ti = p.info;
        const uint64_t avail = mf.size() > data_offset ? mf.size() - data_offset : 0;
        if (p.rel_offset > avail || ti.nbytes > avail - p.rel_offset)
            fail(Status::invalid_file, "tensor '" + ti.name + "' data (offset " + std::to_string(p.rel_offset) + ", " +
                 std::to_string(ti.nbytes) + " bytes) is not within the file bounds of '" + mf.path() +
                 "': file is corrupted or incomplete");
        ti.file_offset = data_offset + p.rel_offset;
        ti.data = mf.data() + ti.file_offset;
        if (!tensor_index_.emplace(ti.name, tensors_.size()).second)
            fail(Status::invalid_file, "tensor '" + ti.name + "' is duplicated");
        tensors_.push_back(std::move(ti));
    }
}

std::unique_ptr<File> File::open(const std::string& path, GeometryFn geometry, bool map, bool huge,
                                 const ReadProgress& on_read) {
    std::unique_ptr<File> f(new File());
    f->path_ = path;
    f->parts_.push_back(std::make_unique<MappedFile>(path, map, huge, on_read));
    f->parse_part(0, geometry);

    const Value* count = f->find("split.count");
    const uint64_t n_split = count && count->is_integer() ? count->u : 0;
    if (n_split > 1) {
        f->expected_parts_ = n_split;
        if (n_split > 9999) fail(Status::invalid_file, "split.count " + std::to_string(n_split) + " is beyond sane limits");
        const Value* no = f->find("split.no");
        if (!no || no->u != 0) fail(Status::invalid_argument, "'" + path + "' is not the first part of its split set");
        char suffix[64];
        std::snprintf(suffix, sizeof suffix, "-00001-of-%05d.gguf", (int)n_split);
        const std::string sfx = suffix;
        if (path.size() < sfx.size() || path.compare(path.size() - sfx.size(), sfx.size(), sfx) != 0)
            fail(Status::invalid_file, "'" + path + "': split file name must end with " + sfx);
        const std::string prefix = path.substr(0, path.size() - sfx.size());
        for (uint64_t k = 1; k < n_split; ++k) {
            char name[64];
            std::snprintf(name, sizeof name, "-%05d-of-%05d.gguf", (int)(k + 1), (int)n_split);
            const std::string part = prefix + name;
            try {
                f->parts_.push_back(std::make_unique<MappedFile>(part, map, huge, on_read));
            } catch (const Error& e) {
                fail(Status::io_error, "missing split part " + std::to_string(k + 1) + " of " + std::to_string(n_split) +
                     ": " + e.what());
            }
            f->parse_part(k, geometry);
        }
        const Value* tc = f->find("split.tensors.count");
        if (!tc || !tc->is_integer() || (uint64_t)tc->i != f->tensors_.size())
            fail(Status::invalid_file, "split set of '" + path + "': expected " +
                 (tc ? std::to_string(tc->i) : std::string("?")) + " tensors, found " + std::to_string(f->tensors_.size()));
    }
    return f;
}

}  // namespace ikllm::gguf
