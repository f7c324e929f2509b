// The template engine's value model: the Python objects a jinja2 template sees (None, bool, int, float,
// str/Markup, list/tuple and the iterator-like sequences jinja filters return, dict, namespace, callables,
// jinja2's Undefined). Values are immutable except Namespace and iterator position, as in the
// ImmutableSandboxedEnvironment transformers uses, so sharing payloads between copies is safe.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ikllm::chat {

class Value;
class Interp;
struct CallArgs;

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Object };

// Which Python sequence a List value stands for: they differ in repr, len(), indexing and truthiness.
enum class SeqType : uint8_t { List, Tuple, Range, Generator, ReverseIter, DictKeys, DictValues, DictItems };

struct ListData {
    std::vector<Value> items;
    SeqType type = SeqType::List;
    size_t pos = 0;                              // consumed prefix of a Generator/ReverseIter (single pass)
    int64_t start = 0, stop = 0, step = 1;       // Range only, for repr
    bool group = false;                          // Tuple from |groupby: has .grouper and .list
    // A Generator's pending computation: jinja2's generator filters run only when first consumed, so
    // their errors surface only then (and never for a generator that is just tested or printed).
    std::function<std::vector<Value>()> produce;
    void materialize();
};

// Insertion-ordered dict with Python key equality (1 == 1.0 == True).
struct DictData {
    std::vector<std::pair<Value, Value>> items;
    const Value* find(const Value& key) const;
    const Value* find(const std::string& key) const;
    void set(const Value& key, Value v);  // replaces in place or appends (Python dict order)
};

// Payload of a jinja2 Undefined: the message its misuse raises, and whether that is a SecurityError
// (attribute blocked by the sandbox) instead of an UndefinedError.
struct UndefinedData {
    std::string message;
    bool security = false;
};

// Callables and other host objects (macros, bound methods, loop, cycler, joiner).
class Object {
public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;  // Python type name, for error messages
    virtual std::string repr() const;
    virtual bool callable() const { return false; }
    virtual Value call(Interp& in, CallArgs& args);
    // Attribute lookup (Python getattr); false when absent.
    virtual bool get_attr(Interp& in, const std::string& name, Value& out);
};

struct BigInt {
    std::string digits;
    double approx = 0;
};

class Value {
public:
    Value() = default;  // a plain Undefined
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    // An integer beyond 64 bits (from JSON input): prints exactly, compares approximately, and Python
    // arithmetic on it raises OverflowError here. `digits` is its decimal text.
    static Value big_integer(std::string digits, double approx);
    static Value number(double f);
    static Value string(std::string s, bool markup = false);
    static Value list(std::vector<Value> items, SeqType type = SeqType::List);
    static Value tuple(std::vector<Value> items) { return list(std::move(items), SeqType::Tuple); }
    static Value range(int64_t start, int64_t stop, int64_t step);
    static Value dict(std::shared_ptr<DictData> d);
    static Value dict() { return dict(std::make_shared<DictData>()); }
    static Value namespace_(std::shared_ptr<DictData> d);
    static Value object(std::shared_ptr<Object> o);
    static Value undefined(std::string message, bool security = false);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_namespace() const { return kind_ == Kind::Namespace; }
    bool is_object() const { return kind_ == Kind::Object; }
    bool is_seq(SeqType t) const { return kind_ == Kind::List && list().type == t; }
    // list/tuple/range: the sequences that support len() and indexing
    bool is_indexable_seq() const;

    bool as_bool() const { return b_; }
    int64_t as_int() const { return kind_ == Kind::Bool ? (b_ ? 1 : 0) : i_; }
    double as_float() const {
        return kind_ == Kind::Float ? f_ : is_big() ? static_cast<const BigInt*>(p_.get())->approx : static_cast<double>(as_int());
    }
    bool is_big() const { return kind_ == Kind::Int && p_ != nullptr; }
    const std::string& big_digits() const { return static_cast<const BigInt*>(p_.get())->digits; }
    const std::string& str() const { return *static_cast<const std::string*>(p_.get()); }
    bool markup() const { return markup_; }
    ListData& list() const { return *static_cast<ListData*>(p_.get()); }
    DictData& dict_data() const { return *static_cast<DictData*>(p_.get()); }
    Object& obj() const { return *static_cast<Object*>(p_.get()); }
    std::shared_ptr<Object> obj_ptr() const { return std::static_pointer_cast<Object>(p_); }
    const UndefinedData* undef() const { return static_cast<const UndefinedData*>(p_.get()); }
    const void* identity() const { return p_.get(); }  // for `is sameas` on reference types

private:
    Kind kind_ = Kind::Undefined;
    bool markup_ = false;
    bool b_ = false;
    union {
        int64_t i_ = 0;
        double f_;
    };
    std::shared_ptr<void> p_;
};

// Positional and keyword arguments of a call, already evaluated.
struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

}  // namespace ikllm::chat
