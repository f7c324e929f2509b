// The results file: one JSON object per line, each appended with a single write so a killed run
// leaves only whole lines (a torn last line, e.g. after a full disk, is cut off on resume).
#pragma once

#include <set>
#include <string>

namespace batch {

class ResultLog {
  public:
    // resume = false: the file is truncated. resume = true: the ids of the complete records
    // already there are loaded (see done()) and writing continues after them.
    // Throws std::runtime_error when the file cannot be opened.
    ResultLog(const std::string& path, bool resume);
    ~ResultLog();
    ResultLog(const ResultLog&) = delete;
    ResultLog& operator=(const ResultLog&) = delete;

    const std::set<std::string>& done() const { return done_; }
    // Appends one record (a JSON object serialised on one line) and flushes it to the kernel.
    void append(const std::string& json_line, const std::string& id);

  private:
    int fd_ = -1;
    std::string path_;
    std::set<std::string> done_;
};

}  // namespace batch
