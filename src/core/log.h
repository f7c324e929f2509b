// Log sink owned by the library instance and passed down by reference; nothing is printed
// unless the application installed a callback.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

namespace ikllm {

enum LogLevel : int { log_debug = 0, log_info = 1, log_warn = 2, log_error = 3 };

class Logger {
public:
    using Fn = void (*)(void* user, int level, const char* msg);
    void set(Fn fn, void* user, int min_level) {
        std::lock_guard<std::mutex> lock(mu_);
        fn_ = fn;
        user_ = user;
        min_level_ = min_level;
    }
    bool enabled(int level) const { return fn_ && level >= min_level_; }
    void log(int level, const char* fmt, ...) const __attribute__((format(printf, 3, 4))) {
        if (!enabled(level)) return;
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        std::lock_guard<std::mutex> lock(mu_);
        if (fn_) fn_(user_, level, buf);
    }

private:
    mutable std::mutex mu_;
    Fn fn_ = nullptr;
    void* user_ = nullptr;
    int min_level_ = log_info;
};

}  // namespace ikllm
