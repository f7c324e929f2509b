#include "grammar/byte_grammar.h"

#include <map>

#include "core/error.h"
#include "grammar/char_sets.h"

namespace ikllm::grammar {

namespace {

class Lowering {
public:
    explicit Lowering(const GrammarIR& ir) : ir_(ir) {}

    std::shared_ptr<ByteGrammar> run() {
        g_ = std::make_shared<ByteGrammar>();
        const size_t n = ir_.rules.size();
        g_->alts.resize(n);
        g_->names.resize(n);
        for (size_t r = 0; r < n; ++r) g_->names[r] = ir_.rules[r].name;
        // Lower rule bodies to per-rule element lists first; UTF-8 helper rules are appended.
        std::vector<std::vector<std::vector<ByteGrammar::Elem>>> bodies(n);
        for (size_t r = 0; r < n; ++r)
            for (const Sequence& seq : ir_.rules[r].alts) {
                std::vector<ByteGrammar::Elem> out;
                for (const Item& it : seq) lower_item(it, out);
                bodies[r].push_back(std::move(out));
            }
        for (auto& b : extra_) bodies.push_back(std::move(b));
        g_->alts.resize(bodies.size());
        for (size_t r = 0; r < bodies.size(); ++r)
            for (auto& alt : bodies[r]) {
                g_->alts[r].push_back((uint32_t)g_->elems.size());
                for (auto& e : alt) g_->elems.push_back(e);
                g_->elems.push_back({ByteGrammar::kEnd, 0});
            }
        g_->root = ir_.root;
        return g_;
    }

private:
    const GrammarIR& ir_;
    std::shared_ptr<ByteGrammar> g_;
    std::map<ByteSet, uint32_t> set_ids_;
    std::map<std::vector<std::pair<uint32_t, uint32_t>>, uint32_t> class_rules_;
    std::vector<std::vector<std::vector<ByteGrammar::Elem>>> extra_;  // helper rules

    uint32_t set_id(const ByteSet& s) {
        auto it = set_ids_.find(s);
        if (it != set_ids_.end()) return it->second;
        const uint32_t id = (uint32_t)g_->sets.size();
        g_->sets.push_back(s);
        set_ids_[s] = id;
        return id;
    }
    static void add_range(ByteSet& s, uint32_t lo, uint32_t hi) {
        for (uint32_t b = lo; b <= hi; ++b) s[b >> 6] |= 1ull << (b & 63);
    }
    ByteGrammar::Elem bytes_elem(uint32_t lo, uint32_t hi) {
        ByteSet s{};
        add_range(s, lo, hi);
        return {ByteGrammar::kBytes, set_id(s)};
    }

    void lower_item(const Item& it, std::vector<ByteGrammar::Elem>& out) {
        if (it.kind == Item::Kind::rule) {
            out.push_back({ByteGrammar::kRef, it.rule});
            return;
        }
        if (it.ranges.size() == 1 && it.ranges[0].lo == it.ranges[0].hi) {  // one code point: its bytes
            std::string enc;
            append_utf8(enc, it.ranges[0].lo);
            for (unsigned char c : enc) out.push_back(bytes_elem(c, c));
            return;
        }
        if (it.ranges.back().hi < 0x80) {  // ASCII class: one byte set
            ByteSet s{};
            for (const CharRange& r : it.ranges) add_range(s, r.lo, r.hi);
            out.push_back({ByteGrammar::kBytes, set_id(s)});
            return;
        }
        out.push_back({ByteGrammar::kRef, class_rule(it.ranges)});
    }

