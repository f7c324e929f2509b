#include "chat/jinja_parser.h"

#include <algorithm>
#include <initializer_list>
#include <unordered_set>

#include "chat/jinja_error.h"
#include "chat/jinja_lexer.h"

namespace ikllm::chat {

bool is_jinja_filter_name(const std::string& name) {
    static const std::unordered_set<std::string> kNames = {
        "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
        "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
        "last", "length", "list", "lower", "map", "min", "max", "pprint", "random", "reject", "rejectattr",
        "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum",
        "title", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr",
        "tojson"};
    return kNames.count(name) != 0;
}

bool is_jinja_test_name(const std::string& name) {
    static const std::unordered_set<std::string> kNames = {
        "odd", "even", "divisibleby", "defined", "undefined", "filter", "test", "none", "boolean", "false", "true",
        "integer", "float", "lower", "upper", "string", "mapping", "number", "sequence", "iterable", "callable",
        "sameas", "escaped", "in", "==", "eq", "equalto", "!=", "ne", ">", "gt", "greaterthan", "ge", ">=", "<",
        "lt", "lessthan", "<=", "le"};
    return kNames.count(name) != 0;
}

namespace {

constexpr int kMaxParseDepth = 200;
// Postfix, filter and binary-operator chains build left-deep trees without recursing in the parser;
// their height is bounded separately so that evaluation, checks and destruction recurse safely.
constexpr int kMaxExprHeight = 256;

class Parser {
public:
    explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

    Body parse() {
        Body body = subparse({});
        if (cur().type != Tok::Eof) fail("unexpected token");
        return body;
    }

private:
    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
    std::vector<MacroDef*> macros_;  // enclosing macro definitions, to record caller/varargs/kwargs use

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > kMaxParseDepth) p.fail("template nesting too deep");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& cur() const { return t_[i_]; }
    const Token& look() const { return t_[i_ + 1 < t_.size() ? i_ + 1 : i_]; }
    const Token& next() {
        const Token& t = t_[i_];
        if (i_ + 1 < t_.size()) ++i_;
        return t;
    }
    bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
    bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }

    [[noreturn]] void fail(const std::string& msg, int line = 0) const {
        throw JinjaError("TemplateSyntaxError", msg, line ? line : cur().line);
    }

    static std::string describe(const Token& t) {
        switch (t.type) {
            case Tok::Data: return "template data";
            case Tok::VarBegin: return "begin of print statement";
            case Tok::VarEnd: return "end of print statement";
            case Tok::BlockBegin: return "begin of statement block";
            case Tok::BlockEnd: return "end of statement block";
            case Tok::Name: return t.text;
            case Tok::String: return "string";
            case Tok::Integer: return "integer";
            case Tok::Float: return "float";
            case Tok::Op: return t.text;
            case Tok::Eof: return "end of template";
        }
        return "token";
    }

    void expect_op(const char* op) {
        if (!skip_op(op)) fail(std::string("expected token '") + op + "', got '" + describe(cur()) + "'");
    }
    void expect_type(Tok type, const char* what) {
        if (cur().type != type) fail(std::string("expected token '") + what + "', got '" + describe(cur()) + "'");
        next();
    }
    std::string expect_name() {
        if (cur().type != Tok::Name) fail("expected token 'name', got '" + describe(cur()) + "'");
        return next().text;
    }
    void expect_name(const char* n) {
        if (!skip_name(n)) fail(std::string("expected token '") + n + "', got '" + describe(cur()) + "'");
    }

    static ExprPtr make(ExprType type, int line) { return std::make_unique<Expr>(type, line); }
    // Records the height of a node whose children are attached; fails when it gets too deep.
    ExprPtr seal(ExprPtr e) {
        int h = 0;
        auto child = [&](const ExprPtr& c) {
            if (c) h = std::max(h, c->height);
        };
        for (const auto& c : e->items) child(c);
        for (const auto& c : e->call.args) child(c);
        for (const auto& kv : e->call.kwargs) child(kv.second);
        child(e->call.dyn_args);
        child(e->call.dyn_kwargs);
        e->height = h + 1;
        if (e->height > kMaxExprHeight) fail("expression nested too deeply");
        return e;
    }

