// Activation memory reuse across layers (graph/arena.h, GraphBuilder::begin_layer): the op list
// of a batch is built twice, once with the layer pools reused (layer i in the memory of layer
// i - 2) and once with every layer in memory of its own, and for every input of every op the
// ops that last wrote its bytes must be the same in both (no op reads bytes that a later,
// unrelated op has overwritten). The reference models have 2 layers; their layer lists are
// repeated to 7 layers so that five layers and the output head run in reused memory.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/log.h"
#include "graph/arena.h"
#include "graph/builder.h"
#include "model/model.h"
#include "quant/type_traits.h"
#include "session/kv_cache.h"
#include "test_support.h"

using namespace ikllm;
using ikllm::test::file_exists;
using ikllm::test::refdata_dir;

namespace {

constexpr int kLayers = 7;
constexpr int32_t kTokens = 12;

// Byte range of a tensor's elements (f32 / i32 activations: 4 bytes each).
std::pair<uintptr_t, uintptr_t> extent(const Tensor& t) {
    uintptr_t hi = reinterpret_cast<uintptr_t>(t.data) + 4;
    for (int d = 0; d < 4; ++d)
        if (t.ne[d] > 1) hi += (uintptr_t)(t.ne[d] - 1) * t.nb[d];
    return {reinterpret_cast<uintptr_t>(t.data), hi};
}

// Per op and input (src 0..2 in arena memory): the set of ops whose writes its bytes hold, by
// painting each op's outputs (dst, aux) over an interval map of the arena.
using Writers = std::vector<std::set<long>>;
Writers last_writers(const Graph& g, const Arena& a) {
    std::vector<std::pair<uintptr_t, uintptr_t>> blocks;
    a.for_each_block([&](const void* p, size_t n) {
        blocks.emplace_back(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n);
    });
    auto in_arena = [&](const Tensor* t) {
        if (!t || !t->data) return false;
        const auto [lo, hi] = extent(*t);
        for (auto& [b0, b1] : blocks)
            if (lo >= b0 && hi <= b1) return true;
        return false;
    };
    std::map<uintptr_t, std::pair<uintptr_t, long>> paint;  // lo -> (hi, op)
    auto write = [&](uintptr_t lo, uintptr_t hi, long op) {
        // Split the pieces overlapping [lo, hi), drop the covered parts, insert the new piece.
        auto it = paint.lower_bound(lo);
        if (it != paint.begin() && std::prev(it)->second.first > lo) --it;
        std::vector<std::pair<uintptr_t, std::pair<uintptr_t, long>>> keep;
        while (it != paint.end() && it->first < hi) {
            const auto [plo, rest] = *it;
            const auto [phi, pop] = rest;
            if (plo < lo) keep.push_back({plo, {lo, pop}});
            if (phi > hi) keep.push_back({hi, {phi, pop}});
            it = paint.erase(it);
        }
        for (auto& k : keep) paint.insert(k);
        paint[lo] = {hi, op};
    };
    auto read = [&](uintptr_t lo, uintptr_t hi) {
        std::set<long> who;
        auto it = paint.lower_bound(lo);
        if (it != paint.begin() && std::prev(it)->second.first > lo) --it;
        for (; it != paint.end() && it->first < hi; ++it)
            if (it->second.first > lo) who.insert(it->second.second);
        return who;
    };
    Writers w;
    for (size_t i = 0; i < g.ops.size(); ++i) {
        const Op& op = g.ops[i];
        for (int s = 0; s < 3; ++s) {
            if (!in_arena(op.src[s])) {
                w.emplace_back();
                continue;
            }
            const auto [lo, hi] = extent(*op.src[s]);
            w.push_back(read(lo, hi));
        }
        for (const Tensor* out : {op.dst, op.aux})
            if (in_arena(out)) {
                const auto [lo, hi] = extent(*out);
                write(lo, hi, (long)i);
            }
    }
    return w;
}

struct Built {
    Graph graph;
    std::unique_ptr<Arena> arena;
};

Built build(const Model& m, KvCache& kv, bool reuse, bool expand_mla) {
    std::vector<int32_t> tokens(kTokens), pos(kTokens), seq(kTokens, 0), cells(kTokens);
    for (int32_t i = 0; i < kTokens; ++i) tokens[i] = 10 + i, pos[i] = i, cells[i] = i;
    std::vector<int32_t> out_rows = {0, kTokens - 1};
    static std::vector<float> logits;
    logits.assign((size_t)m.hp.n_vocab * out_rows.size(), 0.0f);
    BatchView b;
    b.n_tokens = kTokens;
    b.tokens = tokens.data();
    b.positions = pos.data();
    b.seq_ids = seq.data();
    b.cells = cells.data();
    b.n_out = (int32_t)out_rows.size();
    b.out_rows = out_rows.data();
    b.logits = logits.data();
    b.mla_expand_min_batch = expand_mla ? 1 : 0;
    Built r;
    r.arena = std::make_unique<Arena>(reuse);
    if (m.hp.arch == Arch::deepseek2) build_deepseek2(r.graph, *r.arena, m, b, kv);
    else build_llama_family(r.graph, *r.arena, m, b, kv);
    return r;
}

void check_model(const std::string& name, bool expand_mla = false) {
    const std::string path = refdata_dir() + "/models/" + name + ".gguf";
    if (!file_exists(path)) GTEST_SKIP() << "reference data not found: " << path;
    Logger log;
    std::unique_ptr<Model> m = load_model(path, ModelOptions{}, nullptr, log);
    ASSERT_TRUE(m);
    ASSERT_GE(m->hp.n_layer, 1);
    const int base = m->hp.n_layer;
    for (int il = base; il < kLayers; ++il) m->layers.push_back(m->layers[(size_t)(il % base)]);
    m->hp.n_layer = kLayers;
    KvCache kv(m->hp, 64, 1, quant::T_F16, *m->cpu);

    Built reused = build(*m, kv, true, expand_mla);
    Built own = build(*m, kv, false, expand_mla);
    ASSERT_EQ(reused.graph.ops.size(), own.graph.ops.size());
    for (size_t i = 0; i < own.graph.ops.size(); ++i) ASSERT_EQ(reused.graph.ops[i].kind, own.graph.ops[i].kind);
    EXPECT_TRUE(own.graph.recycled.empty());
    EXPECT_EQ(reused.graph.recycled.size() > 0, true);

    const Writers a = last_writers(reused.graph, *reused.arena), b = last_writers(own.graph, *own.arena);
    ASSERT_EQ(a.size(), b.size());
    size_t inputs = 0;
    for (size_t k = 0; k < a.size(); ++k) {
        inputs += !b[k].empty();
        EXPECT_EQ(a[k], b[k]) << name << ": op " << k / 3 << " input " << k % 3 << " reads bytes of other ops";
    }
    EXPECT_GT(inputs, (size_t)(10 * kLayers));  // the check saw the layers' activations

    // Two layers' activations (plus the batch-lived ones) instead of seven.
    EXPECT_LT(reused.arena->capacity() * 2, own.arena->capacity())
        << "reused " << reused.arena->capacity() << " own " << own.arena->capacity();
}

}  // namespace

