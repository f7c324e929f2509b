#include "session/session.h"
#include "quant/kv_codec.h"

#include <algorithm>
#include <set>
#include <thread>

#include "core/error.h"
#include "cpu_ops.h"
#include "core/fp16.h"
#include "graph/builder.h"
#include "quant/type_traits.h"

namespace ikllm {

namespace {
// A GPU without room for a layer's KV cache: say which device, how much, and what helps.
[[noreturn]] void kv_oom(const Model& model, int layer, int device, size_t bytes) {
    const backend::Capabilities c = model.devices[(size_t)device]->capabilities();
    fail(Status::out_of_memory, model.device_names[(size_t)device] + ": the KV cache of layer " + std::to_string(layer) +
         " (" + std::to_string(bytes >> 20) + " MiB) does not fit (" + std::to_string(c.memory_free >> 20) +
         " MiB free): lower n_ctx, use kv_type q8_0 or keep fewer layers on this GPU (see `ikllm plan`)");
}
}  // namespace

Session::Session(const Model& model, const SessionOptions& opts) : model_(model), opts_(opts) {
    if (model.vocab_only) fail(Status::invalid_argument, "model was loaded vocab-only; sessions need weights");
    if (opts_.n_ctx < 1) fail(Status::invalid_argument, "n_ctx must be >= 1");
    if (opts_.n_seq_max < 1 || opts_.n_seq_max > 256) fail(Status::invalid_argument, "n_seq_max must be in [1, 256]");
    if (opts_.n_batch < 1) fail(Status::invalid_argument, "n_batch must be >= 1");
    int threads = opts_.n_threads > 0 ? opts_.n_threads : (int)std::max(1u, std::thread::hardware_concurrency());
    opts_.n_threads = threads;
    // Layers whose attention runs on a GPU keep their KV rows there only (KvCache, scheduler mirrors).
    std::vector<int> layer_device;
    if (model.devices.size() > 1) layer_device.assign(model.layer_attn_device.begin(), model.layer_attn_device.end());
    kv_ = std::make_unique<KvCache>(model.hp, opts_.n_ctx, opts_.n_seq_max, opts_.kv_type, *model.cpu, layer_device);
    exec_ = model.cpu->make_executor(threads);
    if (model.devices.size() > 1) {
        // Some weights live on a GPU: ops run through the scheduler, and the KV rows of layers
        // whose attention is there get a device copy.
        std::vector<backend::Executor*> execs{exec_.get()};
        for (size_t d = 1; d < model.devices.size(); ++d) {
            gpu_execs_.push_back(model.devices[d]->make_executor(threads));
            execs.push_back(gpu_execs_.back().get());
        }
        sched_ = std::make_unique<Scheduler>(model.devices, execs);
        sched_->set_stream_min_tokens(opts_.offload_min_batch);
        for (int l = 0; l < model.hp.n_layer; ++l) {
            const int d = model.layer_attn_device[(size_t)l];
            if (d == 0) continue;
            const size_t bytes = kv_->k(l)->nb[3] + (kv_->is_mla() ? 0 : kv_->v(l)->nb[3]);
            try {
                sched_->add_mirror(kv_->k(l)->data, kv_->k(l)->nb[3], d);
                if (!kv_->is_mla()) sched_->add_mirror(kv_->v(l)->data, kv_->v(l)->nb[3], d);
            } catch (const std::bad_alloc&) {
                kv_oom(model, l, d, bytes);
            } catch (const Error& e) {
                if (e.status != Status::out_of_memory) throw;
                kv_oom(model, l, d, bytes);
            }
        }
        kv_sync_ = std::make_unique<SchedulerKvSync>(*sched_);
        kv_->set_device_sync(kv_sync_.get());
    }
    if (opts_.embeddings) {
        pooling_ = opts_.pooling >= 0 ? (Pooling)opts_.pooling : model_pooling(model);
        if (pooling_ == Pooling::rank)
            fail(Status::unsupported, "the model asks for 'rank' pooling (a reranker head), which is not supported; "
                 "set the session option pooling to none, mean, cls or last");
    }
}

void Session::check_seq(int32_t seq) const {
    if (seq < 0 || seq >= opts_.n_seq_max)
        fail(Status::invalid_argument, "sequence id " + std::to_string(seq) + " out of range [0, " +
             std::to_string(opts_.n_seq_max) + ")");
}

void Session::decode(const int32_t* tokens, const int32_t* positions, const int32_t* seq_ids,
                     const int32_t* want_logits, int32_t n_tokens) {
    if (n_tokens <= 0) fail(Status::invalid_argument, "decode: n_tokens must be positive");
    if (!tokens) fail(Status::invalid_argument, "decode: tokens is NULL");
    const int32_t n_vocab = model_.hp.n_vocab;

    // Resolve and validate the batch before touching the cache.
    std::vector<int32_t> seq(n_tokens), pos(n_tokens);
    std::vector<int32_t> next_pos(opts_.n_seq_max, INT32_MIN);
    std::set<std::pair<int32_t, int32_t>> seen;
    for (int32_t i = 0; i < n_tokens; ++i) {
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            fail(Status::invalid_argument, "token " + std::to_string(tokens[i]) + " at batch index " + std::to_string(i) +
                 " is out of range [0, " + std::to_string(n_vocab) + ")");
        seq[i] = seq_ids ? seq_ids[i] : 0;
        check_seq(seq[i]);
        if (positions) {
            pos[i] = positions[i];
        } else {
            int32_t& np = next_pos[seq[i]];
            if (np == INT32_MIN) np = kv_->seq_pos_max(seq[i]) + 1;
            pos[i] = np++;
        }
        if (pos[i] < 0) fail(Status::invalid_argument, "negative position at batch index " + std::to_string(i));
        if (!seen.insert({seq[i], pos[i]}).second)
            fail(Status::invalid_argument, "position " + std::to_string(pos[i]) + " appears twice for sequence " +
                 std::to_string(seq[i]) + " in the batch");
    }
    if (positions) {
        for (auto& [s, p] : seen)
            if (kv_->seq_has_pos(s, p))
                fail(Status::invalid_argument, "sequence " + std::to_string(s) + " already holds position " +
                     std::to_string(p) + "; remove it first");
    }
    std::vector<int32_t> out_rows;
    std::vector<int32_t> out_index(n_tokens, -1);
    for (int32_t i = 0; i < n_tokens; ++i) {
        const bool want = want_logits ? want_logits[i] != 0 : i == n_tokens - 1;
        if (want) {
            out_index[i] = (int32_t)out_rows.size();
            out_rows.push_back(i);
        }
    }
    std::vector<int32_t> cells;
    if (!kv_->find_free(n_tokens, cells))
        throw Error(Status::context_full, "KV cache full: " + std::to_string(n_tokens) + " tokens need cells, " +
                    std::to_string(opts_.n_ctx - kv_->used_cells()) + " of " + std::to_string(opts_.n_ctx) + " are free");

    std::vector<float> logits((size_t)out_rows.size() * n_vocab);
    const int32_t n_embd = model_.hp.n_embd;
    std::vector<float> hidden(opts_.embeddings ? (size_t)n_tokens * n_embd : 0);
    PooledSet pooled;
    kv_->release_host();  // device layers' host pages that a failed host access left in use
    auto snap = kv_->snapshot();
    try {
        for (int32_t begin = 0; begin < n_tokens; begin += opts_.n_batch) {
            const int32_t end = std::min(n_tokens, begin + opts_.n_batch);
            for (int32_t i = begin; i < end; ++i) kv_->occupy(cells[i], seq[i], pos[i], tokens[i]);
            // Output rows of this micro-batch, relative to its first token.
            std::vector<int32_t> ub_out;
            int32_t first_out = -1;
            for (int32_t i = begin; i < end; ++i)
                if (out_index[i] >= 0) {
                    if (first_out < 0) first_out = out_index[i];
                    ub_out.push_back(i - begin);
                }
            BatchView b;
            b.n_tokens = end - begin;
            b.tokens = tokens + begin;
            b.positions = pos.data() + begin;
            b.seq_ids = seq.data() + begin;
            b.cells = cells.data() + begin;
            b.n_out = (int32_t)ub_out.size();
            b.out_rows = ub_out.data();
            b.logits = b.n_out ? logits.data() + (size_t)first_out * n_vocab : nullptr;
            b.hidden = opts_.embeddings ? hidden.data() + (size_t)begin * n_embd : nullptr;
            b.ser_max = opts_.ser_max;
            b.ser_frac = opts_.ser_frac;
            b.attn_scratch_mib = opts_.attn_scratch_mib;
            b.batch_invariant = opts_.batch_invariant;
            b.mla_expand_min_batch = opts_.mla_expand_min_batch;
            graph_.ops.clear();
            graph_ = Graph();
            arena_.reset();
            if (model_.hp.arch == Arch::deepseek2) build_deepseek2(graph_, arena_, model_, b, *kv_);
            else build_llama_family(graph_, arena_, model_, b, *kv_);
            if (opts_.batch_invariant)
                for (Op& op : graph_.ops) op.batch_invariant = true;
            if (sched_) {
                std::vector<std::pair<void*, size_t>> outputs;
                if (b.logits) outputs.emplace_back(b.logits, sizeof(float) * (size_t)b.n_out * n_vocab);
                if (b.hidden) outputs.emplace_back(b.hidden, sizeof(float) * (size_t)b.n_tokens * n_embd);
                sched_->run(graph_, arena_, outputs, cancel_);
            } else {
                exec_->run(graph_, 0, graph_.ops.size(), cancel_);
            }
        }
        if (opts_.embeddings && pooling_ != Pooling::none)
            pooled = pool_sequences(hidden.data(), n_tokens, n_embd, seq.data(), pos.data(), opts_.n_seq_max, pooling_,
                                    opts_.embd_normalize);
    } catch (...) {
        kv_->restore(std::move(snap));
        // The blocks a failed batch grew the arena to go (with a GPU, their device mirrors too, at
        // the next run): a batch that did not fit must not keep smaller ones from running.
        arena_.release();
        throw;
    }
    logits_ = std::move(logits);
    out_index_ = std::move(out_index);
    last_out_ = out_rows.empty() ? -1 : out_rows.back();
    if (opts_.embeddings) {
        hidden_ = std::move(hidden);
        n_hidden_ = n_tokens;
        pooled_ = std::move(pooled);
    }
}

const float* Session::hidden_state(int32_t index) const {
    if (!opts_.embeddings)
        fail(Status::invalid_argument, "hidden states are off: create the session with the option embeddings=1");
    if (index < 0) index = n_hidden_ - 1;
    if (index < 0 || index >= n_hidden_)
        fail(Status::invalid_argument, "no hidden state for batch index " + std::to_string(index) + " (the last decode had " +
             std::to_string(n_hidden_) + " tokens)");
    return hidden_.data() + (size_t)index * model_.hp.n_embd;
}

const float* Session::embedding(int32_t seq) const {
    if (!opts_.embeddings)
        fail(Status::invalid_argument, "embeddings are off: create the session with the option embeddings=1");
    if (pooling_ == Pooling::none)
        fail(Status::invalid_argument, "pooling is 'none' (no pooled embeddings): read per-token vectors with "
             "ikllm_session_hidden_state or set the session option pooling");
    check_seq(seq);
    if (n_hidden_ == 0) fail(Status::invalid_argument, "no embeddings yet: decode a batch first");
    if (pooled_.row_of_seq[seq] < 0)
        fail(Status::invalid_argument, "sequence " + std::to_string(seq) + " had no tokens in the last decode");
    return pooled_.data.data() + (size_t)pooled_.row_of_seq[seq] * model_.hp.n_embd;
}

const float* Session::logits(int32_t index) const {
    if (index < 0) index = last_out_;
    if (index < 0 || index >= (int32_t)out_index_.size() || out_index_[index] < 0)
        fail(Status::invalid_argument, "no logits for batch index " + std::to_string(index) +
             " (was want_logits set for it in the last decode?)");
    return logits_.data() + (size_t)out_index_[index] * model_.hp.n_vocab;
}

void Session::seq_shift(int32_t seq, int32_t p0, int32_t p1, int32_t delta) {
    check_seq(seq);
    if (delta == 0) return;
    const std::vector<int32_t> moved = kv_->seq_shift(seq, p0, p1, delta);
    // Cached keys carry their RoPE rotation: rotate them on by delta (rotation only: the YaRN
    // magnitude was applied when they were stored).
    const HParams& hp = model_.hp;
    RopeParams rp = hp.rope;
    if (model_.rope_freqs) rp.freq_factors = static_cast<const float*>(model_.rope_freqs->data);
    // Only the rotated part of each row moves: all of it for standard heads, the k_rope tail
    // of the latent row for MLA caches.
    const int64_t off = kv_->rope_offset();
    for (int l = 0; l < hp.n_layer; ++l) {
        KvCache::HostRows rows(*kv_, l, KvCache::read | KvCache::write | KvCache::keys_only, &moved);
        Tensor* k = kv_->k(l);
        std::vector<float> row((size_t)k->ne[0]);
        for (int32_t c : moved)
            for (int64_t h = 0; h < k->ne[1]; ++h) {
                uint8_t* p = static_cast<uint8_t*>(k->data) + h * k->nb[1] + (size_t)c * k->nb[2];
                quant::kv_decode_row(k->type, p, row.data(), k->ne[0]);
                cpu::rope_vector(row.data() + off, delta, rp, false);
                quant::kv_encode_row(k->type, row.data(), p, k->ne[0]);
            }
        rows.done();
    }
}

}  // namespace ikllm