    // ---- statements ----------------------------------------------------------------------------------

    bool at_end_tag(std::initializer_list<const char*> ends) const {
        if (cur().type != Tok::BlockBegin) return false;
        const Token& n = look();
        if (n.type != Tok::Name) return false;
        for (const char* e : ends)
            if (n.text == e) return true;
        return false;
    }

    // Parses until one of the end tags (left unconsumed, positioned at its name) or end of input.
    Body subparse(std::initializer_list<const char*> ends) {
        Body body;
        while (cur().type != Tok::Eof) {
            const Token& tok = cur();
            if (tok.type == Tok::Data) {
                auto s = std::make_unique<Stmt>(StmtType::Text, tok.line);
                s->text = tok.text;
                body.push_back(std::move(s));
                next();
            } else if (tok.type == Tok::VarBegin) {
                int line = tok.line;
                next();
                auto s = std::make_unique<Stmt>(StmtType::Print, line);
                s->expr = parse_tuple(true, false, {});
                expect_type(Tok::VarEnd, "end of print statement");
                body.push_back(std::move(s));
            } else if (tok.type == Tok::BlockBegin) {
                if (ends.size() && at_end_tag(ends)) {
                    next();
                    return body;
                }
                next();
                parse_statement(body);
                expect_type(Tok::BlockEnd, "end of statement block");
            } else {
                fail("unexpected '" + describe(tok) + "'");
            }
        }
        if (ends.size()) {
            std::string names;
            for (const char* e : ends) names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
            fail("Unexpected end of template. Jinja was looking for the following tags: " + names + ".");
        }
        return body;
    }

    // After the tag name that opened a block: `[:] %}` then the body up to an end tag; the end tag name
    // is consumed when drop_needle.
    Body parse_statements(std::initializer_list<const char*> ends, bool drop_needle) {
        skip_op(":");
        expect_type(Tok::BlockEnd, "end of statement block");
        Body body = subparse(ends);
        if (drop_needle) next();
        return body;
    }

    void parse_statement(Body& out) {
        DepthGuard g(*this);
        if (cur().type != Tok::Name) fail("tag name expected");
        const std::string tag = cur().text;
        int line = cur().line;
        if (tag == "if") return out.push_back(parse_if());
        if (tag == "for") return out.push_back(parse_for());
        if (tag == "set") return out.push_back(parse_set());
        if (tag == "macro") return out.push_back(parse_macro());
        if (tag == "call") return out.push_back(parse_call_block());
        if (tag == "filter") return out.push_back(parse_filter_block());
        if (tag == "with") return out.push_back(parse_with());
        if (tag == "print") {
            next();
            auto s = std::make_unique<Stmt>(StmtType::Print, line);
            s->expr = parse_tuple(true, false, {});
            return out.push_back(std::move(s));
        }
        if (tag == "break" || tag == "continue") {
            next();
            // jinja2 compiles to Python, whose compiler rejects this
            if (loop_depth_ == 0) throw JinjaError("SyntaxError", "'" + tag + "' outside loop", line);
            return out.push_back(std::make_unique<Stmt>(tag == "break" ? StmtType::Break : StmtType::Continue, line));
        }
        if (tag == "block") {
            // Without template inheritance a block renders in place, in its own scope.
            next();
            std::string name = expect_name();
            while (is_name("scoped") || is_name("required")) next();
            auto s = std::make_unique<Stmt>(StmtType::Scope, line);
            s->body = parse_statements({"endblock"}, true);
            skip_name(name.c_str());
            return out.push_back(std::move(s));
        }
        if (tag == "generation") {
            // transformers' AssistantTracker extension: renders its body unchanged.
            next();
            auto s = std::make_unique<Stmt>(StmtType::Scope, line);
            s->body = parse_statements({"endgeneration"}, true);
            return out.push_back(std::move(s));
        }
        if (tag == "extends" || tag == "include" || tag == "import" || tag == "from" || tag == "autoescape")
            fail("tag '" + tag + "' is not supported (chat templates are rendered without a template loader)", line);
        fail("Encountered unknown tag '" + tag + "'.", line);
    }

