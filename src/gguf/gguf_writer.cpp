#include "gguf/gguf_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace ikllm::gguf {

void Writer::set(const std::string& key, const Value& v) {
    for (auto& kv : kvs_)
        if (kv.first == key) {
            kv.second = v;
            return;
        }
    kvs_.emplace_back(key, v);
}
void Writer::set_str(const std::string& key, const std::string& s) {
    Value v;
    v.type = ValueType::string;
    v.s = s;
    set(key, v);
}
void Writer::set_u32(const std::string& key, uint32_t x) {
    Value v;
    v.type = ValueType::u32;
    v.u = x;
    v.i = x;
    set(key, v);
}
void Writer::set_i32(const std::string& key, int32_t x) {
    Value v;
    v.type = ValueType::i32;
    v.i = x;
    set(key, v);
}
void Writer::set_f32(const std::string& key, float x) {
    Value v;
    v.type = ValueType::f32;
    v.f = x;
    set(key, v);
}
void Writer::set_bool(const std::string& key, bool b) {
    Value v;
    v.type = ValueType::boolean;
    v.u = b;
    set(key, v);
}
void Writer::set_str_array(const std::string& key, const std::vector<std::string>& a) {
    Value v;
    v.type = ValueType::array;
    v.elem_type = ValueType::string;
    v.strs = a;
    set(key, v);
}
void Writer::set_f32_array(const std::string& key, const std::vector<float>& a) {
    Value v;
    v.type = ValueType::array;
    v.elem_type = ValueType::f32;
    v.nums.assign(a.begin(), a.end());
    set(key, v);
}
void Writer::set_i32_array(const std::string& key, const std::vector<int32_t>& a) {
    Value v;
    v.type = ValueType::array;
    v.elem_type = ValueType::i32;
    v.nums.assign(a.begin(), a.end());
    set(key, v);
}
void Writer::copy_kvs(const File& f) {
    for (auto& kv : f.kvs()) {
        if (kv.first == "general.alignment" || kv.first.rfind("split.", 0) == 0) continue;
        set(kv.first, kv.second);
    }
}

void Writer::add_tensor(const std::string& name, uint32_t type, const std::vector<int64_t>& ne, const void* data,
                        uint64_t nbytes) {
    T t{name, type, ne, std::vector<uint8_t>(nbytes), nbytes};
    if (nbytes) std::memcpy(t.data.data(), data, nbytes);
    tensors_.push_back(std::move(t));
}

// Named (not anonymous): Writer::Stream holds an Out.
namespace writer_detail {
class Out {
public:
    explicit Out(FILE* f) : f_(f) {}
    void bytes(const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, f_) != n) fail(Status::io_error, std::string("write failed: ") + std::strerror(errno));
        pos_ += n;
    }
    template <typename X>
    void pod(X x) { bytes(&x, sizeof x); }
    void str(const std::string& s) {
        pod<uint64_t>(s.size());
        bytes(s.data(), s.size());
    }
    void pad(uint64_t align) {
        static const uint8_t zeros[64] = {};
        while (pos_ % align) bytes(zeros, std::min<uint64_t>(64, align - pos_ % align));
    }
    uint64_t pos() const { return pos_; }

private:
    FILE* f_;
    uint64_t pos_ = 0;
};

void scalar(Out& o, ValueType t, double num, const Value* v) {
    switch (t) {
        case ValueType::u8: o.pod<uint8_t>(v ? (uint8_t)v->u : (uint8_t)num); break;
        case ValueType::i8: o.pod<int8_t>(v ? (int8_t)v->i : (int8_t)num); break;
        case ValueType::u16: o.pod<uint16_t>(v ? (uint16_t)v->u : (uint16_t)num); break;
        case ValueType::i16: o.pod<int16_t>(v ? (int16_t)v->i : (int16_t)num); break;
        case ValueType::u32: o.pod<uint32_t>(v ? (uint32_t)v->u : (uint32_t)num); break;
        case ValueType::i32: o.pod<int32_t>(v ? (int32_t)v->i : (int32_t)num); break;
        case ValueType::u64: o.pod<uint64_t>(v ? v->u : (uint64_t)num); break;
        case ValueType::i64: o.pod<int64_t>(v ? v->i : (int64_t)num); break;
        case ValueType::f32: o.pod<float>(v ? (float)v->f : (float)num); break;
        case ValueType::f64: o.pod<double>(v ? v->f : num); break;
        case ValueType::boolean: o.pod<uint8_t>(v ? (uint8_t)(v->u != 0) : (uint8_t)(num != 0)); break;
        default: fail(Status::internal, "gguf writer: not a scalar");
    }
}
}  // namespace writer_detail
using namespace writer_detail;

struct Writer::Stream {
    std::string path, tmp;
    FILE* f = nullptr;
    Out out{nullptr};
    ~Stream() {
        if (f) {
            std::fclose(f);
            std::remove(tmp.c_str());
        }
    }
};

void Writer::declare_tensor(const std::string& name, uint32_t type, const std::vector<int64_t>& ne, uint64_t nbytes) {
    tensors_.push_back(T{name, type, ne, {}, nbytes});
}

