// Global functions a template can call: jinja2's range (sandbox-limited), dict, namespace, cycler and
// joiner, plus transformers' raise_exception and strftime_now.
#include <memory>

#include "chat/jinja_error.h"
#include "chat/jinja_interp.h"
#include "chat/py_ops.h"
#include "chat/py_strftime.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

int64_t range_arg(const Value& v) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_undefined()) raise_undefined(v);
    type_error(std::string("'").append(type_name(v)).append("' object cannot be interpreted as an integer"));
}

Value g_range(Interp&, CallArgs& a) {
    if (!a.kw.empty()) type_error("range() takes no keyword arguments");
    if (a.pos.empty() || a.pos.size() > 3)
        type_error("range expected at most 3 arguments, got " + std::to_string(a.pos.size()));
    int64_t start = 0, stop, step = 1;
    if (a.pos.size() == 1) {
        stop = range_arg(a.pos[0]);
    } else {
        start = range_arg(a.pos[0]);
        stop = range_arg(a.pos[1]);
        if (a.pos.size() == 3) step = range_arg(a.pos[2]);
    }
    if (step == 0) value_error("range() arg 3 must not be zero");
    __int128 n = 0;
    if (step > 0 && stop > start) n = ((__int128)stop - start + step - 1) / step;
    if (step < 0 && stop < start) n = ((__int128)start - stop - step - 1) / (-(__int128)step);
    if (n > kMaxRange)
        raise_error("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    return Value::range(start, stop, step);
}

// dict(...) and namespace(...) share Python's dict constructor rules.
std::shared_ptr<DictData> build_dict(CallArgs& a, const char* fname) {
    auto d = std::make_shared<DictData>();
    if (a.pos.size() > 1) type_error(std::string(fname) + " expected at most 1 argument, got " + std::to_string(a.pos.size()));
    if (a.pos.size() == 1) {
        const Value& src = a.pos[0];
        if (src.is_dict() || src.is_namespace()) {
            d->items = src.dict_data().items;
        } else {
            size_t i = 0;
            for (const auto& pair : iterate(src)) {
                std::vector<Value> kv = iterate(pair);
                if (kv.size() != 2)
                    value_error("dictionary update sequence element #" + std::to_string(i) + " has length " +
                                std::to_string(kv.size()) + "; 2 is required");
                if (!is_hashable(kv[0])) type_error("unhashable type: '" + type_name(kv[0]) + "'");
                d->set(kv[0], kv[1]);
                ++i;
            }
        }
    }
    for (auto& kv : a.kw) d->set(Value::string(kv.first), kv.second);
    return d;
}

class Cycler : public Object {
public:
    explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
    std::string type_name() const override { return "Cycler"; }
    bool get_attr(Interp&, const std::string& name, Value& out) override {
        if (name == "current") {
            out = items_[pos_];
            return true;
        }
        if (name == "next" || name == "__next__") {
            Cycler* self = this;
            auto keep = keep_.lock();
            out = make_builtin("next", [self, keep](Interp&, CallArgs&) {
                Value v = self->items_[self->pos_];
                self->pos_ = (self->pos_ + 1) % self->items_.size();
                return v;
            }, "Cycler");
            return true;
        }
        if (name == "reset") {
            Cycler* self = this;
            auto keep = keep_.lock();
            out = make_builtin("reset", [self, keep](Interp&, CallArgs&) {
                self->pos_ = 0;
                return Value::none();
            }, "Cycler");
            return true;
        }
        return false;
    }
    std::weak_ptr<Object> keep_;

private:
    std::vector<Value> items_;
    size_t pos_ = 0;
};

class Joiner : public Object {
public:
    explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
    std::string type_name() const override { return "Joiner"; }
    bool callable() const override { return true; }
    Value call(Interp&, CallArgs&) override {
        if (!used_) {
            used_ = true;
            return Value::string("");
        }
        return Value::string(sep_);
    }

private:
    std::string sep_;
    bool used_ = false;
};

}  // namespace

void install_globals(Scope& g) {
    g.vars["range"] = make_builtin("range", g_range);
    g.vars["dict"] = make_builtin("dict", [](Interp&, CallArgs& a) { return Value::dict(build_dict(a, "dict")); });
    g.vars["namespace"] = make_builtin("namespace", [](Interp& in, CallArgs& a) {
        auto d = build_dict(a, "namespace");
        in.track_namespace(d);
        return Value::namespace_(d);
    });
    g.vars["cycler"] = make_builtin("cycler", [](Interp&, CallArgs& a) {
        if (a.pos.empty()) type_error("at least one item has to be provided");
        auto c = std::make_shared<Cycler>(a.pos);
        c->keep_ = c;
        return Value::object(c);
    });
    g.vars["joiner"] = make_builtin("joiner", [](Interp&, CallArgs& a) {
        ArgReader r("joiner", a, {"sep"});
        return Value::object(std::make_shared<Joiner>(r.has(0) ? to_str(r.get(0)) : ", "));
    });
    g.vars["lipsum"] = make_builtin("lipsum", [](Interp&, CallArgs&) -> Value {
        raise_error("TemplateRuntimeError", "lipsum() is not supported by this template engine");
    });
    g.vars["raise_exception"] = make_builtin("raise_exception", [](Interp&, CallArgs& a) -> Value {
        ArgReader r("raise_exception", a, {"message"}, 1);
        raise_error("TemplateError", to_str(r.get(0)));
    });
    g.vars["strftime_now"] = make_builtin("strftime_now", [](Interp& in, CallArgs& a) {
        ArgReader r("strftime_now", a, {"format"}, 1);
        if (!r.get(0).is_string()) type_error("strftime() argument 1 must be str, not " + type_name(r.get(0)));
        return Value::string(py_strftime(r.get(0).str(), in.now()));
    });
}

}  // namespace ikllm::chat
