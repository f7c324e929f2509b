// A one-line progress bar with ETA on stderr, drawn only when stderr is a terminal.
#pragma once
#include <chrono>
#include <string>

namespace cli {

class ProgressBar {
public:
    explicit ProgressBar(std::string label);  // enabled iff isatty(stderr)
    // done of total units finished; note is shown after the ETA (e.g. "chunk 3/9").
    void update(double done, double total, const std::string& note = "");
    // Erases the bar so a line can be printed; the next update redraws it.
    void clear();
    ~ProgressBar() { clear(); }

private:
    std::string label_;
    bool enabled_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace cli