    // A helper rule whose alternatives are the UTF-8 byte-range sequences of a class; sequences
    // that differ only in their first byte share one alternative.
    uint32_t class_rule(const std::vector<CharRange>& ranges) {
        std::vector<std::pair<uint32_t, uint32_t>> key;
        for (const CharRange& r : ranges) key.push_back({r.lo, r.hi});
        auto it = class_rules_.find(key);
        if (it != class_rules_.end()) return it->second;
        std::map<std::vector<std::pair<uint8_t, uint8_t>>, ByteSet> by_tail;
        std::vector<std::vector<std::pair<uint8_t, uint8_t>>> order;
        for (const ByteSeq& s : utf8_sequences(ranges)) {
            std::vector<std::pair<uint8_t, uint8_t>> tail;
            for (int i = 1; i < s.len; ++i) tail.push_back({s.lo[i], s.hi[i]});
            auto [pos, fresh] = by_tail.try_emplace(tail, ByteSet{});
            if (fresh) order.push_back(tail);
            add_range(pos->second, s.lo[0], s.hi[0]);
        }
        std::vector<std::vector<ByteGrammar::Elem>> alts;
        for (const auto& tail : order) {
            std::vector<ByteGrammar::Elem> alt;
            alt.push_back({ByteGrammar::kBytes, set_id(by_tail[tail])});
            for (auto [lo, hi] : tail) alt.push_back(bytes_elem(lo, hi));
            alts.push_back(std::move(alt));
        }
        const uint32_t id = (uint32_t)(ir_.rules.size() + extra_.size());
        extra_.push_back(std::move(alts));
        g_->names.push_back("<char class>");
        class_rules_[key] = id;
        return id;
    }
};

// Left recursion (a rule reachable from itself without consuming a byte) would make the
// matcher's expansion loop forever; find it up front.
void check_left_recursion(const ByteGrammar& g, const GrammarIR& ir) {
    const size_t n = g.alts.size();
    // Nullable rules by a work list (linear; a fixpoint sweep over all rules was quadratic on
    // long chains of rules): an alternative of only rule references becomes nullable once each
    // reference is; users[s] lists the alternatives (once per occurrence) that reference s.
    std::vector<char> nullable(n, 0);
    std::vector<uint32_t> alt_rule, pending;
    std::vector<std::vector<uint32_t>> users(n);
    std::vector<uint32_t> ready;
    for (size_t r = 0; r < n; ++r)
        for (uint32_t a : g.alts[r]) {
            bool bytes = false;
            uint32_t refs = 0;
            for (uint32_t p = a; g.elems[p].kind != ByteGrammar::kEnd; ++p) {
                if (g.elems[p].kind == ByteGrammar::kBytes) bytes = true;
                else ++refs;
            }
            if (bytes) continue;
            const uint32_t id = (uint32_t)alt_rule.size();
            alt_rule.push_back((uint32_t)r);
            pending.push_back(refs);
            for (uint32_t p = a; g.elems[p].kind != ByteGrammar::kEnd; ++p) users[g.elems[p].value].push_back(id);
            if (refs == 0 && !nullable[r]) {
                nullable[r] = 1;
                ready.push_back((uint32_t)r);
            }
        }
    while (!ready.empty()) {
        const uint32_t s = ready.back();
        ready.pop_back();
        for (uint32_t id : users[s])
            if (--pending[id] == 0 && !nullable[alt_rule[id]]) {
                nullable[alt_rule[id]] = 1;
                ready.push_back(alt_rule[id]);
            }
    }
    // Edges r -> s when s can be the first thing r expands to.
    std::vector<std::vector<uint32_t>> first(n);
    for (size_t r = 0; r < n; ++r)
        for (uint32_t a : g.alts[r])
            for (uint32_t p = a; g.elems[p].kind == ByteGrammar::kRef; ++p) {
                first[r].push_back(g.elems[p].value);
                if (!nullable[g.elems[p].value]) break;
            }
    std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;  // iterative DFS: (rule, next edge)
    for (size_t start = 0; start < n; ++start) {
        if (color[start]) continue;
        color[start] = 1;
        path.push_back({(uint32_t)start, 0});
        while (!path.empty()) {
            auto& [r, k] = path.back();
            if (k == first[r].size()) {
                color[r] = 2;
                path.pop_back();
                continue;
            }
            const uint32_t s = first[r][k++];
            if (color[s] == 1) {
                const uint32_t named = s < ir.rules.size() ? s : r;
                std::string where;
                if (named < ir.rules.size() && ir.rules[named].line > 0)
                    where = "line " + std::to_string(ir.rules[named].line) + ", column " +
                            std::to_string(ir.rules[named].col) + ": ";
                fail(Status::grammar_error, where + "rule '" + g.names[named] +
                     "' is left-recursive (it can reach itself without matching any text; a repetition "
                     "of something that can match the empty text does this too)");
            }
            if (color[s] == 0) {
                color[s] = 1;
                path.push_back({s, 0});
            }
        }
    }
}

}  // namespace

std::shared_ptr<const ByteGrammar> compile_grammar(const GrammarIR& ir) {
    auto g = Lowering(ir).run();
    check_left_recursion(*g, ir);
    return g;
}

std::shared_ptr<const ByteGrammar> compile_gbnf(const std::string& text, const std::string& root,
                                                const GrammarLimits& limits) {
    return compile_grammar(parse_gbnf(text, root, limits));
}

}  // namespace ikllm::grammar
