// Context shift: when a sequence's window is full, drop the tokens after a kept prefix and
// renumber the rest so decoding can go on. The kept keys/values were computed with the dropped
// context, so later logits differ from a fresh decode of the shortened text (docs/session-state.md).
#include "core/error.h"
#include "session/session.h"

namespace ikllm {

void Session::context_shift(int32_t seq, int32_t n_keep, int32_t n_discard) {
    check_seq(seq);
    if (n_keep < 0) fail(Status::invalid_argument, "context_shift: n_keep must be >= 0");
    if (n_discard < 1) fail(Status::invalid_argument, "context_shift: n_discard must be >= 1");
    const int64_t n_past = (int64_t)kv_->seq_pos_max(seq) + 1;
    if ((int64_t)n_keep + n_discard > n_past)
        fail(Status::invalid_argument, "context_shift: n_keep + n_discard (" + std::to_string((int64_t)n_keep + n_discard) +
             ") exceeds the " + std::to_string(n_past) + " positions of sequence " + std::to_string(seq));
    const int32_t p_end = n_keep + n_discard;
    auto snap = kv_->snapshot();
    try {
        kv_->seq_remove(seq, n_keep, p_end);
        // Moving a cell changes its position for every holder: copy shared ones first.
        kv_->unshare(seq, p_end, -1);
    } catch (...) {
        kv_->restore(std::move(snap));  // copies went to cells that were free: nothing else to undo
        throw;
    }
    // Cannot fail from here: no cell in the range is shared any more.
    if (p_end < n_past) seq_shift(seq, p_end, -1, -n_discard);
}

}  // namespace ikllm
