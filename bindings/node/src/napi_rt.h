// Conversions between JavaScript values and C arguments for the generated N-API layer (abi.g.cc).
// Hand-written and small: the generated code only combines these helpers.
#pragma once
#define NAPI_VERSION 8
#include <node_api.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ikrt {

// Argument parsing state of one call: the first error is thrown as a JS TypeError.
struct Ctx {
    napi_env env;
    std::vector<napi_value> argv;
    bool failed = false;

    Ctx(napi_env e, napi_callback_info info, size_t n) : env(e), argv(n) {
        size_t argc = n;
        napi_value self;
        napi_get_cb_info(env, info, &argc, argv.data(), &self, nullptr);
        for (size_t i = argc; i < n; ++i) napi_get_undefined(env, &argv[i]);
    }
    void fail(const std::string& msg) {
        if (!failed) napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg.c_str());
        failed = true;
    }
    bool nullish(size_t i) {
        napi_valuetype t;
        napi_typeof(env, argv[i], &t);
        return t == napi_null || t == napi_undefined;
    }
};

inline double to_number(Ctx& c, size_t i, const char* name) {
    napi_valuetype t;
    napi_typeof(c.env, c.argv[i], &t);
    if (t == napi_bigint) {
        int64_t v;
        bool lossless;
        napi_get_value_bigint_int64(c.env, c.argv[i], &v, &lossless);
        return (double)v;
    }
    if (t == napi_boolean) {
        bool b;
        napi_get_value_bool(c.env, c.argv[i], &b);
        return b ? 1 : 0;
    }
    double v = 0;
    if (napi_get_value_double(c.env, c.argv[i], &v) != napi_ok) c.fail(std::string(name) + " must be a number");
    return v;
}

inline int64_t to_int(Ctx& c, size_t i, const char* name) {
    napi_valuetype t;
    napi_typeof(c.env, c.argv[i], &t);
    if (t == napi_bigint) {
        int64_t v;
        bool lossless;
        napi_get_value_bigint_int64(c.env, c.argv[i], &v, &lossless);
        return v;
    }
    double d = to_number(c, i, name);
    if (d != (double)(int64_t)d) c.fail(std::string(name) + " must be an integer");
    return (int64_t)d;
}

// A string argument (nullable ones accept null/undefined as NULL).
struct Str {
    std::string s;
    bool null = true;
    const char* ptr() const { return null ? nullptr : s.c_str(); }
};
inline Str to_str(Ctx& c, size_t i, const char* name, bool nullable) {
    Str out;
    if (c.nullish(i)) {
        if (!nullable) c.fail(std::string(name) + " must be a string");
        return out;
    }
    size_t n = 0;
    if (napi_get_value_string_utf8(c.env, c.argv[i], nullptr, 0, &n) != napi_ok) {
        c.fail(std::string(name) + " must be a string");
        return out;
    }
    out.s.resize(n + 1);
    napi_get_value_string_utf8(c.env, c.argv[i], &out.s[0], n + 1, &n);
    out.s.resize(n);
    out.null = false;
    return out;
}

// A typed array / Buffer argument viewed in place (elements of the expected type), or a string
// copied as UTF-8 bytes when text is accepted. keep=true holds a reference for async calls.
struct View {
    void* data = nullptr;
    size_t len = 0;  // elements
    napi_ref ref = nullptr;
    bool is_copy = false;
    std::string copy;  // string input (its buffer moves with the View, so ptr() asks it)
    void* ptr() { return is_copy ? (void*)copy.data() : data; }
};
inline View to_view(Ctx& c, size_t i, const char* name, napi_typedarray_type want, bool nullable, bool text_ok,
                    bool keep) {
    View v;
    if (c.nullish(i)) {
        if (!nullable) c.fail(std::string(name) + " must not be null");
        return v;
    }
    napi_valuetype t;
    napi_typeof(c.env, c.argv[i], &t);
    if (t == napi_string && text_ok) {
        Str s = to_str(c, i, name, false);
        v.copy = s.s;
        v.is_copy = true;
        v.len = v.copy.size();
        return v;
    }
    bool is_ta = false;
    napi_is_typedarray(c.env, c.argv[i], &is_ta);
    if (!is_ta) {
        c.fail(std::string(name) + " must be a typed array");
        return v;
    }
    napi_typedarray_type type;
    napi_value ab;
    size_t off;
    napi_get_typedarray_info(c.env, c.argv[i], &type, &v.len, &v.data, &ab, &off);
    bool bytes_ok = want == napi_uint8_array && (type == napi_int8_array || type == napi_uint8_clamped_array);
    if (type != want && !bytes_ok) {
        c.fail(std::string(name) + " has the wrong typed array type");
        return v;
    }
    if (keep) napi_create_reference(c.env, c.argv[i], 1, &v.ref);
    return v;
}
inline void release(napi_env env, View& v) {
    if (v.ref) napi_delete_reference(env, v.ref);
    v.ref = nullptr;
}

