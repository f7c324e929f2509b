// Fuzz target: the GGUF reader (header, metadata, tensor infos, split sets).
// Input: one GGUF file, or several split parts joined by the separator "IKLLMSPLIT"; part k of n is
// written as m-0000k-of-0000n.gguf so that the reader's split-set logic finds its siblings.
// Properties: the reader either throws ikllm::Error or returns a File whose every tensor lies
// inside its part's mapping, with consistent lookups and C-string-safe UTF-8 names; typed getters
// only throw ikllm::Error.
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "fuzz_common.h"
#include "gguf/gguf_file.h"
#include "model/model.h"

namespace ikllm::fuzz::gguf_target {

constexpr std::string_view kSplitSeparator = "IKLLMSPLIT";
constexpr size_t kMaxParts = 8;

void exercise(const gguf::File& f) {
    const auto ranges = f.mapped_ranges();
    IKLLM_FUZZ_CHECK(ranges.size() == f.n_parts() && f.n_parts() >= 1, "part count");
    // Names travel through C strings: non-empty UTF-8 without NUL bytes.
    auto good_name = [](const std::string& s) { return !s.empty() && s.find('\0') == std::string::npos && valid_utf8(s); };
    for (const auto& kv : f.kvs()) {
        IKLLM_FUZZ_CHECK(good_name(kv.first), "metadata key is a C string of UTF-8");
        IKLLM_FUZZ_CHECK(f.find(kv.first) == &kv.second, "metadata lookup");
        (void)kv.second.to_string();
        (void)kv.second.to_string(SIZE_MAX);
        // Every typed getter either succeeds or reports the wrong type/range as an Error.
        try { (void)f.get_u64(kv.first); } catch (const Error&) {}
        try { (void)f.get_u32(kv.first); } catch (const Error&) {}
        try { (void)f.get_i64(kv.first); } catch (const Error&) {}
        try { (void)f.get_f64(kv.first); } catch (const Error&) {}
        try { (void)f.get_bool(kv.first); } catch (const Error&) {}
        try { (void)f.get_str(kv.first); } catch (const Error&) {}
        try { (void)f.get_str_array(kv.first); } catch (const Error&) {}
        try { (void)f.get_num_array(kv.first); } catch (const Error&) {}
    }
    for (const auto& t : f.tensors()) {
        IKLLM_FUZZ_CHECK(good_name(t.name), "tensor name is a C string of UTF-8");
        IKLLM_FUZZ_CHECK(f.find_tensor(t.name) == &t, "tensor lookup");
        IKLLM_FUZZ_CHECK(t.file_index < ranges.size(), "tensor part index");
        const auto* base = static_cast<const uint8_t*>(ranges[t.file_index].first);
        const uint64_t size = ranges[t.file_index].second;
        IKLLM_FUZZ_CHECK(t.file_offset <= size && t.nbytes <= size - t.file_offset, "tensor data inside its file");
        IKLLM_FUZZ_CHECK(t.data == base + t.file_offset, "tensor data pointer");
        if (t.file_index == 0) IKLLM_FUZZ_CHECK(t.file_offset % f.alignment() == 0, "tensor data alignment");
        IKLLM_FUZZ_CHECK(t.n_dims >= 0 && t.n_dims <= 4, "tensor dimension count");
        for (int d = 0; d < 4; ++d) IKLLM_FUZZ_CHECK(t.ne[d] >= 1, "tensor dimensions");
        if (t.nbytes) {  // touch the first and last byte: they must be mapped
            volatile uint8_t sink = t.data[0];
            sink = t.data[t.nbytes - 1];
            (void)sink;
        }
    }
}

int run(const uint8_t* data, size_t size) {
    std::vector<std::string_view> parts;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    while (parts.size() + 1 < kMaxParts) {
        const size_t at = in.find(kSplitSeparator);
        if (at == std::string_view::npos) break;
        parts.push_back(in.substr(0, at));
        in.remove_prefix(at + kSplitSeparator.size());
    }
    parts.push_back(in);

    TempDir dir;
    std::string first;
    for (size_t k = 0; k < parts.size(); ++k) {
        char name[64];
        std::snprintf(name, sizeof name, "m-%05zu-of-%05zu.gguf", k + 1, parts.size());
        const std::string p = dir.write(name, reinterpret_cast<const uint8_t*>(parts[k].data()), parts[k].size());
        if (k == 0) first = p;
    }
    try {
        auto f = gguf::File::open(first, &type_geometry);
        exercise(*f);
    } catch (const Error&) {
        // Rejecting the input with a status is the expected outcome for most inputs.
    }
    return 0;
}

}  // namespace ikllm::fuzz::gguf_target

#ifndef IKLLM_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return ikllm::fuzz::gguf_target::run(data, size);
}
#endif
