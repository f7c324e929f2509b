// Helpers for the K / ik-K quant tests: a minimal GGUF tensor-directory reader (enough to find
// tensor bytes in the small refdata files) and the row geometry of the types under test.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ikllm::test::kiqk {

struct Tensor {
    std::string name;
    uint32_t type = 0;
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t offset = 0;  // absolute file offset of the data
};

struct Gguf {
    std::vector<uint8_t> bytes;
    std::map<std::string, Tensor> tensors;
    const uint8_t* data(const Tensor& t) const { return bytes.data() + t.offset; }
};

// Parses header, metadata (skipped) and tensor infos. Throws std::runtime_error on malformed input.
inline Gguf read_gguf(const std::string& path) {
    Gguf g;
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path);
    g.bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    size_t pos = 0;
    auto need = [&](size_t n) {
        if (pos + n > g.bytes.size()) throw std::runtime_error("truncated gguf " + path);
    };
    auto rd = [&](auto& v) {
        need(sizeof(v));
        std::memcpy(&v, g.bytes.data() + pos, sizeof(v));
        pos += sizeof(v);
    };
    auto rd_str = [&]() {
        uint64_t n;
        rd(n);
        need(n);
        std::string s((const char*)g.bytes.data() + pos, n);
        pos += n;
        return s;
    };
    uint32_t magic, version;
    rd(magic);
    rd(version);
    if (magic != 0x46554747u) throw std::runtime_error("not gguf: " + path);
    uint64_t n_tensors, n_kv;
    rd(n_tensors);
    rd(n_kv);
    uint64_t alignment = 32;
    static const int scalar_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    auto skip_value = [&](uint32_t t, auto& self) -> void {
        if (t == 8) { rd_str(); return; }
        if (t == 9) {
            uint32_t et;
            uint64_t n;
            rd(et);
            rd(n);
            for (uint64_t i = 0; i < n; ++i) self(et, self);
            return;
        }
        if (t > 12) throw std::runtime_error("bad value type");
        need(scalar_size[t]);
        pos += scalar_size[t];
    };
    for (uint64_t i = 0; i < n_kv; ++i) {
        const std::string key = rd_str();
        uint32_t t;
        rd(t);
        if (key == "general.alignment" && t == 4) {
            uint32_t a;
            rd(a);
            alignment = a;
        } else {
            skip_value(t, skip_value);
        }
    }
    std::vector<Tensor> list;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        Tensor t;
        t.name = rd_str();
        uint32_t nd;
        rd(nd);
        for (uint32_t k = 0; k < nd && k < 4; ++k) {
            uint64_t v;
            rd(v);
            t.ne[k] = (int64_t)v;
        }
        rd(t.type);
        rd(t.offset);
        list.push_back(t);
    }
    const uint64_t data_start = (pos + alignment - 1) / alignment * alignment;
    for (auto& t : list) {
        t.offset += data_start;
        g.tensors[t.name] = t;
    }
    return g;
}

}  // namespace ikllm::test::kiqk
