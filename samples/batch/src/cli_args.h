// Command-line options: "--name value" pairs, boolean flags and positional arguments.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace batch {

struct CliArgs {
    std::map<std::string, std::string> values;
    std::set<std::string> flags;
    std::vector<std::string> positional;

    bool has(const std::string& k) const { return values.count(k) || flags.count(k); }
    std::string get(const std::string& k, const std::string& def = "") const;
    long long get_int(const std::string& k, long long def, long long lo, long long hi) const;
};

// value_options take a value; flag_options do not; anything else starting with "--" is an
// error. Throws std::runtime_error.
CliArgs parse_args(int argc, char** argv, const std::set<std::string>& value_options,
                   const std::set<std::string>& flag_options);

}  // namespace batch
