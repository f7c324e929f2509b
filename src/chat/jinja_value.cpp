#include "chat/jinja_value.h"

#include "chat/jinja_error.h"
#include "chat/py_ops.h"

namespace ikllm::chat {

Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = Kind::Bool;
    v.b_ = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = Kind::Int;
    v.i_ = i;
    return v;
}

Value Value::big_integer(std::string digits, double approx) {
    Value v;
    v.kind_ = Kind::Int;
    v.i_ = approx < 0 ? INT64_MIN : INT64_MAX;
    v.p_ = std::make_shared<BigInt>(BigInt{std::move(digits), approx});
    return v;
}

Value Value::number(double f) {
    Value v;
    v.kind_ = Kind::Float;
    v.f_ = f;
    return v;
}

Value Value::string(std::string s, bool markup) {
    Value v;
    v.kind_ = Kind::String;
    v.markup_ = markup;
    v.p_ = std::make_shared<std::string>(std::move(s));
    return v;
}

Value Value::list(std::vector<Value> items, SeqType type) {
    Value v;
    v.kind_ = Kind::List;
    auto d = std::make_shared<ListData>();
    d->items = std::move(items);
    d->type = type;
    v.p_ = std::move(d);
    return v;
}

Value Value::range(int64_t start, int64_t stop, int64_t step) {
    std::vector<Value> items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(integer(i));
    Value v = list(std::move(items), SeqType::Range);
    v.list().start = start;
    v.list().stop = stop;
    v.list().step = step;
    return v;
}

Value Value::dict(std::shared_ptr<DictData> d) {
    Value v;
    v.kind_ = Kind::Dict;
    v.p_ = std::move(d);
    return v;
}

Value Value::namespace_(std::shared_ptr<DictData> d) {
    Value v;
    v.kind_ = Kind::Namespace;
    v.p_ = std::move(d);
    return v;
}

Value Value::object(std::shared_ptr<Object> o) {
    Value v;
    v.kind_ = Kind::Object;
    v.p_ = std::move(o);
    return v;
}

Value Value::undefined(std::string message, bool security) {
    Value v;
    auto d = std::make_shared<UndefinedData>();
    d->message = std::move(message);
    d->security = security;
    v.p_ = std::move(d);
    return v;
}

bool Value::is_indexable_seq() const {
    if (kind_ != Kind::List) return false;
    SeqType t = list().type;
    return t == SeqType::List || t == SeqType::Tuple || t == SeqType::Range;
}

void ListData::materialize() {
    if (!produce) return;
    auto fn = std::move(produce);
    produce = nullptr;  // a generator that raised is exhausted, as in Python
    items = fn();
}

const Value* DictData::find(const Value& key) const {
    for (const auto& kv : items)
        if (equals(kv.first, key)) return &kv.second;
    return nullptr;
}

const Value* DictData::find(const std::string& key) const {
    for (const auto& kv : items)
        if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
    return nullptr;
}

void DictData::set(const Value& key, Value v) {
    for (auto& kv : items)
        if (equals(kv.first, key)) {
            kv.second = std::move(v);
            return;
        }
    items.emplace_back(key, std::move(v));
}

std::string Object::repr() const { return std::string("<").append(type_name()).append(" object>"); }

Value Object::call(Interp&, CallArgs&) { type_error(std::string("'").append(type_name()).append("' object is not callable")); }

bool Object::get_attr(Interp&, const std::string&, Value&) { return false; }

}  // namespace ikllm::chat
