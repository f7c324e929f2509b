// Probe: are a sequence's logits bit-identical whatever else is decoded with it?
// Decodes a reference sequence alone, then beside 1..15 other sequences, in two ways: in the same
// batches (their prompts mixed with its decoding), and in their own decode calls (they only share
// the KV cache). Prints the largest logit difference per case. usage: batch_invariance_probe MODEL [steps] [threads] [--strict] [--batch-invariant]
// (--batch-invariant sets the session option of that name, as ikllm-batch does.)
// Exit 0 (with --strict: only when every size matches bit for bit, else 1), 77 when the model is absent.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ikllm.h"

namespace {

struct Probe {
    ikllm_model* model = nullptr;
    int n_vocab = 0;
};

// Greedy-decodes `steps` tokens of sequence 0 (prompt ref) while `others` extra sequences run
// beside it: their prompts are fed in pieces mixed with seq 0's steps, then they decode too.
std::vector<std::vector<float>> run(const Probe& p, const std::vector<ikllm_token>& ref, int others, int steps,
                                    int n_threads, bool invariant, bool separate = false) {
    ikllm_options* so = nullptr;
    ikllm_options_create(IKLLM_OPTIONS_SESSION, &so);
    ikllm_options_set_int(so, "n_ctx", 4096);
    ikllm_options_set_int(so, "n_seq_max", others + 1);
    if (n_threads > 0) ikllm_options_set_int(so, "n_threads", n_threads);
    if (invariant) ikllm_options_set_int(so, "batch_invariant", 1);
    ikllm_session* s = nullptr;
    if (ikllm_session_create(p.model, so, &s) != IKLLM_OK) {
        std::fprintf(stderr, "session: %s\n", ikllm_last_error());
        std::exit(2);
    }
    ikllm_options_free(so);
    std::vector<std::vector<float>> out;
    std::vector<ikllm_token> tok;
    std::vector<int32_t> seq, want;
    // First batch: the reference prompt plus the first 3 tokens of every other prompt.
    for (auto t : ref) tok.push_back(t), seq.push_back(0), want.push_back(0);
    want.back() = 1;
    std::vector<int> fed(others + 1, 0);
    std::vector<ikllm_token> last(others + 1, 1);
    auto other_prompt = [&](int k, int i) { return (ikllm_token)(100 + (k * 37 + i * 11) % 1500); };
    for (int k = 1; k <= others; ++k)
        for (int i = 0; i < 3; ++i) tok.push_back(other_prompt(k, fed[k]++)), seq.push_back(k), want.push_back(i == 2);
    for (int step = 0; step < steps; ++step) {
        // separate: the other sequences go through their own decode calls first, so they share
        // the KV cache with the reference but never its batch.
        if (separate) {
            std::vector<ikllm_token> t2;
            std::vector<int32_t> s2, w2;
            for (size_t i = 0; i < tok.size(); ++i)
                if (seq[i] != 0) t2.push_back(tok[i]), s2.push_back(seq[i]), w2.push_back(want[i]);
            if (!t2.empty()) {
                ikllm_session_decode(s, t2.data(), nullptr, s2.data(), w2.data(), (int32_t)t2.size(), 0);
                for (size_t i = 0; i < t2.size(); ++i)
                    if (w2[i]) {
                        const float* l2 = nullptr;
                        ikllm_session_logits(s, (int32_t)i, &l2, nullptr);
                        int best = 0;
                        for (int v = 1; v < p.n_vocab; ++v)
                            if (l2[v] > l2[best]) best = v;
                        last[s2[i]] = best;
                    }
            }
            size_t j = 0;
            for (size_t i = 0; i < tok.size(); ++i)
                if (seq[i] == 0) tok[j] = tok[i], seq[j] = seq[i], want[j] = want[i], ++j;
            tok.resize(j), seq.resize(j), want.resize(j);
        }
        if (ikllm_session_decode(s, tok.data(), nullptr, seq.data(), want.data(), (int32_t)tok.size(), 0) != IKLLM_OK) {
            std::fprintf(stderr, "decode: %s\n", ikllm_last_error());
            std::exit(2);
        }
        int idx = 0, ref_idx = -1;
        std::vector<int> idx_of(others + 1, -1);
        for (size_t i = 0; i < tok.size(); ++i)
            if (want[i]) idx_of[seq[i]] = (int)i;
        ref_idx = idx_of[0];
        (void)idx;
        const float* lg = nullptr;
        ikllm_session_logits(s, ref_idx, &lg, nullptr);
        out.emplace_back(lg, lg + p.n_vocab);
        for (int k = 0; k <= (separate ? 0 : others); ++k) {
            if (idx_of[k] < 0) continue;
            ikllm_session_logits(s, idx_of[k], &lg, nullptr);
            int best = 0;
            for (int v = 1; v < p.n_vocab; ++v)
                if (lg[v] > lg[best]) best = v;
            last[k] = best;
        }
        tok.clear(), seq.clear(), want.clear();
        tok.push_back(last[0]), seq.push_back(0), want.push_back(1);
        // Others: alternate between more prompt (a varying amount) and decoding.
        for (int k = 1; k <= others; ++k) {
            if (fed[k] < 3 + 2 * k) {
                int n = 1 + (k + step) % 4;
                for (int i = 0; i < n; ++i) tok.push_back(other_prompt(k, fed[k]++)), seq.push_back(k), want.push_back(i == n - 1);
            } else {
                tok.push_back(last[k]), seq.push_back(k), want.push_back(1);
            }
        }
    }
    ikllm_session_free(s);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: batch_invariance_probe MODEL.gguf [steps] [threads] [--strict] [--batch-invariant]\n");
        return 2;
    }
    FILE* f = std::fopen(argv[1], "rb");
    if (!f) {
        std::printf("model %s absent: skipped\n", argv[1]);
        return 77;
    }
    std::fclose(f);
    std::vector<std::string> pos_args;
    bool strict = false, invariant = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--strict") strict = true;
        else if (a == "--batch-invariant") invariant = true;
        else pos_args.push_back(a);
    }
    const int steps = pos_args.size() > 0 ? std::atoi(pos_args[0].c_str()) : 12;
    const int threads = pos_args.size() > 1 ? std::atoi(pos_args[1].c_str()) : 0;
    ikllm_lib* lib = nullptr;
    ikllm_lib_create(0, &lib);
    Probe p;
    if (ikllm_model_load(lib, argv[1], nullptr, nullptr, nullptr, nullptr, &p.model) != IKLLM_OK) {
        std::fprintf(stderr, "load: %s\n", ikllm_last_error());
        return 2;
    }
    p.n_vocab = ikllm_model_n_vocab(p.model);
    std::vector<ikllm_token> ref = {1};
    for (int i = 0; i < 20; ++i) ref.push_back((ikllm_token)(200 + i * 53 % 1700));
    const auto alone = run(p, ref, 0, steps, threads, invariant);
    bool all_same = true;
    for (int mode = 0; mode < 2; ++mode)
    for (int others : {1, 3, 7, 15}) {
        const auto mixed = run(p, ref, others, steps, threads, invariant, mode == 1);
        double max_diff = 0;
        int first_step = -1;
        for (int st = 0; st < steps; ++st)
            for (int v = 0; v < p.n_vocab; ++v) {
                const double d = std::fabs((double)alone[st][v] - mixed[st][v]);
                if (std::memcmp(&alone[st][v], &mixed[st][v], sizeof(float)) != 0 && first_step < 0) first_step = st;
                if (d > max_diff) max_diff = d;
            }
        std::printf("%s %2d sequences: %s (max |diff| %.3g%s)\n",
                    mode ? "KV shared, own batch:" : "one batch:   ", others + 1,
                    first_step < 0 ? "bit-identical" : "DIFFERENT", max_diff,
                    first_step < 0 ? "" : (", from step " + std::to_string(first_step)).c_str());
        all_same &= first_step < 0;
    }
    ikllm_model_free(p.model);
    ikllm_lib_free(lib);
    return all_same || !strict ? 0 : 1;
}
