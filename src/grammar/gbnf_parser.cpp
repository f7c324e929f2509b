// GBNF text -> GrammarIR. A recursive-descent parser over bytes; every error names the line and
// column (1-based, columns in code points) where it was found.
#include <algorithm>
#include <map>

#include "core/error.h"
#include "grammar/char_sets.h"
#include "grammar/grammar_ir.h"

namespace ikllm::grammar {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
public:
    Parser(const std::string& t, const GrammarLimits& limits) : s_(t), limits_(limits) {}

    GrammarIR run(const std::string& root_name) {
        skip_all_space();
        while (p_ < s_.size()) {
            parse_rule();
            skip_all_space();
        }
        for (size_t i = 0; i < g_.rules.size(); ++i)
            if (!g_.rules[i].defined) {
                auto it = first_use_.find((uint32_t)i);
                error_at(it->second, "undefined rule '" + g_.rules[i].name + "'");
            }
        auto it = names_.find(root_name);
        if (it == names_.end())
            fail(Status::grammar_error, "grammar has no rule named '" + root_name + "' (the start rule)");
        g_.root = it->second;
        return std::move(g_);
    }

private:
    const std::string& s_;
    const GrammarLimits limits_;
    size_t p_ = 0;
    GrammarIR g_;
    std::map<std::string, uint32_t> names_;
    std::map<uint32_t, size_t> first_use_;  // rule -> offset of its first reference
    std::map<uint32_t, int> generated_;     // owner rule -> count of generated helper rules
    uint64_t items_ = 0;                    // items in all rules so far (limits_.max_items)
    // Last offset line_col() was asked for and its answer: offsets mostly grow, so each call
    // continues from there (rescanning from the start made long grammars quadratic).
    size_t lc_off_ = 0;
    int lc_line_ = 1, lc_col_ = 1;

    void grow(uint64_t n, size_t at) {
        items_ += n;
        if (items_ > limits_.max_items)
            error_at(at, "grammar too large: over the limit of " + std::to_string(limits_.max_items) +
                             " items once repetitions are expanded");
    }

    [[noreturn]] void error_at(size_t off, const std::string& msg) {
        int line, col;
        line_col(off, &line, &col);
        fail(Status::grammar_error, "line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + msg);
    }
    [[noreturn]] void error(const std::string& msg) { error_at(p_, msg); }

    bool eof() const { return p_ >= s_.size(); }
    char peek(size_t k = 0) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }

    void skip_comment() {
        while (!eof() && peek() != '\n') ++p_;
    }
    // Spaces, tabs, newlines and comments.
    void skip_all_space() {
        while (!eof()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') ++p_;
            else if (c == '#') skip_comment();
            else break;
        }
    }
    // True if the text at p (after blanks) is `name ::=`, i.e. the start of the next rule.
    bool at_rule_start(size_t p) const {
        size_t q = p;
        while (q < s_.size() && is_name_char(s_[q])) ++q;
        if (q == p) return false;
        while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t')) ++q;
        return s_.compare(q, 3, "::=") == 0;
    }
    // Blank space inside a rule body. A line break ends the rule at nesting depth 0 only when
    // what follows is another rule definition or the end of the text, so bodies may span lines.
    void skip_body_space(int depth) {
        for (;;) {
            while (!eof() && (peek() == ' ' || peek() == '\t' || peek() == '\r')) ++p_;
            if (peek() == '#') {
                skip_comment();
                continue;
            }
            if (peek() != '\n') return;
            if (depth > 0) {
                ++p_;
                continue;
            }
            size_t q = p_;
            for (;;) {  // look past blank lines and comments
                while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t' || s_[q] == '\r' || s_[q] == '\n')) ++q;
                if (q < s_.size() && s_[q] == '#') {
                    while (q < s_.size() && s_[q] != '\n') ++q;
                    continue;
                }
                break;
            }
            if (q >= s_.size() || at_rule_start(q)) return;  // the rule ends here
            p_ = q;
        }
    }

    uint32_t rule_id(const std::string& name, size_t use_off) {
        auto it = names_.find(name);
        if (it != names_.end()) return it->second;
        const uint32_t id = (uint32_t)g_.rules.size();
        g_.rules.push_back({});
        g_.rules.back().name = name;
        names_[name] = id;
        first_use_[id] = use_off;
        return id;
    }

    uint32_t new_rule(uint32_t owner, size_t off) {
        const uint32_t id = (uint32_t)g_.rules.size();
        Rule r;
        r.name = g_.rules[owner].name + "-" + std::to_string(++generated_[owner]);
        r.defined = true;
        line_col(off, &r.line, &r.col);
        g_.rules.push_back(std::move(r));
        return id;
    }

