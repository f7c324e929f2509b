#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace batch {

Progress::Progress(size_t total, size_t already_done)
    : total_(total), skipped_(already_done), tty_(isatty(2)), start_(clock::now()), last_draw_(start_) {}

double Progress::elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

void Progress::update(size_t done, size_t errors, uint64_t prompt_tokens, uint64_t generated_tokens) {
    const auto now = clock::now();
    const double since = std::chrono::duration<double>(now - last_draw_).count();
    if (since < (tty_ ? 0.25 : 10.0)) return;
    last_draw_ = now;
    const double t = elapsed();
    const double tps = t > 0 ? (double)(prompt_tokens + generated_tokens) / t : 0;
    const double dps = t > 0 ? (double)done / t : 0;
    const size_t todo = total_ > done ? total_ - done : 0;
    const double eta = dps > 0 ? (double)todo / dps : 0;
    if (tty_) {
        const int width = 30;
        const int fill = total_ ? (int)(width * (double)done / (double)total_) : width;
        std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu docs  %zu errors  %.0f tok/s  ETA %02d:%02d ", fill,
                     "##############################", width - fill, "", done, total_, errors, tps, (int)eta / 60,
                     (int)eta % 60);
    } else {
        std::fprintf(stderr, "ikllm-batch: %zu/%zu documents, %zu errors, %.1f tokens/s, ETA %.0f s\n", done, total_,
                     errors, tps, eta);
    }
    std::fflush(stderr);
}

void Progress::finish(size_t done, size_t errors, uint64_t prompt_tokens, uint64_t generated_tokens) {
    const double t = elapsed();
    if (tty_) std::fprintf(stderr, "\r%*s\r", 100, "");
    std::fprintf(stderr,
                 "ikllm-batch: done: %zu documents (%zu errors, %zu skipped as already done) in %.1f s: "
                 "%.2f documents/s, %llu prompt + %llu generated tokens, %.1f tokens/s\n",
                 done, errors, skipped_, t, t > 0 ? (double)done / t : 0.0, (unsigned long long)prompt_tokens,
                 (unsigned long long)generated_tokens, t > 0 ? (double)(prompt_tokens + generated_tokens) / t : 0.0);
}

}  // namespace batch
