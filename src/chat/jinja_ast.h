// Syntax tree of a parsed template: expressions and statements as jinja2's parser builds them.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace ikllm::chat {

enum class ExprType {
    Const, Name, List, Tuple, Dict, Getattr, Getitem, Slice, Neg, Pos, Not, And, Or,
    Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, Compare, CondExpr, Call, Filter, Test
};

enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct CallNode {
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    ExprPtr dyn_args;    // *args
    ExprPtr dyn_kwargs;  // **kwargs
};

struct Expr {
    ExprType type;
    int line = 0;
    Value value;                  // Const
    std::string name;             // Name, Getattr attribute, Filter/Test name
    std::vector<ExprPtr> items;   // operands: List/Tuple elements, Dict keys/values interleaved,
                                  // [obj] for Getattr, [obj, index] for Getitem, [start, stop, step] for Slice
                                  // (null when omitted), [a, b] for binary ops, [test, then, else?] for CondExpr,
                                  // [callee] for Call, [subject] for Filter/Test (null subject: filter block input),
                                  // [first, operand...] for Compare
    std::vector<CmpOp> ops;       // Compare
    CallNode call;                // Call/Filter/Test arguments
    bool negated = false;         // Test written as `is not`
    int height = 1;               // levels of this subtree (bounded by the parser: recursive walks stay shallow)
    Expr(ExprType t, int l) : type(t), line(l) {}
};

// Assignment target: a name, `ns.attr`, or a tuple of targets.
struct Target {
    enum Kind { Name, NsAttr, Tuple } kind = Name;
    std::string name, attr;
    std::vector<Target> items;
    int line = 0;
};

enum class StmtType { Text, Print, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue, Scope };

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null when required
};

// Definition shared by `{% macro %}` and the anonymous caller of `{% call %}`.
struct MacroDef {
    std::string name;
    std::vector<MacroParam> params;
    Body body;
    bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};

struct Stmt {
    StmtType type;
    int line = 0;
    std::string text;                              // Text
    ExprPtr expr;                                  // Print, Set value, For iterable, CallBlock call, filters
    std::vector<std::pair<ExprPtr, Body>> branches;  // If: (condition, body) for if/elif
    Body body;                                     // For/SetBlock/FilterBlock/With/Scope body
    Body else_body;                                // If/For else
    Target target;                                 // For/Set/SetBlock
    ExprPtr cond;                                  // For `if` filter
    bool recursive = false;                        // For
    std::shared_ptr<MacroDef> macro;               // Macro, CallBlock (the caller)
    std::vector<Target> with_targets;              // With
    std::vector<ExprPtr> with_values;
    Stmt(StmtType t, int l) : type(t), line(l) {}
};

}  // namespace ikllm::chat