void Writer::write_header(Stream& st) const {
    Out& o = st.out;
    o.pod<uint32_t>(0x46554747u);
    o.pod<uint32_t>(3);
    o.pod<uint64_t>(tensors_.size());
    const bool custom_align = alignment_ != 32;
    o.pod<uint64_t>(kvs_.size() + (custom_align ? 1 : 0));
    if (custom_align) {
        o.str("general.alignment");
        o.pod<uint32_t>((uint32_t)ValueType::u32);
        o.pod<uint32_t>(alignment_);
    }
    for (auto& [key, v] : kvs_) {
        o.str(key);
        o.pod<uint32_t>((uint32_t)v.type);
        if (v.type == ValueType::string) {
            o.str(v.s);
        } else if (v.type == ValueType::array) {
            o.pod<uint32_t>((uint32_t)v.elem_type);
            o.pod<uint64_t>(v.array_size());
            if (v.elem_type == ValueType::string)
                for (auto& s : v.strs) o.str(s);
            else
                for (double d : v.nums) scalar(o, v.elem_type, d, nullptr);
        } else {
            scalar(o, v.type, 0, &v);
        }
    }
    uint64_t offset = 0;
    for (auto& t : tensors_) {
        o.str(t.name);
        o.pod<uint32_t>((uint32_t)t.ne.size());
        for (int64_t n : t.ne) o.pod<uint64_t>((uint64_t)n);
        o.pod<uint32_t>(t.type);
        o.pod<uint64_t>(offset);
        offset += (t.nbytes + alignment_ - 1) / alignment_ * alignment_;
    }
    o.pad(alignment_);
}

void Writer::begin(const std::string& path) {
    if (stream_) fail(Status::internal, "gguf writer: begin() called twice");
    auto st = std::make_unique<Stream>();
    st->path = path;
    st->tmp = path + ".tmp." + std::to_string(::getpid());
    st->f = std::fopen(st->tmp.c_str(), "wb");
    if (!st->f) fail(Status::io_error, "cannot create '" + st->tmp + "': " + std::strerror(errno));
    st->out = Out(st->f);
    write_header(*st);
    stream_ = std::move(st);
    next_tensor_ = 0;
}

void Writer::write_data(const void* data, uint64_t nbytes) {
    if (!stream_ || next_tensor_ >= tensors_.size()) fail(Status::internal, "gguf writer: unexpected tensor data");
    const T& t = tensors_[next_tensor_];
    if (nbytes != t.nbytes)
        fail(Status::internal, "gguf writer: tensor '" + t.name + "' declared " + std::to_string(t.nbytes) +
                                   " bytes, got " + std::to_string(nbytes));
    stream_->out.bytes(data, nbytes);
    stream_->out.pad(alignment_);
    ++next_tensor_;
}

void Writer::commit() {
    if (!stream_) fail(Status::internal, "gguf writer: commit() without begin()");
    if (next_tensor_ != tensors_.size()) fail(Status::internal, "gguf writer: not every tensor was written");
    Stream& st = *stream_;
    if (std::fflush(st.f) != 0 || ::fsync(fileno(st.f)) != 0)
        fail(Status::io_error, "cannot flush '" + st.tmp + "': " + std::strerror(errno));
    const int rc = std::fclose(st.f);
    st.f = nullptr;
    if (rc != 0) {
        std::remove(st.tmp.c_str());
        fail(Status::io_error, "cannot close '" + st.tmp + "': " + std::strerror(errno));
    }
    if (std::rename(st.tmp.c_str(), st.path.c_str()) != 0) {
        std::remove(st.tmp.c_str());
        fail(Status::io_error, "cannot rename '" + st.tmp + "' to '" + st.path + "': " + std::strerror(errno));
    }
    stream_.reset();
}

Writer::Writer(uint32_t alignment) : alignment_(alignment) {}
Writer::~Writer() = default;

void Writer::write(const std::string& path) const {
    // One-shot form: the same streaming steps on a scratch copy of the state.
    Stream st;
    st.path = path;
    st.tmp = path + ".tmp." + std::to_string(::getpid());
    st.f = std::fopen(st.tmp.c_str(), "wb");
    if (!st.f) fail(Status::io_error, "cannot create '" + st.tmp + "': " + std::strerror(errno));
    st.out = Out(st.f);
    write_header(st);
    for (auto& t : tensors_) {
        st.out.bytes(t.data.data(), t.data.size());
        st.out.pad(alignment_);
    }
    if (std::fflush(st.f) != 0 || ::fsync(fileno(st.f)) != 0)
        fail(Status::io_error, "cannot flush '" + st.tmp + "': " + std::strerror(errno));
    const int rc = std::fclose(st.f);
    st.f = nullptr;
    if (rc != 0 || std::rename(st.tmp.c_str(), path.c_str()) != 0) {
        std::remove(st.tmp.c_str());
        fail(Status::io_error, "cannot write '" + path + "': " + std::strerror(errno));
    }
}

}  // namespace ikllm::gguf
