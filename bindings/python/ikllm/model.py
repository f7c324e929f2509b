"""Library instance, model loading (progress and cancel), metadata and tokenization."""
import ctypes
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from . import _abi
from ._native import check, lib, read_buffer
from .errors import CancelledError
from .options import Options


def _text(p: Optional[bytes]) -> str:
    return p.decode("utf-8", "replace") if p is not None else ""


class CancelFlag:
    """A flag the library polls: cancel() from any thread stops a load (or a session's decode)."""

    def __init__(self):
        self._flag = ctypes.c_int32(0)

    def cancel(self) -> None:
        self._flag.value = 1

    def reset(self) -> None:
        self._flag.value = 0

    @property
    def cancelled(self) -> bool:
        return self._flag.value != 0

    def _ref(self):
        return ctypes.pointer(self._flag)


class Library:
    """An ikllm_lib: log sink and thread defaults. Free it after its models (Model keeps it alive)."""

    def __init__(self, default_threads: Optional[int] = None,
                 log: Optional[Callable[[int, str], None]] = None, log_level: int = _abi.IKLLM_LOG_WARN):
        self._ptr = ctypes.POINTER(_abi.ikllm_lib)()
        check(lib().ikllm_lib_create(0, ctypes.byref(self._ptr)), "ikllm_lib_create")
        self._log_cb = None
        if default_threads is not None:
            check(lib().ikllm_lib_set_default_threads(self._ptr, default_threads), "ikllm_lib_set_default_threads")
        if log is not None:
            # May be called from worker threads; ctypes takes the GIL for us.
            self._log_cb = _abi.ikllm_log_fn(lambda _ud, level, msg: log(level, _text(msg)))
            check(lib().ikllm_lib_set_log(self._ptr, self._log_cb, None, log_level), "ikllm_lib_set_log")

    def close(self) -> None:
        if self._ptr:
            lib().ikllm_lib_free(self._ptr)
            self._ptr = ctypes.POINTER(_abi.ikllm_lib)()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Model:
    """A loaded GGUF model (immutable; may be shared across threads). Use as a context manager."""

    def __init__(self, path: str, options: Optional[Mapping[str, Any]] = None,
                 progress: Optional[Callable[[float], Any]] = None, cancel: Optional[CancelFlag] = None,
                 library: Optional[Library] = None):
        self._ptr = None
        self._owns_lib = library is None
        self.library = library or Library()
        self._ptr = ctypes.POINTER(_abi.ikllm_model)()
        self._children = weakref.WeakSet()  # sessions, samplers, detokenizers: closed before the model
        self.path = path
        raised: List[BaseException] = []

        def on_progress(_ud, p):
            try:
                return 1 if progress(p) is False else 0  # returning False cancels
            except BaseException as e:  # never let an exception cross the C frame
                raised.append(e)
                return 1

        cb = _abi.ikllm_progress_fn(on_progress) if progress else _abi.ikllm_progress_fn()
        try:
            with Options("model", options) as o:
                st = lib().ikllm_model_load(self.library._ptr, path.encode(), o.ptr, cb, None,
                                            cancel._ref() if cancel else None, ctypes.byref(self._ptr))
            if raised:
                raise raised[0]
            check(st, "cannot load model '%s'" % path)
        except BaseException:
            if self._owns_lib:
                self.library.close()
            raise

    # ---- lifetime
    def close(self) -> None:
        for child in list(getattr(self, "_children", ())):
            child.close()
        if self._ptr:
            lib().ikllm_model_free(self._ptr)
            self._ptr = ctypes.POINTER(_abi.ikllm_model)()
        if self._owns_lib:
            self.library.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def ptr(self):
        if not self._ptr:
            raise ValueError("model is closed")
        return self._ptr

    # ---- description
    @property
    def architecture(self) -> str:
        return _text(lib().ikllm_model_architecture(self.ptr))

    @property
    def name(self) -> str:
        return _text(lib().ikllm_model_name(self.ptr))

    @property
    def n_vocab(self) -> int:
        return lib().ikllm_model_n_vocab(self.ptr)

    @property
    def n_ctx_train(self) -> int:
        return lib().ikllm_model_n_ctx_train(self.ptr)

    @property
    def n_embd(self) -> int:
        return lib().ikllm_model_n_embd(self.ptr)

    @property
    def n_layer(self) -> int:
        return lib().ikllm_model_n_layer(self.ptr)

    @property
    def n_params(self) -> int:
        return lib().ikllm_model_n_params(self.ptr)

    @property
    def size_bytes(self) -> int:
        return lib().ikllm_model_size_bytes(self.ptr)

    def metadata(self, full: bool = False) -> Dict[str, str]:
        """Every GGUF metadata key with its value rendered as text (arrays abbreviated unless full)."""
        L, out = lib(), {}
        flags = _abi.IKLLM_META_FULL if full else 0
        for i in range(L.ikllm_model_meta_count(self.ptr)):
            key = L.ikllm_model_meta_key(self.ptr, i)
            buf, n = read_buffer(lambda b, c, nd: L.ikllm_model_meta_value(self.ptr, key, flags, b, c, nd))
            out[_text(key)] = buf.raw[:n - 1].decode("utf-8", "replace")
        return out

    # ---- tokens
    def special_token(self, which: int) -> Optional[int]:
        t = lib().ikllm_model_special_token(self.ptr, which)
        return None if t < 0 else t

    @property
    def bos(self) -> Optional[int]:
        return self.special_token(_abi.IKLLM_TOKEN_BOS)

    @property
    def eos(self) -> Optional[int]:
        return self.special_token(_abi.IKLLM_TOKEN_EOS)

    def is_eog(self, token: int) -> bool:
        return lib().ikllm_token_is_eog(self.ptr, token) != 0

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> List[int]:
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        flags = (_abi.IKLLM_TOKENIZE_ADD_SPECIAL if add_special else 0) | \
                (_abi.IKLLM_TOKENIZE_PARSE_SPECIAL if parse_special else 0)
        L = lib()
        buf, n = read_buffer(lambda b, c, nd: L.ikllm_tokenize(self.ptr, data, len(data), flags, b, c, nd),
                             ctypes.c_int32)
        return list(buf[:n])

    def detokenize(self, tokens: Sequence[int], render_special: bool = False,
                   keep_leading_space: bool = False) -> str:
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        flags = (_abi.IKLLM_DETOK_RENDER_SPECIAL if render_special else 0) | \
                (_abi.IKLLM_DETOK_KEEP_LEADING_SPACE if keep_leading_space else 0)
        L = lib()
        buf, n = read_buffer(lambda b, c, nd: L.ikllm_detokenize(self.ptr, arr, len(tokens), flags, b, c, nd))
        return buf.raw[:n - 1].decode("utf-8")

    def token_to_piece(self, token: int, render_special: bool = False) -> bytes:
        """Raw bytes of one token (may be part of a UTF-8 character)."""
        L = lib()
        flags = _abi.IKLLM_DETOK_RENDER_SPECIAL if render_special else 0
        buf, n = read_buffer(lambda b, c, nd: L.ikllm_token_to_piece(self.ptr, token, flags, b, c, nd))
        return buf.raw[:n - 1]  # needed counts a terminating NUL

    # ---- chat templates
    def chat_template(self, name: Optional[str] = None) -> Optional[str]:
        """Template source (default one when name is None), or None when the model has none."""
        out = ctypes.c_char_p()
        st = lib().ikllm_model_chat_template(self.ptr, name.encode() if name else None, ctypes.byref(out))
        if st == _abi.IKLLM_ERR_NOT_FOUND:
            return None
        check(st, "ikllm_model_chat_template")
        return _text(out.value)

    def chat_template_names(self) -> List[str]:
        L = lib()
        return [_text(L.ikllm_model_chat_template_name(self.ptr, i))
                for i in range(L.ikllm_model_chat_template_count(self.ptr))]

    # ---- factories
    def session(self, **options: Any) -> "Session":
        from .session import Session
        return Session(self, options)

    def sampler(self, **options: Any) -> "Sampler":
        from .session import Sampler
        return Sampler(self, options)
