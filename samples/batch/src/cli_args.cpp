#include "cli_args.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace batch {

std::string CliArgs::get(const std::string& k, const std::string& def) const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second;
}

long long CliArgs::get_int(const std::string& k, long long def, long long lo, long long hi) const {
    if (!values.count(k)) return def;
    const std::string v = get(k);
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno || x < lo || x > hi)
        throw std::runtime_error(k + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                 "], got '" + v + "'");
    return x;
}

CliArgs parse_args(int argc, char** argv, const std::set<std::string>& value_options,
                   const std::set<std::string>& flag_options) {
    CliArgs a;
    for (int i = 0; i < argc; ++i) {
        std::string s = argv[i];
        if (s.rfind("--", 0) != 0) {
            a.positional.push_back(s);
            continue;
        }
        std::string value;
        const size_t eq = s.find('=');
        const bool inline_value = eq != std::string::npos;
        if (inline_value) value = s.substr(eq + 1), s = s.substr(0, eq);
        if (flag_options.count(s) && !inline_value) {
            a.flags.insert(s);
        } else if (value_options.count(s)) {
            if (!inline_value) {
                if (i + 1 >= argc) throw std::runtime_error(s + " needs a value");
                value = argv[++i];
            }
            a.values[s] = value;
        } else {
            throw std::runtime_error("unknown option " + s);
        }
    }
    return a;
}

}  // namespace batch
