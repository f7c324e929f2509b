// A session: KV cache, executor (threads + scratch), activation arena and the logits of the
// last decode. Used by one thread at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backend.h"
#include "core/error.h"
#include "graph/arena.h"
#include "graph/scheduler.h"
#include "model/model.h"
#include "session/kv_cache.h"
#include "session/pooling.h"

namespace ikllm {

struct SessionOptions {
    int32_t n_ctx = 4096;
    int32_t n_seq_max = 1;
    int32_t n_batch = 512;   // tokens per micro-batch
    int32_t n_threads = 0;   // 0: hardware concurrency
    uint32_t kv_type = 1;    // quant::T_F16 (also T_F32, T_BF16, T_Q8_0)
    int32_t ser_max = 0;     // smart expert reduction (0 = off)
    float ser_frac = 0.0f;
    float attn_scratch_mib = 0.0f;  // bound on attention scratch, all threads (0 = none)
    bool batch_invariant = false;   // matmul results per token independent of the batch
    bool embeddings = false;     // keep the final-norm hidden state of every batch token (and pool it)
    int32_t pooling = -1;        // a Pooling value; -1: the model's <arch>.pooling_type
    bool embd_normalize = true;  // L2-normalise pooled embeddings
    // Prompt batches of at least this many tokens run matrix products whose weights are in host
    // memory on the GPU, uploading the weights for each op (0 = never; needs a GPU in use).
    int32_t offload_min_batch = 0;
    // MLA models: batches of at least this many tokens expand the cached latents into per-head
    // keys and values (the reference's MLA mode 3); smaller ones run the absorbed form (0 = always).
    int32_t mla_expand_min_batch = 128;
};

class Session {
public:
    Session(const Model& model, const SessionOptions& opts);
    const Model& model() const { return model_; }
    const SessionOptions& options() const { return opts_; }
    const Scheduler* scheduler() const { return sched_.get(); }  // null: every weight on the CPU
    KvCache& kv() { return *kv_; }
    const KvCache& kv() const { return *kv_; }

    // Decodes a batch (see ikllm_session_decode). positions/seq_ids/want_logits may be null.
    void decode(const int32_t* tokens, const int32_t* positions, const int32_t* seq_ids, const int32_t* want_logits,
                int32_t n_tokens);
    // Logits row of batch token `index` (-1 = last with logits).
    const float* logits(int32_t index) const;
    int32_t n_outputs() const { return (int32_t)out_index_.size(); }
    // Embeddings mode (options().embeddings): final-norm hidden state of batch token `index`
    // (-1 = last) and the pooled embedding of a sequence, both from the last decode.
    const float* hidden_state(int32_t index) const;
    const float* embedding(int32_t seq) const;
    Pooling pooling() const { return pooling_; }
    // After the cache was replaced (state load): the last decode's logits no longer apply.
    void forget_logits() {
        logits_.clear();
        out_index_.clear();
        last_out_ = -1;
        hidden_.clear();
        n_hidden_ = 0;
        pooled_ = PooledSet{};
    }

    void seq_shift(int32_t seq, int32_t p0, int32_t p1, int32_t delta);
    // Context shift (context_shift.cpp): drops positions [n_keep, n_keep + n_discard) of the
    // sequence and moves the later ones down by n_discard, re-rotating their keys; cells shared
    // with other sequences are copied first. All-or-nothing.
    void context_shift(int32_t seq, int32_t n_keep, int32_t n_discard);
    void set_cancel(const volatile int32_t* flag) { cancel_ = flag; }
    // Observers (importance matrices) see the CPU's ops only: with weights on a GPU they would
    // miss those layers, so that is refused.
    void set_observer(backend::OpObserver* observer) {
        if (observer && sched_)
            fail(Status::unsupported, "importance-matrix collection needs every weight on the CPU "
                                      "(load the model without n_gpu_layers / tensor_placement)");
        exec_->set_observer(observer);
    }

private:
    void check_seq(int32_t seq) const;
    const Model& model_;
    SessionOptions opts_;
    std::unique_ptr<KvCache> kv_;
    std::unique_ptr<backend::Executor> exec_;
    // With weights on a GPU: its executors, the scheduler that splits each graph between
    // devices, and the hook that keeps host and device KV rows in step.
    struct SchedulerKvSync final : KvCache::DeviceSync {
        explicit SchedulerKvSync(Scheduler& s) : sched(s) {}
        void to_host(const void* p, size_t n) override { sched.mirror_to_host(p, n); }
        void host_changed(const void* p, size_t n) override { sched.mirror_host_written(p, n); }
        void to_device_only(const void* p, size_t n) override { sched.mirror_to_device_only(p, n); }
        Scheduler& sched;
    };
    std::vector<std::unique_ptr<backend::Executor>> gpu_execs_;
    std::unique_ptr<Scheduler> sched_;
    std::unique_ptr<SchedulerKvSync> kv_sync_;
    Arena arena_;
    Graph graph_;
    std::vector<float> logits_;        // [n_out, n_vocab]
    std::vector<int32_t> out_index_;   // batch index -> logits row (-1: none)
    int32_t last_out_ = -1;
    Pooling pooling_ = Pooling::none;
    std::vector<float> hidden_;        // [n_hidden, n_embd] (embeddings mode)
    int32_t n_hidden_ = 0;             // tokens of the last decode (embeddings mode)
    PooledSet pooled_;
    const volatile int32_t* cancel_ = nullptr;
};

}  // namespace ikllm
