"""Reads the option keys of every options kind from the library itself (ikllm_option_count /
ikllm_option_info), so the manifest lists exactly what the built library accepts."""
import ctypes


def list_options(lib_path, kinds, type_names):
    """kinds: {kind name: kind value}; type_names: {type value: name}. Returns {kind: [option...]}."""
    lib = ctypes.CDLL(lib_path)
    lib.ikllm_option_count.restype = ctypes.c_int32
    lib.ikllm_option_count.argtypes = [ctypes.c_int32]
    cp = ctypes.c_char_p
    lib.ikllm_option_info.restype = ctypes.c_int32
    lib.ikllm_option_info.argtypes = [ctypes.c_int32, ctypes.c_int32] + [ctypes.POINTER(cp), ctypes.POINTER(ctypes.c_int32)] + [ctypes.POINTER(cp)] * 4
    out = {}
    for kind, value in kinds.items():
        opts = []
        for i in range(lib.ikllm_option_count(value)):
            name, typ, dflt, lo, hi, doc = cp(), ctypes.c_int32(), cp(), cp(), cp(), cp()
            st = lib.ikllm_option_info(value, i, ctypes.byref(name), ctypes.byref(typ), ctypes.byref(dflt),
                                       ctypes.byref(lo), ctypes.byref(hi), ctypes.byref(doc))
            if st != 0:
                raise RuntimeError("ikllm_option_info(%s, %d) failed with status %d" % (kind, i, st))
            text = lambda p: p.value.decode("utf-8") if p.value is not None else None
            opts.append({"name": text(name), "type": type_names.get(typ.value, str(typ.value)),
                         "default": text(dflt), "min": text(lo), "max": text(hi), "doc": text(doc)})
        out[kind] = opts
    return out