    void line_col(size_t off, int* line, int* col) {
        off = std::min(off, s_.size());
        if (off < lc_off_) {
            lc_off_ = 0;
            lc_line_ = lc_col_ = 1;
        }
        for (size_t i = lc_off_; i < off; ++i) {
            if (s_[i] == '\n') {
                ++lc_line_;
                lc_col_ = 1;
            } else if (((unsigned char)s_[i] & 0xC0) != 0x80) {
                ++lc_col_;
            }
        }
        lc_off_ = off;
        *line = lc_line_;
        *col = lc_col_;
    }

    std::string parse_name() {
        const size_t b = p_;
        while (!eof() && is_name_char(peek())) ++p_;
        if (p_ == b) error("expected a rule name");
        return s_.substr(b, p_ - b);
    }

    void parse_rule() {
        const size_t at = p_;
        const std::string name = parse_name();
        while (peek() == ' ' || peek() == '\t') ++p_;
        if (s_.compare(p_, 3, "::=") != 0) error("expected '::=' after rule name '" + name + "'");
        p_ += 3;
        const uint32_t id = rule_id(name, at);
        Rule& r = g_.rules[id];
        if (r.defined) error_at(at, "rule '" + name + "' is defined twice (first at line " + std::to_string(r.line) + ")");
        r.defined = true;
        line_col(at, &r.line, &r.col);
        skip_body_space(0);  // a body may start on the next line
        auto alts = parse_alternatives(id, 0);
        g_.rules[id].alts = std::move(alts);
        if (!eof() && peek() != '\n' && peek() != '\r') {
            if (peek() == ')') error("unbalanced ')'");
            error(std::string("unexpected character '") + peek() + "'");
        }
    }

    std::vector<Sequence> parse_alternatives(uint32_t owner, int depth) {
        std::vector<Sequence> alts;
        alts.push_back(parse_sequence(owner, depth));
        while (peek() == '|') {
            ++p_;
            skip_body_space(depth);  // an alternative may start on the next line
            alts.push_back(parse_sequence(owner, depth));
        }
        return alts;
    }

