"""Options objects: set by key with the setter matching the Python type; listing of every key."""
import ctypes
from typing import Any, Dict, List, Mapping, Optional

from . import _abi
from ._native import check, lib

KINDS = {"model": _abi.IKLLM_OPTIONS_MODEL, "session": _abi.IKLLM_OPTIONS_SESSION,
         "sampler": _abi.IKLLM_OPTIONS_SAMPLER, "quantize": _abi.IKLLM_OPTIONS_QUANTIZE,
         "chat": _abi.IKLLM_OPTIONS_CHAT}
_TYPES = {_abi.IKLLM_OPTION_INT: "int", _abi.IKLLM_OPTION_FLOAT: "float", _abi.IKLLM_OPTION_STRING: "string"}


def list_options(kind: str) -> List[Dict[str, Optional[str]]]:
    """Every option of a kind: name, type, default, min, max, doc (as the library lists them)."""
    L, k = lib(), KINDS[kind]
    out = []
    for i in range(L.ikllm_option_count(k)):
        name, typ, d, lo, hi, doc = (ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_char_p(), ctypes.c_char_p(),
                                     ctypes.c_char_p(), ctypes.c_char_p())
        check(L.ikllm_option_info(k, i, ctypes.byref(name), ctypes.byref(typ), ctypes.byref(d), ctypes.byref(lo),
                                  ctypes.byref(hi), ctypes.byref(doc)), "ikllm_option_info")
        s = lambda p: p.value.decode() if p.value is not None else None
        out.append({"name": s(name), "type": _TYPES.get(typ.value, str(typ.value)), "default": s(d),
                    "min": s(lo), "max": s(hi), "doc": s(doc)})
    return out


class Options:
    """An ikllm_options object of one kind. Usually built for you from a dict."""

    def __init__(self, kind: str, values: Optional[Mapping[str, Any]] = None):
        self._ptr = ctypes.POINTER(_abi.ikllm_options)()
        check(lib().ikllm_options_create(KINDS[kind], ctypes.byref(self._ptr)), "ikllm_options_create")
        try:
            for key, value in (values or {}).items():
                self.set(key, value)
        except BaseException:
            self.close()
            raise

    def set(self, key: str, value: Any) -> None:
        L, k = lib(), key.encode()
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int):
            check(L.ikllm_options_set_int(self._ptr, k, value), "option '%s'" % key)
        elif isinstance(value, float):
            check(L.ikllm_options_set_float(self._ptr, k, value), "option '%s'" % key)
        elif isinstance(value, str):
            check(L.ikllm_options_set_string(self._ptr, k, value.encode()), "option '%s'" % key)
        else:
            raise TypeError("option '%s': unsupported value type %s" % (key, type(value).__name__))

    def get(self, key: str) -> Any:
        L, k = lib(), key.encode()
        i, f, s = ctypes.c_int64(), ctypes.c_double(), ctypes.c_char_p()
        if L.ikllm_options_get_int(self._ptr, k, ctypes.byref(i)) == _abi.IKLLM_OK:
            return i.value
        if L.ikllm_options_get_float(self._ptr, k, ctypes.byref(f)) == _abi.IKLLM_OK:
            return f.value
        check(L.ikllm_options_get_string(self._ptr, k, ctypes.byref(s)), "option '%s'" % key)
        return s.value.decode()

    @property
    def ptr(self):
        return self._ptr

    def close(self) -> None:
        if self._ptr:
            lib().ikllm_options_free(self._ptr)
            self._ptr = ctypes.POINTER(_abi.ikllm_options)()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
