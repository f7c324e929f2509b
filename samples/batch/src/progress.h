// Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds otherwise,
// and a summary at the end.
#pragma once

#include <chrono>
#include <cstdint>

namespace batch {

class Progress {
  public:
    Progress(size_t total, size_t already_done);
    // Called often; draws at most a few times per second (a line every 10 s without a terminal).
    void update(size_t done, size_t errors, uint64_t prompt_tokens, uint64_t generated_tokens);
    void finish(size_t done, size_t errors, uint64_t prompt_tokens, uint64_t generated_tokens);

  private:
    using clock = std::chrono::steady_clock;
    double elapsed() const;
    size_t total_, skipped_;
    bool tty_;
    clock::time_point start_, last_draw_;
};

}  // namespace batch
