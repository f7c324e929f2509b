// Template-level callables the interpreter creates: macros (and `{% call %}` callers) and the `loop`
// variable of for statements.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_interp.h"
#include "chat/py_text.h"

namespace ikllm::chat {

// A macro bound to the scope it was defined in. The scope is held weakly (the interpreter keeps it
// alive for the render) so that a scope holding its own macros is not a reference cycle.
class MacroObject : public Object {
public:
    MacroObject(std::shared_ptr<MacroDef> def, const ScopePtr& closure) : def_(std::move(def)), closure_(closure) {}
    std::string type_name() const override { return "Macro"; }
    std::string repr() const override { return "<Macro " + py::repr(def_->name) + ">"; }
    bool callable() const override { return true; }
    Value call(Interp& in, CallArgs& args) override;

private:
    std::shared_ptr<MacroDef> def_;
    std::weak_ptr<Scope> closure_;
};

// jinja2's LoopContext: index/first/last/length/previtem/nextitem/cycle/changed, callable when recursive.
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
public:
    std::shared_ptr<const std::vector<Value>> items;
    size_t index0 = 0;
    int depth = 1;
    const Stmt* stmt = nullptr;
    std::weak_ptr<Scope> scope;  // where a recursive loop re-runs
    Value last_changed;
    bool has_changed = false;

    std::string type_name() const override { return "LoopContext"; }
    std::string repr() const override;
    bool callable() const override { return stmt && stmt->recursive; }
    Value call(Interp& in, CallArgs& args) override;
    bool get_attr(Interp& in, const std::string& name, Value& out) override;
};

}  // namespace ikllm::chat