    StmtPtr parse_if() {
        auto s = std::make_unique<Stmt>(StmtType::If, cur().line);
        next();
        while (true) {
            ExprPtr cond = parse_tuple(false, false, {});
            Body body = parse_statements({"elif", "else", "endif"}, false);
            s->branches.emplace_back(std::move(cond), std::move(body));
            std::string tok = next().text;
            if (tok == "elif") continue;
            if (tok == "else") s->else_body = parse_statements({"endif"}, true);
            break;
        }
        return s;
    }

    StmtPtr parse_for() {
        auto s = std::make_unique<Stmt>(StmtType::For, cur().line);
        next();
        s->target = parse_assign_target(false, {"in"});
        expect_name("in");
        s->expr = parse_tuple(false, false, {"recursive"});
        if (skip_name("if")) s->cond = parse_expression(true);
        s->recursive = skip_name("recursive");
        ++loop_depth_;
        s->body = parse_statements({"endfor", "else"}, false);
        --loop_depth_;
        if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
        return s;
    }

    StmtPtr parse_set() {
        int line = cur().line;
        next();
        Target target = parse_assign_target(true, {});
        if (skip_op("=")) {
            auto s = std::make_unique<Stmt>(StmtType::Set, line);
            s->target = std::move(target);
            s->expr = parse_tuple(true, false, {});
            return s;
        }
        auto s = std::make_unique<Stmt>(StmtType::SetBlock, line);
        s->target = std::move(target);
        s->expr = parse_filter_chain(nullptr, false);
        s->body = parse_statements({"endset"}, true);
        return s;
    }

    void parse_signature(MacroDef& def) {
        expect_op("(");
        bool has_default = false;
        while (!is_op(")")) {
            if (!def.params.empty()) expect_op(",");
            MacroParam p;
            p.name = expect_name();
            if (skip_op("=")) {
                p.default_value = parse_expression(true);
                has_default = true;
            } else if (has_default) {
                fail("non-default argument follows default argument");
            }
            def.params.push_back(std::move(p));
        }
        expect_op(")");
    }

    // Macro bodies are Python functions in jinja2: loop controls do not cross them.
    Body parse_macro_body(MacroDef& def, const char* end) {
        int saved_loops = loop_depth_;
        loop_depth_ = 0;
        macros_.push_back(&def);
        Body body = parse_statements({end}, true);
        macros_.pop_back();
        loop_depth_ = saved_loops;
        return body;
    }

    StmtPtr parse_macro() {
        auto s = std::make_unique<Stmt>(StmtType::Macro, cur().line);
        next();
        s->macro = std::make_shared<MacroDef>();
        s->macro->name = expect_name();
        parse_signature(*s->macro);
        s->macro->body = parse_macro_body(*s->macro, "endmacro");
        return s;
    }

    StmtPtr parse_call_block() {
        auto s = std::make_unique<Stmt>(StmtType::CallBlock, cur().line);
        next();
        s->macro = std::make_shared<MacroDef>();
        s->macro->name = "caller";
        if (is_op("(")) parse_signature(*s->macro);
        s->expr = parse_expression(true);
        if (s->expr->type != ExprType::Call) fail("expected call", s->line);
        s->macro->body = parse_macro_body(*s->macro, "endcall");
        return s;
    }

    StmtPtr parse_filter_block() {
        auto s = std::make_unique<Stmt>(StmtType::FilterBlock, cur().line);
        next();
        s->expr = parse_filter_chain(nullptr, true);
        s->body = parse_statements({"endfilter"}, true);
        return s;
    }

