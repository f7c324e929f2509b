// Bearer API keys. Comparison takes the same time whatever the key's content (and checks every
// configured key), so response timing does not reveal how much of a guess was right.
#pragma once
#include <string>
#include <vector>

namespace server {

class ApiKeys {
public:
    explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}
    bool enabled() const { return !keys_.empty(); }
    // header: the Authorization header value ("Bearer KEY") or the X-Api-Key value.
    bool accepts(const std::string& presented) const;

private:
    std::vector<std::string> keys_;
};

}  // namespace server
