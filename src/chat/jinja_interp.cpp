#include "chat/jinja_interp.h"

#include <algorithm>

#include "chat/jinja_error.h"
#include "chat/jinja_objects.h"
#include "chat/py_ops.h"
#include "chat/py_text.h"

namespace ikllm::chat {

const Value* Scope::lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

std::string Builtin::repr() const {
    if (owner_.empty()) return "<function " + name_ + ">";
    return "<built-in method " + name_ + " of " + owner_ + " object>";
}

Value make_builtin(std::string name, Builtin::Fn fn, std::string owner) {
    return Value::object(std::make_shared<Builtin>(std::move(name), std::move(fn), std::move(owner)));
}

ArgReader::ArgReader(const char* func, CallArgs& args, std::initializer_list<const char*> names, size_t required) {
    std::vector<const char*> n(names);
    vals_.resize(n.size());
    set_.assign(n.size(), false);
    if (args.pos.size() > n.size())
        type_error(std::string(func) + "() takes at most " + std::to_string(n.size()) + " positional argument(s) (" +
                   std::to_string(args.pos.size()) + " given)");
    for (size_t i = 0; i < args.pos.size(); ++i) {
        vals_[i] = args.pos[i];
        set_[i] = true;
    }
    for (auto& kv : args.kw) {
        size_t k = 0;
        while (k < n.size() && kv.first != n[k]) ++k;
        if (k == n.size()) type_error(std::string(func) + "() got an unexpected keyword argument '" + kv.first + "'");
        if (set_[k]) type_error(std::string(func) + "() got multiple values for argument '" + kv.first + "'");
        vals_[k] = kv.second;
        set_[k] = true;
    }
    for (size_t i = 0; i < required && i < n.size(); ++i)
        if (!set_[i]) type_error(std::string(func) + "() missing required argument: '" + n[i] + "'");
}

// ---- macros ----------------------------------------------------------------------------------------------

Value MacroObject::call(Interp& in, CallArgs& a) {
    Interp::CallDepthGuard guard(in);
    ScopePtr closure = closure_.lock();
    if (!closure) raise_error("TemplateRuntimeError", "macro called after its template finished rendering");
    const MacroDef& d = *def_;
    auto scope = std::make_shared<Scope>(closure);
    size_t nparams = d.params.size();
    std::vector<Value> vals(nparams);
    std::vector<bool> given(nparams, false);
    size_t npos = std::min(a.pos.size(), nparams);
    for (size_t i = 0; i < npos; ++i) {
        vals[i] = a.pos[i];
        given[i] = true;
    }
    std::vector<std::pair<std::string, Value>> kwargs = a.kw;
    bool explicit_caller = std::any_of(d.params.begin(), d.params.end(), [](const MacroParam& p) { return p.name == "caller"; });
    bool found_caller = false;
    // jinja2's Macro.__call__: keywords fill the parameters after the positional ones
    if (npos != nparams) {
        for (size_t i = npos; i < nparams; ++i) {
            auto it = std::find_if(kwargs.begin(), kwargs.end(), [&](const auto& kv) { return kv.first == d.params[i].name; });
            if (it != kwargs.end()) {
                vals[i] = it->second;
                given[i] = true;
                kwargs.erase(it);
            }
            if (d.params[i].name == "caller") found_caller = true;
        }
    } else {
        found_caller = explicit_caller;
    }
    if (d.uses_caller && !found_caller) {
        auto it = std::find_if(kwargs.begin(), kwargs.end(), [](const auto& kv) { return kv.first == "caller"; });
        Value caller = Value::undefined("No caller defined");
        if (it != kwargs.end()) {
            caller = it->second;
            kwargs.erase(it);
        }
        scope->vars["caller"] = caller;
    }
    if (d.uses_kwargs) {
        auto dict = std::make_shared<DictData>();
        for (auto& kv : kwargs) dict->set(Value::string(kv.first), kv.second);
        scope->vars["kwargs"] = Value::dict(dict);
    } else if (!kwargs.empty()) {
        for (auto& kv : kwargs)
            if (kv.first == "caller")
                type_error("macro " + py::repr(d.name) +
                           " was invoked with two values for the special caller argument. This is most likely a bug.");
        type_error("macro " + py::repr(d.name) + " takes no keyword argument " + py::repr(kwargs.front().first));
    }
    if (d.uses_varargs) {
        std::vector<Value> extra;
        for (size_t i = nparams; i < a.pos.size(); ++i) extra.push_back(a.pos[i]);
        scope->vars["varargs"] = Value::tuple(std::move(extra));
    } else if (a.pos.size() > nparams) {
        type_error("macro " + py::repr(d.name) + " takes not more than " + std::to_string(nparams) + " argument(s)");
    }
    for (size_t i = 0; i < nparams; ++i)
        if (given[i]) scope->vars[d.params[i].name] = vals[i];
    for (size_t i = 0; i < nparams; ++i) {
        if (given[i]) continue;
        const MacroParam& p = d.params[i];
        scope->vars[p.name] = p.default_value ? in.eval(*p.default_value, scope)
                                              : Value::undefined("parameter " + py::repr(p.name) + " was not provided");
    }
    return Value::string(in.capture(d.body, scope));
}

// ---- loop ------------------------------------------------------------------------------------------------

std::string LoopObject::repr() const {
    return "<LoopContext " + std::to_string(index0 + 1) + "/" + std::to_string(items->size()) + ">";
}

Value LoopObject::call(Interp& in, CallArgs& args) {
    if (!stmt->recursive) type_error("The loop must be defined as recursive if you want to call it.");
    if (args.pos.size() != 1 || !args.kw.empty()) type_error("loop() takes exactly one argument");
    ScopePtr s = scope.lock();
    if (!s) raise_error("TemplateRuntimeError", "loop called outside of its for statement");
    return Value::string(in.capture_loop(*stmt, args.pos[0], s, depth + 1));
}

bool LoopObject::get_attr(Interp&, const std::string& name, Value& out) {
    int64_t n = static_cast<int64_t>(items->size());
    int64_t i = static_cast<int64_t>(index0);
    if (name == "index") out = Value::integer(i + 1);
    else if (name == "index0") out = Value::integer(i);
    else if (name == "revindex") out = Value::integer(n - i);
    else if (name == "revindex0") out = Value::integer(n - i - 1);
    else if (name == "first") out = Value::boolean(i == 0);
    else if (name == "last") out = Value::boolean(i == n - 1);
    else if (name == "length") out = Value::integer(n);
    else if (name == "depth") out = Value::integer(depth);
    else if (name == "depth0") out = Value::integer(depth - 1);
    else if (name == "previtem") out = i > 0 ? (*items)[i - 1] : Value::undefined("there is no previous item");
    else if (name == "nextitem") out = i + 1 < n ? (*items)[i + 1] : Value::undefined("there is no next item");
    else if (name == "cycle") {
        auto self = items;
        size_t idx = index0;
        out = make_builtin("cycle", [self, idx](Interp&, CallArgs& a) -> Value {
            if (a.pos.empty()) type_error("no items for cycling given");
            return a.pos[idx % a.pos.size()];
        }, "LoopContext");
    } else if (name == "changed") {
        LoopObject* self = this;
        auto keep = shared_from_this();
        out = make_builtin("changed", [self, keep](Interp&, CallArgs& a) -> Value {
            Value now = Value::tuple(a.pos);
            if (self->has_changed && equals(self->last_changed, now)) return Value::boolean(false);
            self->has_changed = true;
            self->last_changed = now;
            return Value::boolean(true);
        }, "LoopContext");
    } else {
        return false;
    }
    return true;
}

// ---- interpreter -----------------------------------------------------------------------------------------

Interp::CallDepthGuard::CallDepthGuard(Interp& i) : in(i) {
    if (++in.call_depth_ > in.limits_.max_call_depth) {
        --in.call_depth_;
        raise_error("RecursionError", "maximum macro recursion depth exceeded");
    }
}

// Python's default recursion limit is 1000 frames; a template needing more fails there as well.
constexpr int kMaxEvalDepth = 1000;

Interp::RecursionGuard::RecursionGuard(Interp& i) : in(i) {
    if (++in.eval_depth_ > kMaxEvalDepth) {
        --in.eval_depth_;
        raise_error("RecursionError", "maximum recursion depth exceeded");
    }
}

Interp::~Interp() {
    // Namespaces may hold themselves or macros; clearing them breaks any reference cycle.
    for (auto& ns : namespaces_) ns->items.clear();
}

void Interp::step() {
    if (++steps_ > limits_.max_steps) raise_error("TemplateRuntimeError", "template exceeded its execution budget");
}

void Interp::emit(const std::string& s) {
    if (out_->size() + s.size() > limits_.max_output)
        raise_error("TemplateRuntimeError", "rendered output exceeds " + std::to_string(limits_.max_output) + " bytes");
    out_->append(s);
}

std::string Interp::render(const Body& body, const ScopePtr& root) {
    std::string out;
    out_ = &out;
    exec(body, root);
    out_ = nullptr;
    return out;
}

std::string Interp::capture(const Body& body, const ScopePtr& scope, Flow* flow) {
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
        Flow f = exec(body, scope);
        if (flow) *flow = f;
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buf;
}

std::string Interp::capture_loop(const Stmt& s, const Value& iterable, const ScopePtr& scope, int depth) {
    CallDepthGuard guard(*this);
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
        run_for(s, iterable, scope, depth);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buf;
}

Flow Interp::exec(const Body& body, const ScopePtr& scope) {
    for (const auto& s : body) {
        Flow f = exec_stmt(*s, scope);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Flow Interp::run_for(const Stmt& s, const Value& iterable, const ScopePtr& scope, int depth) {
    std::vector<Value> all = iterate(iterable);
    std::vector<Value> items;
    if (s.cond) {
        for (auto& v : all) {
            step();
            auto fs = std::make_shared<Scope>(scope);
            assign(s.target, v, fs);
            if (truthy(eval(*s.cond, fs))) items.push_back(std::move(v));
        }
    } else {
        items = std::move(all);
    }
    if (items.empty()) {
        if (s.else_body.empty()) return Flow::Normal;
        return exec(s.else_body, std::make_shared<Scope>(scope));
    }
    auto loop = std::make_shared<LoopObject>();
    loop->items = std::make_shared<const std::vector<Value>>(std::move(items));
    loop->depth = depth;
    loop->stmt = &s;
    if (s.recursive) {
        loop->scope = scope;
        retained_.push_back(scope);
    }
    Value loop_value = Value::object(loop);
    bool completed = false;  // jinja2 skips `else` once an iteration ran its body to the end
    for (size_t i = 0; i < loop->items->size(); ++i) {
        step();
        loop->index0 = i;
        auto it = std::make_shared<Scope>(scope);
        assign(s.target, (*loop->items)[i], it);
        it->vars["loop"] = loop_value;
        Flow f = exec(s.body, it);
        if (f == Flow::Break) break;
        if (f == Flow::Normal) completed = true;
    }
    if (!completed && !s.else_body.empty()) return exec(s.else_body, std::make_shared<Scope>(scope));
    return Flow::Normal;
}

void Interp::assign(const Target& t, const Value& v, const ScopePtr& scope) {
    switch (t.kind) {
        case Target::Name: scope->vars[t.name] = v; return;
        case Target::NsAttr: {
            const Value* ns = scope->lookup(t.name);
            if (!ns || !ns->is_namespace())
                raise_error("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
            ns->dict_data().set(Value::string(t.attr), v);
            return;
        }
        case Target::Tuple: {
            std::vector<Value> items = iterate(v);
            size_t n = t.items.size();
            if (items.size() > n) value_error("too many values to unpack (expected " + std::to_string(n) + ")");
            if (items.size() < n)
                value_error("not enough values to unpack (expected " + std::to_string(n) + ", got " +
                            std::to_string(items.size()) + ")");
            for (size_t i = 0; i < n; ++i) assign(t.items[i], items[i], scope);
            return;
        }
    }
}

Flow Interp::exec_stmt(const Stmt& s, const ScopePtr& scope) {
    RecursionGuard depth(*this);
    step();
    try {
        switch (s.type) {
            case StmtType::Text: emit(s.text); return Flow::Normal;
            case StmtType::Print: emit(to_str(eval(*s.expr, scope))); return Flow::Normal;
            case StmtType::If:
                for (const auto& br : s.branches)
                    if (truthy(eval(*br.first, scope))) return exec(br.second, scope);
                return exec(s.else_body, scope);
            case StmtType::For: return run_for(s, eval(*s.expr, scope), scope, 1);
            case StmtType::Set: assign(s.target, eval(*s.expr, scope), scope); return Flow::Normal;
            case StmtType::SetBlock: {
                auto inner = std::make_shared<Scope>(scope);
                Flow f = Flow::Normal;
                Value v = Value::string(capture(s.body, inner, &f));
                if (s.expr) v = eval_filter_chain(*s.expr, v, inner);
                assign(s.target, v, scope);
                return f;
            }
            case StmtType::Macro:
                retained_.push_back(scope);
                scope->vars[s.macro->name] = Value::object(std::make_shared<MacroObject>(s.macro, scope));
                return Flow::Normal;
            case StmtType::CallBlock: {
                retained_.push_back(scope);
                Value caller = Value::object(std::make_shared<MacroObject>(s.macro, scope));
                const Expr& call_expr = *s.expr;
                Value callee = eval(*call_expr.items[0], scope);
                CallArgs args;
                eval_call_args(call_expr.call, scope, args);
                args.kw.emplace_back("caller", caller);
                emit(to_str(call(callee, args)));
                return Flow::Normal;
            }
            case StmtType::FilterBlock: {
                auto inner = std::make_shared<Scope>(scope);
                Flow f = Flow::Normal;
                Value v = Value::string(capture(s.body, inner, &f));
                emit(to_str(eval_filter_chain(*s.expr, v, inner)));
                return f;
            }
            case StmtType::With: {
                std::vector<Value> vals;
                for (const auto& e : s.with_values) vals.push_back(eval(*e, scope));
                auto inner = std::make_shared<Scope>(scope);
                for (size_t i = 0; i < vals.size(); ++i) assign(s.with_targets[i], vals[i], inner);
                return exec(s.body, inner);
            }
            case StmtType::Break: return Flow::Break;
            case StmtType::Continue: return Flow::Continue;
            case StmtType::Scope: return exec(s.body, std::make_shared<Scope>(scope));
        }
    } catch (JinjaError& e) {
        if (e.line == 0) e.line = s.line;
        throw;
    }
    return Flow::Normal;
}

void Interp::eval_call_args(const CallNode& node, const ScopePtr& scope, CallArgs& out) {
    for (const auto& a : node.args) out.pos.push_back(eval(*a, scope));
    for (const auto& kv : node.kwargs) out.kw.emplace_back(kv.first, eval(*kv.second, scope));
    if (node.dyn_args)
        for (auto& v : iterate(eval(*node.dyn_args, scope))) out.pos.push_back(std::move(v));
    if (node.dyn_kwargs) {
        Value d = eval(*node.dyn_kwargs, scope);
        if (!d.is_dict()) type_error("argument after ** must be a mapping, not " + type_name(d));
        for (const auto& kv : d.dict_data().items) {
            if (!kv.first.is_string()) type_error("keywords must be strings");
            out.kw.emplace_back(kv.first.str(), kv.second);
        }
    }
}

Value Interp::eval_filter_chain(const Expr& e, const Value& input, const ScopePtr& scope) {
    Value subject = e.items[0] ? eval_filter_chain(*e.items[0], input, scope) : input;
    CallArgs args;
    eval_call_args(e.call, scope, args);
    return call_filter(e.name, subject, args);
}

bool Interp::compare(CmpOp op, const Value& a, const Value& b) {
    switch (op) {
        case CmpOp::Eq: return equals(a, b);
        case CmpOp::Ne: return !equals(a, b);
        case CmpOp::In: return op_contains(b, a);
        case CmpOp::NotIn: return !op_contains(b, a);
        case CmpOp::Lt: return compare_order(a, b, "<") == -1;
        case CmpOp::Le: {
            int c = compare_order(a, b, "<=");
            return c == -1 || c == 0;
        }
        case CmpOp::Gt: return compare_order(a, b, ">") == 1;
        case CmpOp::Ge: {
            int c = compare_order(a, b, ">=");
            return c == 1 || c == 0;
        }
    }
    return false;
}

namespace {

bool slice_index(const Value& v, bool& has, int64_t& out) {
    if (v.is_none()) {
        has = false;
        return true;
    }
    if (v.is_int() || v.is_bool()) {
        has = true;
        out = v.as_int();
        return true;
    }
    return false;  // Python raises TypeError, which the sandbox turns into an undefined value
}

}  // namespace

Value Interp::eval_getitem(const Expr& e, const ScopePtr& scope) {
    Value obj = eval(*e.items[0], scope);
    const Expr& idx = *e.items[1];
    if (idx.type != ExprType::Slice) {
        Value key = eval(idx, scope);
        return getitem(obj, key);
    }
    Value parts[3];
    for (int k = 0; k < 3; ++k) parts[k] = idx.items[k] ? eval(*idx.items[k], scope) : Value::none();
    // jinja2 compiles slicing to plain Python subscription (not the sandbox's getitem), so errors propagate
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_dict()) type_error("unhashable type: 'slice'");
    if (!obj.is_string() && !obj.is_indexable_seq()) type_error("'" + type_name(obj) + "' object is not subscriptable");
    bool has[3];
    int64_t v[3] = {0, 0, 1};
    for (int k = 0; k < 3; ++k) {
        if (parts[k].is_undefined()) raise_undefined(parts[k]);
        if (!slice_index(parts[k], has[k], v[k]))
            type_error("slice indices must be integers or None or have an __index__ method");
    }
    int64_t step = has[2] ? v[2] : 1;
    if (step == 0) value_error("slice step cannot be zero");
    if (obj.is_string()) {
        const std::string& s = obj.str();
        if (py::is_ascii(s)) {
            std::string out;
            for (int64_t i : py::slice_indices(static_cast<int64_t>(s.size()), has[0], v[0], has[1], v[1], step))
                out.push_back(s[static_cast<size_t>(i)]);
            return Value::string(std::move(out), obj.markup());
        }
        std::u32string u = py::decode(s), r;
        for (int64_t i : py::slice_indices(static_cast<int64_t>(u.size()), has[0], v[0], has[1], v[1], step))
            r.push_back(u[static_cast<size_t>(i)]);
        return Value::string(py::encode(r), obj.markup());
    }
    const ListData& l = obj.list();
    std::vector<int64_t> idxs = py::slice_indices(static_cast<int64_t>(l.items.size()), has[0], v[0], has[1], v[1], step);
    if (l.type == SeqType::Range) {
        int64_t start = idxs.empty() ? l.start : l.start + idxs[0] * l.step;
        int64_t st = l.step * step;
        return Value::range(start, start + static_cast<int64_t>(idxs.size()) * st, st);
    }
    std::vector<Value> out;
    out.reserve(idxs.size());
    for (int64_t i : idxs) out.push_back(l.items[static_cast<size_t>(i)]);
    return Value::list(std::move(out), l.type);
}

Value Interp::getattr(const Value& obj, const std::string& name) {
    Value m;
    switch (obj.kind()) {
        case Kind::Undefined: raise_undefined(obj);
        case Kind::Dict:
            if (find_method(obj, name, m)) return m;
            if (const Value* v = obj.dict_data().find(name)) return *v;
            return undefined_attr(obj, name);
        case Kind::Namespace:
            if (const Value* v = obj.dict_data().find(name)) return *v;
            return undefined_attr(obj, name);
        case Kind::Object:
            if (obj.obj().get_attr(*this, name, m)) return m;
            return undefined_attr(obj, name);
        case Kind::List:
            if (obj.list().group && (name == "grouper" || name == "list"))
                return obj.list().items[name == "grouper" ? 0 : 1];
            [[fallthrough]];
        default:
            if (find_method(obj, name, m)) return m;
            return undefined_attr(obj, name);
    }
}

Value Interp::python_getattr(const Value& obj, const std::string& name) {
    Value m;
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_namespace()) {
        if (const Value* v = obj.dict_data().find(name)) return *v;
    } else if (obj.is_object()) {
        if (obj.obj().get_attr(*this, name, m)) return m;
    } else if (obj.is_list() && obj.list().group && (name == "grouper" || name == "list")) {
        return obj.list().items[name == "grouper" ? 0 : 1];
    } else if (find_method(obj, name, m)) {
        return m;
    }
    return undefined_attr(obj, name);
}

Value Interp::getitem(const Value& obj, const Value& key) {
    Value m;
    switch (obj.kind()) {
        case Kind::Undefined: raise_undefined(obj);
        case Kind::Dict:
            if (is_hashable(key))
                if (const Value* v = obj.dict_data().find(key)) return *v;
            if (key.is_string() && find_method(obj, key.str(), m)) return m;
            return undefined_item(obj, key);
        case Kind::String:
            if (key.is_int() || key.is_bool()) {
                int64_t i = key.as_int();
                const std::string& s = obj.str();
                if (py::is_ascii(s)) {
                    int64_t n = static_cast<int64_t>(s.size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return Value::string(std::string(1, s[static_cast<size_t>(i)]), obj.markup());
                } else {
                    std::u32string u = py::decode(s);
                    int64_t n = static_cast<int64_t>(u.size());
                    if (i < 0) i += n;
                    if (i >= 0 && i < n) return Value::string(py::encode(u.substr(static_cast<size_t>(i), 1)), obj.markup());
                }
                return undefined_item(obj, key);
            }
            break;
        case Kind::List:
            if (obj.is_indexable_seq() && (key.is_int() || key.is_bool())) {
                const auto& items = obj.list().items;
                int64_t i = key.as_int(), n = static_cast<int64_t>(items.size());
                if (i < 0) i += n;
                if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
                return undefined_item(obj, key);
            }
            break;
        default: break;
    }
    if (key.is_string()) {
        // the sandbox falls back to attribute lookup for string keys
        if (obj.is_namespace()) {
            if (const Value* v = obj.dict_data().find(key.str())) return *v;
        } else if (obj.is_object()) {
            if (obj.obj().get_attr(*this, key.str(), m)) return m;
        } else if (obj.is_list() && obj.list().group && (key.str() == "grouper" || key.str() == "list")) {
            return obj.list().items[key.str() == "grouper" ? 0 : 1];
        } else if (find_method(obj, key.str(), m)) {
            return m;
        }
    }
    return undefined_item(obj, key);
}

Value Interp::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) raise_undefined(callee);
    if (callee.is_object() && callee.obj().callable()) return callee.obj().call(*this, args);
    type_error("'" + type_name(callee) + "' object is not callable");
}

Value Interp::call_filter(const std::string& name, const Value& subject, CallArgs& args) {
    if (!has_filter(name)) raise_error("TemplateRuntimeError", "No filter named '" + name + "' found.");
    return apply_filter(*this, name, subject, args);
}

bool Interp::call_test(const std::string& name, const Value& v, CallArgs& args) {
    if (!has_test(name)) raise_error("TemplateRuntimeError", "No test named '" + name + "' found.");
    return apply_test(*this, name, v, args);
}

Value Interp::eval(const Expr& e, const ScopePtr& scope) {
    RecursionGuard depth(*this);
    switch (e.type) {
        case ExprType::Const: return e.value;
        case ExprType::Name: {
            if (const Value* v = scope->lookup(e.name)) return *v;
            return undefined_name(e.name);
        }
        case ExprType::List:
        case ExprType::Tuple: {
            std::vector<Value> items;
            items.reserve(e.items.size());
            for (const auto& x : e.items) items.push_back(eval(*x, scope));
            return Value::list(std::move(items), e.type == ExprType::List ? SeqType::List : SeqType::Tuple);
        }
        case ExprType::Dict: {
            auto d = std::make_shared<DictData>();
            for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
                Value k = eval(*e.items[i], scope);
                if (!is_hashable(k)) type_error("unhashable type: '" + type_name(k) + "'");
                d->set(k, eval(*e.items[i + 1], scope));
            }
            return Value::dict(d);
        }
        case ExprType::Getattr: return getattr(eval(*e.items[0], scope), e.name);  // single operand
        case ExprType::Getitem: return eval_getitem(e, scope);
        case ExprType::Slice: raise_error("TemplateSyntaxError", "slice outside of a subscript");
        case ExprType::Neg: return op_neg(eval(*e.items[0], scope));
        case ExprType::Pos: return op_pos(eval(*e.items[0], scope));
        case ExprType::Not: return Value::boolean(!truthy(eval(*e.items[0], scope)));
        case ExprType::And: {
            Value a = eval(*e.items[0], scope);
            return truthy(a) ? eval(*e.items[1], scope) : a;
        }
        case ExprType::Or: {
            Value a = eval(*e.items[0], scope);
            return truthy(a) ? a : eval(*e.items[1], scope);
        }
        case ExprType::Add:
        case ExprType::Sub:
        case ExprType::Mul:
        case ExprType::Div:
        case ExprType::FloorDiv:
        case ExprType::Mod:
        case ExprType::Pow: {
            // operands are evaluated left to right, as in Python (C++ argument order is unspecified)
            Value a = eval(*e.items[0], scope);
            Value b = eval(*e.items[1], scope);
            switch (e.type) {
                case ExprType::Add: return op_add(a, b);
                case ExprType::Sub: return op_sub(a, b);
                case ExprType::Mul: return op_mul(a, b);
                case ExprType::Div: return op_truediv(a, b);
                case ExprType::FloorDiv: return op_floordiv(a, b);
                case ExprType::Mod: return op_mod(a, b);
                default: return op_pow(a, b);
            }
        }
        case ExprType::Concat: {
            std::string s;
            for (const auto& x : e.items) {
                s += to_str(eval(*x, scope));
                if (s.size() > limits_.max_output) raise_error("MemoryError", "string too large");
            }
            return Value::string(std::move(s));
        }
        case ExprType::Compare: {
            Value left = eval(*e.items[0], scope);
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = eval(*e.items[i + 1], scope);
                if (!compare(e.ops[i], left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case ExprType::CondExpr: {
            if (truthy(eval(*e.items[0], scope))) return eval(*e.items[1], scope);
            if (e.items[2]) return eval(*e.items[2], scope);
            return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                    " evaluated to false and no else section was defined.");
        }
        case ExprType::Call: {
            Value callee = eval(*e.items[0], scope);
            CallArgs args;
            eval_call_args(e.call, scope, args);
            return call(callee, args);
        }
        case ExprType::Filter: {
            Value subject = e.items[0] ? eval(*e.items[0], scope) : Value();
            CallArgs args;
            eval_call_args(e.call, scope, args);
            return call_filter(e.name, subject, args);
        }
        case ExprType::Test: {
            Value v = eval(*e.items[0], scope);
            CallArgs args;
            eval_call_args(e.call, scope, args);
            bool r = call_test(e.name, v, args);
            return Value::boolean(e.negated ? !r : r);
        }
    }
    return Value();
}

}  // namespace ikllm::chat
