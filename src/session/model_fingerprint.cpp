#include "session/model_fingerprint.h"

#include <cstring>

#include "model/model.h"
#include "session/hash64.h"

namespace ikllm {

namespace {
void hash_double(Hash64& h, double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    h.u64(bits);
}

uint64_t compute_fingerprint(const Model& model) {
    Hash64 h;
    const gguf::File& f = *model.file;
    h.u64(f.total_file_bytes());
    h.u64(f.n_parts());
    h.u64(f.kvs().size());
    for (const auto& [key, v] : f.kvs()) {
        h.str(key.data(), key.size());
        h.u32((uint32_t)v.type);
        switch (v.type) {
        case gguf::ValueType::string: h.str(v.s.data(), v.s.size()); break;
        case gguf::ValueType::array:
            h.u32((uint32_t)v.elem_type);
            h.u64(v.strs.size());
            for (const std::string& s : v.strs) h.str(s.data(), s.size());
            h.u64(v.nums.size());
            for (double d : v.nums) hash_double(h, d);
            break;
        case gguf::ValueType::f32:
        case gguf::ValueType::f64: hash_double(h, v.f); break;
        default:
            h.u64(v.u);
            h.u64((uint64_t)v.i);
        }
    }
    h.u64(f.tensors().size());
    for (const gguf::TensorInfo& t : f.tensors()) {
        h.str(t.name.data(), t.name.size());
        h.u32(t.type);
        h.u32((uint32_t)t.n_dims);
        for (int64_t n : t.ne) h.u64((uint64_t)n);
        h.u64(t.nbytes);
        h.u32(t.file_index);
        h.u64(t.file_offset);
    }
    return h.digest();
}
}  // namespace

uint64_t model_fingerprint(const Model& model) {
    std::call_once(model.fingerprint_once, [&] { model.fingerprint = compute_fingerprint(model); });
    return model.fingerprint;
}

}  // namespace ikllm