// The checker itself: an op list in which a later op overwrites an input before it is read.
TEST(GraphMemory, CheckerSeesAnInputOverwrittenBeforeItsRead) {
    auto run = [](bool clobber) {
        Arena a;
        Graph g;
        float* r1 = static_cast<float*>(a.alloc(256));
        float* r2 = static_cast<float*>(a.alloc(256));
        auto tensor = [&](float* p) {
            Tensor* t = g.new_tensor();
            t->type = quant::T_F32;
            t->data = p;
            t->ne[0] = 64;
            t->nb[0] = 4;
            t->nb[1] = t->nb[2] = t->nb[3] = 256;
            return t;
        };
        Tensor* t1 = tensor(r1);
        g.add(OpKind::add).dst = t1;                            // op 0 writes t1
        g.add(OpKind::add).dst = tensor(clobber ? r1 + 32 : r2);  // op 1: elsewhere, or over half of t1
        g.add(OpKind::add).src[0] = t1;                         // op 2 reads t1
        return last_writers(g, a)[2 * 3 + 0];
    };
    EXPECT_EQ(run(false), (std::set<long>{0}));
    EXPECT_EQ(run(true), (std::set<long>{0, 1}));
}

TEST(GraphMemory, LlamaLayersReuseMemoryWithoutClobbering) { check_model("llama-tiny-f16"); }
TEST(GraphMemory, Qwen3MoeLayersReuseMemoryWithoutClobbering) { check_model("qwen3moe-tiny-f16"); }
TEST(GraphMemory, Deepseek2LayersReuseMemoryWithoutClobbering) { check_model("deepseek2-tiny-f16"); }
TEST(GraphMemory, Deepseek2ExpandedMlaBuffersStayBatchLived) { check_model("deepseek2-tiny-f16", true); }
