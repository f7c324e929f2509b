// Tree-walking interpreter for parsed templates with jinja2's runtime semantics: scoping (loop bodies,
// macros and blocks get their own scope, `if` does not), the sandbox's attribute/item lookup, macros
// with defaults/varargs/kwargs/caller, loop objects, filters, tests and globals.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace ikllm::chat {

struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
    explicit Scope(std::shared_ptr<Scope> p = nullptr) : parent(std::move(p)) {}
    const Value* lookup(const std::string& name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

struct DateTime {
    int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};

// Bounds that keep a hostile or buggy template from exhausting the host.
struct RenderLimits {
    size_t max_output = size_t(64) << 20;  // bytes of rendered text (including macro/block captures)
    int max_call_depth = 150;              // nested macro calls (Python would hit its recursion limit)
    uint64_t max_steps = 50'000'000;       // statements executed + loop iterations
};

enum class Flow { Normal, Break, Continue };

class Interp {
public:
    Interp(const RenderLimits& limits, const DateTime& now) : limits_(limits), now_(now) {}
    ~Interp();
    Interp(const Interp&) = delete;
    Interp& operator=(const Interp&) = delete;

    // Renders a template body with `root` as its variable scope (globals are its parent).
    std::string render(const Body& body, const ScopePtr& root);

    Value eval(const Expr& e, const ScopePtr& scope);
    Value getattr(const Value& obj, const std::string& name);  // `obj.name`
    Value python_getattr(const Value& obj, const std::string& name);  // attributes only, no item fallback
    Value getitem(const Value& obj, const Value& key);         // `obj[key]`
    Value call(const Value& callee, CallArgs& args);
    Value call_filter(const std::string& name, const Value& subject, CallArgs& args);
    bool call_test(const std::string& name, const Value& v, CallArgs& args);

    // Renders `body` into a string in `scope` (macro bodies, set/filter blocks, recursive loops).
    std::string capture(const Body& body, const ScopePtr& scope, Flow* flow = nullptr);
    // Runs a `for` statement over `iterable` (also used by recursive `loop(...)` calls).
    Flow run_for(const Stmt& s, const Value& iterable, const ScopePtr& scope, int depth);
    std::string capture_loop(const Stmt& s, const Value& iterable, const ScopePtr& scope, int depth);
    Flow exec(const Body& body, const ScopePtr& scope);

    const DateTime& now() const { return now_; }
    // namespace() objects are mutable and may end up containing themselves; tracked to break cycles.
    void track_namespace(std::shared_ptr<DictData> ns) { namespaces_.push_back(std::move(ns)); }
    void step();
    struct CallDepthGuard {
        Interp& in;
        explicit CallDepthGuard(Interp& i);
        ~CallDepthGuard() { --in.call_depth_; }
    };
    // Bounds the interpreter's own recursion (statements and expressions, across macro calls), which
    // otherwise multiplies: 150 nested macro calls x deep expressions would exhaust the native stack.
    struct RecursionGuard {
        Interp& in;
        explicit RecursionGuard(Interp& i);
        ~RecursionGuard() { --in.eval_depth_; }
    };

private:
    RenderLimits limits_;
    DateTime now_;
    std::string* out_ = nullptr;
    uint64_t steps_ = 0;
    int call_depth_ = 0;
    int eval_depth_ = 0;
    std::vector<ScopePtr> retained_;                   // scopes captured by macros and recursive loops
    std::vector<std::shared_ptr<DictData>> namespaces_;

    void emit(const std::string& s);
    Flow exec_stmt(const Stmt& s, const ScopePtr& scope);
    void assign(const Target& t, const Value& v, const ScopePtr& scope);
    Value eval_filter_chain(const Expr& e, const Value& input, const ScopePtr& scope);
    void eval_call_args(const CallNode& node, const ScopePtr& scope, CallArgs& out);
    Value eval_getitem(const Expr& e, const ScopePtr& scope);
    bool compare(CmpOp op, const Value& a, const Value& b);
};

// Binds call arguments to named parameters like a Python signature (positional, then keyword).
class ArgReader {
public:
    ArgReader(const char* func, CallArgs& args, std::initializer_list<const char*> names, size_t required = 0);
    bool has(size_t i) const { return set_[i]; }
    const Value& get(size_t i) const { return vals_[i]; }
    Value get_or(size_t i, Value def) const { return set_[i] ? vals_[i] : def; }

private:
    std::vector<Value> vals_;
    std::vector<bool> set_;
};

// A host function callable from templates (globals, bound methods of str/dict/list, loop.cycle, ...).
class Builtin : public Object {
public:
    using Fn = std::function<Value(Interp&, CallArgs&)>;
    Builtin(std::string name, Fn fn, std::string owner = "") : name_(std::move(name)), owner_(std::move(owner)), fn_(std::move(fn)) {}
    std::string type_name() const override { return owner_.empty() ? "function" : "builtin_function_or_method"; }
    std::string repr() const override;
    bool callable() const override { return true; }
    Value call(Interp& in, CallArgs& args) override { return fn_(in, args); }

private:
    std::string name_, owner_;
    Fn fn_;
};

Value make_builtin(std::string name, Builtin::Fn fn, std::string owner = "");

// Implemented in jinja_filters.cpp / jinja_tests.cpp / jinja_methods.cpp / jinja_globals.cpp.
Value apply_filter(Interp& in, const std::string& name, const Value& v, CallArgs& args);
bool apply_test(Interp& in, const std::string& name, const Value& v, CallArgs& args);
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
// Python attribute of a str/dict/list/tuple value (bound method, or a SecurityError undefined for the
// methods the immutable sandbox blocks); false when the type has no such attribute.
bool find_method(const Value& obj, const std::string& name, Value& out);
void install_globals(Scope& globals);
std::string python_str_format(Interp& in, const std::string& fmt, CallArgs& args, bool markup);

}  // namespace ikllm::chat
