// The JSON the library hands the CLI (plans, GPU capabilities), read into a small value tree.
#pragma once
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli.h"

namespace cli {

// A small reader for the JSON the library writes (ikllm_plan, ikllm_lib_gpu_info): objects,
// arrays, strings, numbers, literals.
struct JVal {
    enum Kind { null, boolean, number, string, array, object } kind = null;
    bool b = false;
    std::string s;  // numbers keep their text (uint64 exact)
    std::vector<JVal> items;
    std::map<std::string, JVal> fields;
    const JVal& operator[](const std::string& k) const {
        static const JVal none;
        auto it = fields.find(k);
        return it == fields.end() ? none : it->second;
    }
    uint64_t u64() const { return kind == number ? std::strtoull(s.c_str(), nullptr, 10) : 0; }
};

class JReader {
public:
    explicit JReader(const std::string& t) : t_(t) {}
    JVal value() {
        ws();
        JVal v;
        if (i_ >= t_.size()) die("malformed JSON from the library");
        const char c = t_[i_];
        if (c == '{') {
            v.kind = JVal::object;
            items('}', [&] {
                ws();
                std::string k = str();
                ws();
                expect(':');
                v.fields[k] = value();
            });
            return v;
        }
        if (c == '[') {
            v.kind = JVal::array;
            items(']', [&] { v.items.push_back(value()); });
            return v;
        }
        if (c == '"') {
            v.kind = JVal::string;
            v.s = str();
            return v;
        }
        if (t_.compare(i_, 4, "true") == 0) { i_ += 4; v.kind = JVal::boolean; v.b = true; return v; }
        if (t_.compare(i_, 5, "false") == 0) { i_ += 5; v.kind = JVal::boolean; return v; }
        if (t_.compare(i_, 4, "null") == 0) { i_ += 4; return v; }
        v.kind = JVal::number;
        while (i_ < t_.size() && (std::isdigit((unsigned char)t_[i_]) || std::strchr("+-.eE", t_[i_]))) v.s += t_[i_++];
        if (v.s.empty()) die("malformed JSON from the library");
        return v;
    }

private:
    // The comma-separated members of an object or array from its opening bracket to `close`.
    template <class F>
    void items(char close, F&& item) {
        ++i_;
        ws();
        if (peek(close)) {
            ++i_;
            return;
        }
        for (;;) {
            item();
            ws();
            if (peek(',')) {
                ++i_;
                continue;
            }
            expect(close);
            return;
        }
    }
    void ws() { while (i_ < t_.size() && std::isspace((unsigned char)t_[i_])) ++i_; }
    bool peek(char c) const { return i_ < t_.size() && t_[i_] == c; }
    void expect(char c) {
        if (!peek(c)) die("malformed JSON from the library");
        ++i_;
    }
    std::string str() {
        expect('"');
        std::string out;
        while (i_ < t_.size() && t_[i_] != '"') {
            if (t_[i_] == '\\' && i_ + 1 < t_.size()) {
                const char e = t_[++i_];
                if (e == 'n') out += '\n';
                else if (e == 't') out += '\t';
                else if (e == 'u' && i_ + 4 < t_.size()) { out += '?'; i_ += 4; }
                else out += e;
                ++i_;
            } else {
                out += t_[i_++];
            }
        }
        expect('"');
        return out;
    }
    const std::string& t_;
    size_t i_ = 0;
};

}  // namespace cli