    StmtPtr parse_with() {
        auto s = std::make_unique<Stmt>(StmtType::With, cur().line);
        next();
        while (cur().type != Tok::BlockEnd) {
            if (!s->with_targets.empty()) expect_op(",");
            s->with_targets.push_back(parse_assign_target(false, {}));
            expect_op("=");
            s->with_values.push_back(parse_expression(true));
        }
        s->body = parse_statements({"endwith"}, true);
        return s;
    }

    Target parse_assign_target(bool with_namespace, std::initializer_list<const char*> extra_end) {
        Target t;
        t.line = cur().line;
        if (with_namespace && cur().type == Tok::Name && look().type == Tok::Op && look().text == ".") {
            t.kind = Target::NsAttr;
            t.name = next().text;
            next();
            t.attr = expect_name();
            return t;
        }
        // simplified tuple: names, possibly parenthesised, separated by commas
        std::vector<Target> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_op(")") || is_op("=")) break;
            bool end = false;
            for (const char* e : extra_end)
                if (is_name(e)) end = true;
            if (end) break;
            items.push_back(parse_target_primary());
            if (is_op(",")) is_tuple = true;
            else break;
        }
        if (items.empty()) fail("expected an assignment target, got '" + describe(cur()) + "'");
        if (!is_tuple) return std::move(items[0]);
        t.kind = Target::Tuple;
        t.items = std::move(items);
        return t;
    }

    Target parse_target_primary() {
        Target t;
        t.line = cur().line;
        if (skip_op("(")) {
            std::vector<Target> items;
            bool is_tuple = false;
            while (!is_op(")")) {
                if (!items.empty()) expect_op(",");
                if (is_op(")")) break;
                items.push_back(parse_target_primary());
                if (is_op(",")) is_tuple = true;
            }
            expect_op(")");
            if (!is_tuple && items.size() == 1) return std::move(items[0]);
            t.kind = Target::Tuple;
            t.items = std::move(items);
            return t;
        }
        if (cur().type != Tok::Name) fail("can't assign to '" + describe(cur()) + "'");
        std::string n = next().text;
        if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
            fail("can't assign to 'const'");
        t.name = n;
        return t;
    }

    // ---- expressions ---------------------------------------------------------------------------------

    bool is_tuple_end(std::initializer_list<const char*> extra_end) const {
        if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) return true;
        for (const char* e : extra_end)
            if (is_name(e)) return true;
        return false;
    }

    ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, std::initializer_list<const char*> extra_end) {
        int line = cur().line;
        std::vector<ExprPtr> args;
        bool is_tuple = false;
        while (true) {
            if (!args.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            args.push_back(parse_expression(with_condexpr));
            if (is_op(",")) is_tuple = true;
            else break;
        }
        if (!is_tuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
        }
        auto e = make(ExprType::Tuple, line);
        e->items = std::move(args);
        return seal(std::move(e));
    }

    ExprPtr parse_expression(bool with_condexpr) {
        DepthGuard g(*this);
        if (!with_condexpr) return parse_or();
        ExprPtr e = parse_or();
        while (is_name("if")) {
            int line = cur().line;
            next();
            auto c = make(ExprType::CondExpr, line);
            ExprPtr test = parse_or();
            ExprPtr other;
            if (skip_name("else")) other = parse_expression(true);
            c->items.push_back(std::move(test));
            c->items.push_back(std::move(e));
            c->items.push_back(std::move(other));
            e = seal(std::move(c));
        }
        return e;
    }

    ExprPtr binary(ExprType type, int line, ExprPtr a, ExprPtr b) {
        auto e = make(type, line);
        e->items.push_back(std::move(a));
        e->items.push_back(std::move(b));
        return seal(std::move(e));
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            int line = next().line;
            left = binary(ExprType::Or, line, std::move(left), parse_and());
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            int line = next().line;
            left = binary(ExprType::And, line, std::move(left), parse_not());
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard g(*this);
            int line = next().line;
            auto e = make(ExprType::Not, line);
            e->items.push_back(parse_not());
            return seal(std::move(e));
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        int line = cur().line;
        ExprPtr first = parse_math1();
        auto cmp = make(ExprType::Compare, line);
        while (true) {
            CmpOp op;
            if (is_op("==")) op = CmpOp::Eq;
            else if (is_op("!=")) op = CmpOp::Ne;
            else if (is_op("<")) op = CmpOp::Lt;
            else if (is_op("<=")) op = CmpOp::Le;
            else if (is_op(">")) op = CmpOp::Gt;
            else if (is_op(">=")) op = CmpOp::Ge;
            else if (is_name("in")) op = CmpOp::In;
            else if (is_name("not") && look().type == Tok::Name && look().text == "in") {
                next();
                op = CmpOp::NotIn;
            } else {
                break;
            }
            next();
            cmp->ops.push_back(op);
            if (cmp->items.empty()) cmp->items.push_back(std::move(first));
            cmp->items.push_back(parse_math1());
        }
        if (cmp->ops.empty()) return first;
        return seal(std::move(cmp));
    }

    ExprPtr parse_math1() {
        int line = cur().line;
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            ExprType type = is_op("+") ? ExprType::Add : ExprType::Sub;
            next();
            left = binary(type, line, std::move(left), parse_concat());
        }
        return left;
    }

    ExprPtr parse_concat() {
        int line = cur().line;
        ExprPtr first = parse_math2();
        if (!is_op("~")) return first;
        auto e = make(ExprType::Concat, line);
        e->items.push_back(std::move(first));
        while (skip_op("~")) e->items.push_back(parse_math2());
        return seal(std::move(e));
    }

    ExprPtr parse_math2() {
        int line = cur().line;
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            ExprType type = is_op("*") ? ExprType::Mul : is_op("/") ? ExprType::Div : is_op("//") ? ExprType::FloorDiv : ExprType::Mod;
            next();
            left = binary(type, line, std::move(left), parse_pow());
        }
        return left;
    }

    ExprPtr parse_pow() {
        int line = cur().line;
        ExprPtr left = parse_unary(true);
        while (skip_op("**")) left = binary(ExprType::Pow, line, std::move(left), parse_unary(true));
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard g(*this);
        int line = cur().line;
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            ExprType type = is_op("-") ? ExprType::Neg : ExprType::Pos;
            next();
            node = make(type, line);
            node->items.push_back(parse_unary(false));
            node = seal(std::move(node));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        DepthGuard g(*this);
        const Token& tok = cur();
        int line = tok.line;
        if (tok.type == Tok::Name) {
            auto e = make(ExprType::Const, line);
            const std::string& n = tok.text;
            if (n == "true" || n == "True") e->value = Value::boolean(true);
            else if (n == "false" || n == "False") e->value = Value::boolean(false);
            else if (n == "none" || n == "None") e->value = Value::none();
            else {
                e->type = ExprType::Name;
                e->name = n;
                for (MacroDef* m : macros_) {
                    if (n == "caller") m->uses_caller = true;
                    if (n == "varargs") m->uses_varargs = true;
                    if (n == "kwargs") m->uses_kwargs = true;
                }
            }
            next();
            return e;
        }
        if (tok.type == Tok::String) {
            std::string s;
            while (cur().type == Tok::String) s += next().text;  // adjacent literals concatenate
            auto e = make(ExprType::Const, line);
            e->value = Value::string(std::move(s));
            return e;
        }
        if (tok.type == Tok::Integer || tok.type == Tok::Float) {
            auto e = make(ExprType::Const, line);
            e->value = tok.type == Tok::Float      ? Value::number(tok.fval)
                       : !tok.text.empty() ? Value::big_integer(tok.text, tok.fval)
                                           : Value::integer(tok.ival);
            next();
            return e;
        }
        if (skip_op("(")) {
            ExprPtr e = parse_tuple(true, true, {});
            expect_op(")");
            return e;
        }
        if (skip_op("[")) {
            auto e = make(ExprType::List, line);
            while (!is_op("]")) {
                if (!e->items.empty()) expect_op(",");
                if (is_op("]")) break;
                e->items.push_back(parse_expression(true));
            }
            expect_op("]");
            return seal(std::move(e));
        }
        if (skip_op("{")) {
            auto e = make(ExprType::Dict, line);
            while (!is_op("}")) {
                if (!e->items.empty()) expect_op(",");
                if (is_op("}")) break;
                e->items.push_back(parse_expression(true));
                expect_op(":");
                e->items.push_back(parse_expression(true));
            }
            expect_op("}");
            return seal(std::move(e));
        }
        fail("unexpected '" + describe(tok) + "'");
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else break;
        }
        return node;
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) node = parse_filter_chain(std::move(node), false);
            else if (is_name("is")) node = parse_test(std::move(node));
            else if (is_op("(")) node = parse_call(std::move(node));
            else break;
        }
        return node;
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const Token& tok = next();
        int line = tok.line;
        if (tok.text == ".") {
            const Token& attr = next();
            if (attr.type == Tok::Name) {
                auto e = make(ExprType::Getattr, line);
                e->name = attr.text;
                e->items.push_back(std::move(node));
                return seal(std::move(e));
            }
            if (attr.type != Tok::Integer) fail("expected name or number", attr.line);
            auto idx = make(ExprType::Const, attr.line);
            idx->value = Value::integer(attr.ival);
            auto e = make(ExprType::Getitem, line);
            e->items.push_back(std::move(node));
            e->items.push_back(std::move(idx));
            return seal(std::move(e));
        }
        std::vector<ExprPtr> args;
        while (!is_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        auto e = make(ExprType::Getitem, line);
        e->items.push_back(std::move(node));
        if (args.size() == 1) {
            e->items.push_back(std::move(args[0]));
        } else {
            auto tup = make(ExprType::Tuple, line);
            tup->items = std::move(args);
            e->items.push_back(seal(std::move(tup)));
        }
        return seal(std::move(e));
    }

    ExprPtr parse_subscribed() {
        int line = cur().line;
        std::vector<ExprPtr> parts;
        if (skip_op(":")) {
            parts.push_back(nullptr);
        } else {
            ExprPtr e = parse_expression(true);
            if (!skip_op(":")) return e;
            parts.push_back(std::move(e));
        }
        if (is_op(":")) parts.push_back(nullptr);
        else if (!is_op("]") && !is_op(",")) parts.push_back(parse_expression(true));
        else parts.push_back(nullptr);
        if (skip_op(":")) {
            if (!is_op("]") && !is_op(",")) parts.push_back(parse_expression(true));
            else parts.push_back(nullptr);
        } else {
            parts.push_back(nullptr);
        }
        auto s = make(ExprType::Slice, line);
        s->items = std::move(parts);
        return seal(std::move(s));
    }

    void parse_call_args(CallNode& call) {
        int line = cur().line;
        expect_op("(");
        bool require_comma = false;
        auto ensure = [&](bool ok) {
            if (!ok) fail("invalid syntax for function call expression", line);
        };
        while (!is_op(")")) {
            if (require_comma) {
                expect_op(",");
                if (is_op(")")) break;
            }
            if (skip_op("*")) {
                ensure(!call.dyn_args && !call.dyn_kwargs);
                call.dyn_args = parse_expression(true);
            } else if (skip_op("**")) {
                ensure(!call.dyn_kwargs);
                call.dyn_kwargs = parse_expression(true);
            } else if (cur().type == Tok::Name && look().type == Tok::Op && look().text == "=") {
                ensure(!call.dyn_kwargs);
                std::string key = next().text;
                next();
                call.kwargs.emplace_back(key, parse_expression(true));
            } else {
                ensure(!call.dyn_args && !call.dyn_kwargs && call.kwargs.empty());
                call.args.push_back(parse_expression(true));
            }
            require_comma = true;
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr node) {
        auto e = make(ExprType::Call, cur().line);
        e->items.push_back(std::move(node));
        parse_call_args(e->call);
        return seal(std::move(e));
    }

    // `|name(args)|name2...`; with start_inline the first `|` is absent (filter blocks).
    ExprPtr parse_filter_chain(ExprPtr node, bool start_inline) {
        while (is_op("|") || start_inline) {
            if (!start_inline) next();
            start_inline = false;
            int line = cur().line;
            std::string name = expect_name();
            while (skip_op(".")) name.append(".").append(expect_name());
            auto e = make(ExprType::Filter, line);
            e->name = name;
            e->items.push_back(std::move(node));
            if (is_op("(")) parse_call_args(e->call);
            node = seal(std::move(e));
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        int line = next().line;  // 'is'
        bool negated = skip_name("not");
        std::string name = expect_name();
        while (skip_op(".")) name.append(".").append(expect_name());
        auto e = make(ExprType::Test, line);
        e->name = name;
        e->negated = negated;
        e->items.push_back(std::move(node));
        const Token& c = cur();
        if (is_op("(")) {
            parse_call_args(e->call);
        } else if ((c.type == Tok::Name || c.type == Tok::String || c.type == Tok::Integer || c.type == Tok::Float ||
                    is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) fail("You cannot chain multiple tests with is");
            ExprPtr arg = parse_primary();
            e->call.args.push_back(parse_postfix(std::move(arg)));
        }
        return seal(std::move(e));
    }
};

// jinja2's code generator rejects unknown filter and test names at compile time, except inside the
// "soft" frames of `if` statements and conditional expressions, where they fail only when executed.
class NameChecker {
public:
    void body(const Body& b, bool soft) {
        for (const auto& s : b) stmt(*s, soft);
    }

private:
    void expr(const Expr* e, bool soft) {
        if (!e) return;
        if (e->type == ExprType::CondExpr) soft = true;
        if ((e->type == ExprType::Filter || e->type == ExprType::Test) && !soft) {
            bool is_filter = e->type == ExprType::Filter;
            bool known = is_filter ? is_jinja_filter_name(e->name) : is_jinja_test_name(e->name);
            if (!known)
                throw JinjaError("TemplateAssertionError",
                                 std::string("No ") + (is_filter ? "filter" : "test") + " named '" + e->name + "'.", e->line);
        }
        for (const auto& x : e->items) expr(x.get(), soft);
        for (const auto& x : e->call.args) expr(x.get(), soft);
        for (const auto& kv : e->call.kwargs) expr(kv.second.get(), soft);
        expr(e->call.dyn_args.get(), soft);
        expr(e->call.dyn_kwargs.get(), soft);
    }
    void macro(const MacroDef& m) {
        for (const auto& p : m.params) expr(p.default_value.get(), false);
        body(m.body, false);
    }
    void stmt(const Stmt& s, bool soft) {
        switch (s.type) {
            case StmtType::Print:
            case StmtType::Set: expr(s.expr.get(), soft); break;
            case StmtType::If:
                for (const auto& br : s.branches) {
                    expr(br.first.get(), true);
                    body(br.second, true);
                }
                body(s.else_body, true);
                break;
            case StmtType::For:
                expr(s.expr.get(), soft);
                expr(s.cond.get(), false);
                body(s.body, false);
                body(s.else_body, false);
                break;
            case StmtType::SetBlock:
            case StmtType::FilterBlock:
                expr(s.expr.get(), false);
                body(s.body, false);
                break;
            case StmtType::Macro: macro(*s.macro); break;
            case StmtType::CallBlock:
                expr(s.expr.get(), soft);
                macro(*s.macro);
                break;
            case StmtType::With:
                for (const auto& v : s.with_values) expr(v.get(), soft);
                body(s.body, false);
                break;
            case StmtType::Scope: body(s.body, false); break;
            default: break;
        }
    }
};

}  // namespace

Body parse_template(std::string_view source) {
    Body body = Parser(tokenize(source)).parse();
    NameChecker().body(body, false);
    return body;
}

}  // namespace ikllm::chat
