#include "result_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace batch {

ResultLog::ResultLog(const std::string& path, bool resume) : path_(path) {
    if (resume) {
        std::ifstream f(path, std::ios::binary);
        std::string data;
        if (f) {
            std::ostringstream ss;
            ss << f.rdbuf();
            data = ss.str();
        }
        // Only lines ending in '\n' count; anything after the last one is a torn write.
        size_t keep = 0, start = 0;
        for (size_t nl; (nl = data.find('\n', start)) != std::string::npos; start = nl + 1) {
            const auto j = nlohmann::json::parse(data.begin() + (std::ptrdiff_t)start,
                                                 data.begin() + (std::ptrdiff_t)nl, nullptr, false);
            if (!j.is_discarded() && j.is_object() && j.contains("id") && j["id"].is_string())
                done_.insert(j["id"].get<std::string>());
            keep = nl + 1;
        }
        if (keep < data.size() && truncate(path.c_str(), (off_t)keep) != 0)
            throw std::runtime_error("cannot cut the torn last line of '" + path + "': " + std::strerror(errno));
    }
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (resume ? 0 : O_TRUNC), 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
}

ResultLog::~ResultLog() {
    if (fd_ >= 0) close(fd_);
}

void ResultLog::append(const std::string& json_line, const std::string& id) {
    std::string line = json_line;
    line += '\n';
    // One write() of the whole line with O_APPEND: other writers and a kill see all or nothing
    // (a short write only happens on a full disk; then report it).
    const ssize_t n = write(fd_, line.data(), line.size());
    if (n != (ssize_t)line.size())
        throw std::runtime_error("cannot write '" + path_ + "': " + (n < 0 ? std::strerror(errno) : "short write"));
    done_.insert(id);
}

}  // namespace batch