// Handles are externals tagged with their C type, so one kind cannot be passed for another.
inline void* to_handle(Ctx& c, size_t i, const char* name, const napi_type_tag* tag, bool nullable) {
    if (c.nullish(i)) {
        if (!nullable) c.fail(std::string(name) + " must not be null");
        return nullptr;
    }
    bool ok = false;
    napi_valuetype t;
    napi_typeof(c.env, c.argv[i], &t);
    if (t == napi_external) napi_check_object_type_tag(c.env, c.argv[i], tag, &ok);
    if (!ok) {
        c.fail(std::string(name) + " is not the right kind of ikllm handle");
        return nullptr;
    }
    void* p = nullptr;
    napi_get_value_external(c.env, c.argv[i], &p);
    return p;
}

inline napi_value js_null(napi_env env) {
    napi_value v;
    napi_get_null(env, &v);
    return v;
}
inline napi_value js_undefined(napi_env env) {
    napi_value v;
    napi_get_undefined(env, &v);
    return v;
}
inline napi_value js_handle(napi_env env, void* p, const napi_type_tag* tag) {
    if (!p) return js_null(env);
    napi_value v;
    napi_create_external(env, p, nullptr, nullptr, &v);
    napi_type_tag_object(env, v, tag);
    return v;
}
inline napi_value js_num(napi_env env, double d) {
    napi_value v;
    napi_create_double(env, d, &v);
    return v;
}
inline napi_value js_str(napi_env env, const char* s) {
    if (!s) return js_null(env);
    napi_value v;
    napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
    return v;
}
inline napi_value js_str_n(napi_env env, const char* s, size_t n) {
    if (!s) return js_null(env);
    napi_value v;
    napi_create_string_utf8(env, s, n, &v);
    return v;
}
template <typename T>
inline napi_value js_copy(napi_env env, const T* p, size_t n, napi_typedarray_type type) {
    if (!p) return js_null(env);
    napi_value ab, ta;
    void* data;
    napi_create_arraybuffer(env, n * sizeof(T), &data, &ab);
    if (n) std::memcpy(data, p, n * sizeof(T));
    napi_create_typedarray(env, type, n, ab, 0, &ta);
    return ta;
}
template <typename T>
inline napi_value js_num_array(napi_env env, const T* p, size_t n) {
    napi_value a;
    napi_create_array_with_length(env, n, &a);
    for (size_t i = 0; i < n; ++i) napi_set_element(env, a, (uint32_t)i, js_num(env, (double)p[i]));
    return a;
}
inline void set(napi_env env, napi_value obj, const char* key, napi_value v) {
    napi_set_named_property(env, obj, key, v);
}
inline napi_value js_object(napi_env env) {
    napi_value o;
    napi_create_object(env, &o);
    return o;
}

// JS callback called synchronously on the JS thread (the C call runs there too). An exception
// in it stays pending, the callback returns `on_throw`, and the binding rethrows after the call.
struct SyncCallback {
    napi_env env = nullptr;
    napi_value fn = nullptr;
    bool threw = false;
    double call(napi_value* argv, size_t argc, double on_throw) {
        if (threw) return on_throw;
        napi_value global, result;
        napi_get_global(env, &global);
        if (napi_call_function(env, global, fn, argc, argv, &result) != napi_ok) {
            threw = true;
            return on_throw;
        }
        napi_valuetype t;
        napi_typeof(env, result, &t);
        if (t == napi_boolean) {
            bool b;
            napi_get_value_bool(env, result, &b);
            return b ? 1 : 0;
        }
        if (t != napi_number) return 0;
        double d;
        napi_get_value_double(env, result, &d);
        return d;
    }
};

}  // namespace ikrt
