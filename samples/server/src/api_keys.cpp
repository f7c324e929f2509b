#include "api_keys.h"

namespace server {

namespace {
// Equal length and bytes; runs over the whole presented string regardless of where they differ.
bool constant_time_equal(const std::string& a, const std::string& b) {
    unsigned diff = (unsigned)(a.size() ^ b.size());
    for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)a[i] ^ (unsigned char)(b.empty() ? 0 : b[i % b.size()]);
    return diff == 0;
}
}  // namespace

bool ApiKeys::accepts(const std::string& presented) const {
    bool ok = false;
    for (const auto& k : keys_) ok |= constant_time_equal(presented, k);
    return ok;
}

}  // namespace server
