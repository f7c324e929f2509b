#include "progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(isatty(2) != 0), start_(std::chrono::steady_clock::now()) {}

static std::string fmt_seconds(double s) {
    char buf[32];
    if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", (int)s / 60, (int)s % 60);
    else std::snprintf(buf, sizeof buf, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
    return buf;
}

void ProgressBar::update(double done, double total, const std::string& note) {
    if (!enabled_ || total <= 0) return;
    const double f = done / total < 0 ? 0 : done / total > 1 ? 1 : done / total;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    // The ETA assumes the remaining work goes at the average rate so far.
    const std::string eta = f > 0 ? fmt_seconds(elapsed * (1 - f) / f) + " left" : "";
    const int w = 30, n = (int)(f * w);
    std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %s %s\033[K", label_.c_str(), n, "##############################", w - n,
                 "", (int)(f * 100), eta.c_str(), note.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace cli