    // One code point of a literal or class; handles escapes.
    uint32_t parse_char() {
        const size_t at = p_;
        if (peek() == '\\') {
            ++p_;
            const char e = peek();
            ++p_;
            switch (e) {
                case 'n': return '\n';
                case 'r': return '\r';
                case 't': return '\t';
                case '0': return 0;
                case '\\': case '"': case '\'': case '[': case ']': case '-': case '/': case '^': case '.':
                    return (uint32_t)(unsigned char)e;
                case 'x': return parse_hex(2, at);
                case 'u': return parse_hex(4, at);
                case 'U': return parse_hex(8, at);
                default:
                    if (e == '\0') error_at(at, "unfinished escape at end of text");
                    error_at(at, std::string("unknown escape '\\") + e + "'");
            }
        }
        uint32_t cp = 0;
        const size_t n = decode_utf8((const uint8_t*)s_.data() + p_, s_.size() - p_, &cp);
        if (n == 0) error("invalid UTF-8 in grammar text");
        p_ += n;
        return cp;
    }
    uint32_t parse_hex(int n, size_t at) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
            const char c = peek();
            int d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else error_at(at, "escape needs " + std::to_string(n) + " hex digits");
            v = v * 16 + (uint32_t)d;
            ++p_;
        }
        if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) error_at(at, "escape is not a Unicode scalar value");
        return v;
    }

    Sequence parse_literal() {
        const size_t at = p_;
        ++p_;  // opening quote
        Sequence seq;
        for (;;) {
            if (eof() || peek() == '\n') error_at(at, "unterminated string literal");
            if (peek() == '"') break;
            const uint32_t cp = parse_char();
            Item it;
            it.ranges.push_back({cp, cp});
            seq.push_back(std::move(it));
        }
        ++p_;
        return seq;
    }

    Item parse_class() {
        const size_t at = p_;
        ++p_;  // '['
        bool negate = false;
        if (peek() == '^') {
            negate = true;
            ++p_;
        }
        std::vector<CharRange> rs;
        while (peek() != ']') {
            if (eof() || peek() == '\n') error_at(at, "unterminated character class");
            const size_t cat = p_;
            const uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']') {
                ++p_;
                if (eof() || peek() == '\n') error_at(at, "unterminated character class");
                hi = parse_char();
                if (hi < lo) error_at(cat, "character range is reversed");
            }
            rs.push_back({lo, hi});
        }
        ++p_;
        if (rs.empty()) error_at(at, "empty character class");
        Item it;
        it.ranges = normalize_ranges(rs);
        if (negate) it.ranges = complement_ranges(it.ranges);
        if (it.ranges.empty()) error_at(at, "character class matches nothing");
        return it;
    }

    static Item ref(uint32_t r) {
        Item it;
        it.kind = Item::Kind::rule;
        it.rule = r;
        return it;
    }

    // The atom as one item (a multi-item literal becomes a helper rule).
    Item as_item(Sequence&& atom, uint32_t owner, size_t off) {
        if (atom.size() == 1) return std::move(atom[0]);
        const uint32_t r = new_rule(owner, off);
        g_.rules[r].alts.push_back(std::move(atom));
        return ref(r);
    }

    // x{min,max}; max < 0 = unbounded. Appends to seq.
    void repeat(Sequence& seq, Sequence&& atom, uint32_t owner, size_t off, uint64_t mn, int64_t mx) {
        if (atom.empty()) return;
        if (mx == 0) return;
        grow(mn + 2 * (mx < 0 ? 1 : (uint64_t)mx - mn), off);
        Item x = as_item(std::move(atom), owner, off);
        for (uint64_t i = 0; i < mn; ++i) seq.push_back(x);
        if (mx < 0) {  // R ::= x R | empty
            const uint32_t r = new_rule(owner, off);
            g_.rules[r].alts.push_back({x, ref(r)});
            g_.rules[r].alts.push_back({});
            seq.push_back(ref(r));
            return;
        }
        // (x (x (...)?)?)? with max-min copies: O_1 ::= x | empty; O_k ::= x O_{k-1} | empty.
        uint32_t prev = 0;
        for (uint64_t k = 1; k <= (uint64_t)mx - mn; ++k) {
            const uint32_t r = new_rule(owner, off);
            Sequence s;
            s.reserve(2);
            s.push_back(x);
            if (k > 1) s.push_back(ref(prev));
            auto& alts = g_.rules[r].alts;
            alts.reserve(2);
            alts.push_back(std::move(s));
            alts.emplace_back();
            prev = r;
        }
        if ((uint64_t)mx > mn) seq.push_back(ref(prev));
    }

    uint64_t parse_count() {
        const size_t at = p_;
        uint64_t v = 0;
        if (!(peek() >= '0' && peek() <= '9')) error("expected a number");
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + (uint64_t)(peek() - '0');
            if (v > limits_.max_repeat)
                error_at(at, "repetition count above the limit of " + std::to_string(limits_.max_repeat));
            ++p_;
        }
        return v;
    }

    Sequence parse_sequence(uint32_t owner, int depth) {
        Sequence seq;
        for (;;) {
            skip_body_space(depth);
            if (eof()) break;
            const char c = peek();
            if (c == '|' || c == ')' || c == '\n') break;
            const size_t at = p_;
            Sequence atom;
            if (c == '"') {
                atom = parse_literal();
            } else if (c == '[') {
                atom.push_back(parse_class());
            } else if (c == '.') {
                ++p_;
                Item it;
                it.ranges = complement_ranges({});
                atom.push_back(std::move(it));
            } else if (c == '(') {
                if (depth >= kMaxNesting)
                    error_at(at, "parentheses nested deeper than the limit of " + std::to_string(kMaxNesting) + " levels");
                ++p_;
                skip_all_space();
                const uint32_t r = new_rule(owner, at);
                auto alts = parse_alternatives(owner, depth + 1);
                if (peek() != ')') error_at(at, "unclosed '('");
                ++p_;
                g_.rules[r].alts = std::move(alts);
                atom.push_back(ref(r));
            } else if (is_name_char(c)) {
                const std::string name = parse_name();
                atom.push_back(ref(rule_id(name, at)));
            } else {
                error(std::string("unexpected character '") + c + "'");
            }
            // Postfix operators (at most one; `x**` is rejected as ambiguous).
            const size_t op = p_;
            const char q = peek();
            if (q == '*' || q == '+' || q == '?') {
                ++p_;
                repeat(seq, std::move(atom), owner, op, q == '+' ? 1 : 0, q == '?' ? 1 : -1);
            } else if (q == '{') {
                ++p_;
                while (peek() == ' ') ++p_;
                uint64_t mn = 0;
                int64_t mx;
                if (peek() != ',') mn = parse_count();
                while (peek() == ' ') ++p_;
                if (peek() == ',') {
                    ++p_;
                    while (peek() == ' ') ++p_;
                    mx = peek() == '}' ? -1 : (int64_t)parse_count();
                } else {
                    mx = (int64_t)mn;
                }
                while (peek() == ' ') ++p_;
                if (peek() != '}') error_at(op, "expected '}' to close the repetition");
                ++p_;
                if (mx >= 0 && (uint64_t)mx < mn) error_at(op, "repetition maximum is below its minimum");
                repeat(seq, std::move(atom), owner, op, mn, mx);
            } else {
                grow(atom.size(), at);
                for (auto& it : atom) seq.push_back(std::move(it));
                continue;
            }
            const char q2 = peek();
            if (q2 == '*' || q2 == '+' || q2 == '?' || q2 == '{') error("repetition operator follows another one");
        }
        return seq;
    }
};

}  // namespace

GrammarIR parse_gbnf(const std::string& text, const std::string& root, const GrammarLimits& limits) {
    return Parser(text, limits).run(root);
}

}  // namespace ikllm::grammar
