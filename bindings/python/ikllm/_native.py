"""Finds and loads libikllm (IKLLM_LIB, else the project's build, else the system's), checks its ABI
major and declares every function from the generated _abi table."""
import ctypes
import ctypes.util
import functools
import os

from . import _abi
from .errors import AbiMismatchError, CancelledError, IkllmError


def _candidates():
    env = os.environ.get("IKLLM_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    repo_build = os.path.normpath(os.path.join(here, "..", "..", "..", "build", "libikllm.so"))
    found = [repo_build] if os.path.exists(repo_build) else []
    return found + [ctypes.util.find_library("ikllm") or "libikllm.so.%d" % _abi.ABI_VERSION]


@functools.lru_cache(maxsize=None)
def lib():
    """The loaded library (loaded once per process; immutable afterwards)."""
    errors = []
    for path in _candidates():
        try:
            handle = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise ImportError("cannot load libikllm (set IKLLM_LIB to its path): " + "; ".join(errors))
    handle.ikllm_abi_version.restype = ctypes.c_int32
    handle.ikllm_abi_version.argtypes = []
    found = handle.ikllm_abi_version()
    if found != _abi.ABI_VERSION:
        raise AbiMismatchError("libikllm at '%s' has ABI major %d, but this binding was generated for ABI major %d; "
                               "use a matching library or binding" % (handle._name, found, _abi.ABI_VERSION))
    return _abi.declare(handle)


def last_error():
    """(status, message) of the last failure on this thread."""
    L = lib()
    return L.ikllm_last_error_status(), (L.ikllm_last_error() or b"").decode("utf-8", "replace")


def check(status, call=""):
    """Raises IkllmError (or CancelledError) for any status but IKLLM_OK."""
    if status == _abi.IKLLM_OK:
        return
    msg = (lib().ikllm_last_error() or b"").decode("utf-8", "replace")
    cls = CancelledError if status == _abi.IKLLM_CANCELLED else IkllmError
    raise cls(status, msg or _abi.STATUS_NAMES.get(status, ""), call)


def read_buffer(call, elem=ctypes.c_char):
    """Runs call(buf, capacity, needed_ptr) with the caller-buffer convention: query, then fill."""
    needed = ctypes.c_size_t(0)
    st = call(None, 0, ctypes.byref(needed))
    if st not in (_abi.IKLLM_OK, _abi.IKLLM_ERR_BUFFER_TOO_SMALL):
        check(st)
    while True:
        buf = (elem * max(needed.value, 1))()
        st = call(buf, len(buf), ctypes.byref(needed))
        if st == _abi.IKLLM_ERR_BUFFER_TOO_SMALL:
            continue  # grew in between (not expected for these calls)
        check(st)
        return buf, needed.value
