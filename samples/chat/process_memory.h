// Resident memory of this process (Linux /proc/self/statm), for the status bar and the state dump.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace chat {

inline uint64_t resident_bytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, rss = 0;
    const int n = std::fscanf(f, "%llu %llu", &size, &rss);
    std::fclose(f);
    return n == 2 ? rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace chat
