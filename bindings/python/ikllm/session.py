"""Sessions (KV cache, batched decode, logits), samplers, streaming detokenizer and generation."""
import array
import ctypes
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Union

from . import _abi
from ._native import check, lib
from .model import Model
from .options import Options


class _Owned:
    """A handle created from a model; closed with the model at the latest."""
    _free = ""

    def _attach(self, model: Model, ptr) -> None:
        self.model = model
        self._ptr = ptr
        model._children.add(self)

    def close(self) -> None:
        if getattr(self, "_ptr", None):
            getattr(lib(), self._free)(self._ptr)
            self._ptr = type(self._ptr)()

    @property
    def ptr(self):
        if not self._ptr:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._ptr

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _int_array(values: Optional[Sequence[int]], n: int, what: str):
    if values is None:
        return None
    if len(values) != n:
        raise ValueError("%s has %d entries for %d tokens" % (what, len(values), n))
    return (ctypes.c_int32 * n)(*values)


class Session(_Owned):
    """A context (KV cache) over a model; one thread at a time. Options: n_ctx, n_seq_max, n_batch, ..."""
    _free = "ikllm_session_free"

    def __init__(self, model: Model, options: Optional[Mapping[str, Any]] = None):
        ptr = ctypes.POINTER(_abi.ikllm_session)()
        with Options("session", options) as o:
            check(lib().ikllm_session_create(model.ptr, o.ptr, ctypes.byref(ptr)), "ikllm_session_create")
        self._attach(model, ptr)
        self._cancel = None

    @property
    def n_ctx(self) -> int:
        return lib().ikllm_session_n_ctx(self.ptr)

    @property
    def n_seq_max(self) -> int:
        return lib().ikllm_session_n_seq_max(self.ptr)

    def decode(self, tokens: Sequence[int], positions: Optional[Sequence[int]] = None,
               seq_ids: Optional[Sequence[int]] = None,
               logits: Union[str, Sequence[int], None] = "last") -> None:
        """Decodes one batch. logits: "last" (the batch's last token), "all", or per-token flags."""
        n = len(tokens)
        toks = (ctypes.c_int32 * n)(*tokens)
        if logits == "last" or logits is None:
            want = None
        elif logits == "all":
            want = (ctypes.c_int32 * n)(*([1] * n))
        else:
            want = _int_array([int(bool(x)) for x in logits], n, "logits")
        st = lib().ikllm_session_decode(self.ptr, toks, _int_array(positions, n, "positions"),
                                        _int_array(seq_ids, n, "seq_ids"), want, n, 0)
        check(st, "ikllm_session_decode")

    def logits(self, index: int = -1) -> memoryview:
        """Logits of batch token `index` of the last decode (-1: the last with logits), as a float32
        memoryview over a copy (the library's buffer is only valid until the next decode)."""
        p = ctypes.POINTER(ctypes.c_float)()
        n = ctypes.c_int32()
        check(lib().ikllm_session_logits(self.ptr, index, ctypes.byref(p), ctypes.byref(n)), "ikllm_session_logits")
        out = array.array("f", bytes(n.value * 4))
        ctypes.memmove(out.buffer_info()[0], p, n.value * 4)
        return memoryview(out)

    def set_cancel_flag(self, flag) -> None:
        """A CancelFlag that stops decode calls (IKLLM_CANCELLED, cache unchanged); None removes it."""
        self._cancel = flag  # kept alive while the library holds its address
        check(lib().ikllm_session_set_cancel_flag(self.ptr, flag._ref() if flag else None), "set_cancel_flag")

    def seq_pos_max(self, seq_id: int = 0) -> int:
        return lib().ikllm_session_seq_pos_max(self.ptr, seq_id)

    def seq_remove(self, seq_id: int, p0: int = 0, p1: int = -1) -> None:
        check(lib().ikllm_session_seq_remove(self.ptr, seq_id, p0, p1), "ikllm_session_seq_remove")

    def clear(self) -> None:
        check(lib().ikllm_session_clear(self.ptr), "ikllm_session_clear")


class Sampler(_Owned):
    """A sampler chain (temperature, top_k, ..., grammar or json_schema); temperature 0 is greedy."""
    _free = "ikllm_sampler_free"

    def __init__(self, model: Model, options: Optional[Mapping[str, Any]] = None):
        ptr = ctypes.POINTER(_abi.ikllm_sampler)()
        with Options("sampler", options) as o:
            check(lib().ikllm_sampler_create(model.ptr, o.ptr, ctypes.byref(ptr)), "ikllm_sampler_create")
        self._attach(model, ptr)

    def sample(self, session: Session, index: int = -1) -> int:
        tok = ctypes.c_int32()
        check(lib().ikllm_sampler_sample(self.ptr, session.ptr, index, ctypes.byref(tok)), "ikllm_sampler_sample")
        return tok.value

    def sample_logits(self, logits: Sequence[float]) -> int:
        arr = (ctypes.c_float * len(logits)).from_buffer_copy(array.array("f", logits))
        tok = ctypes.c_int32()
        check(lib().ikllm_sampler_sample_logits(self.ptr, arr, len(logits), ctypes.byref(tok)), "sample_logits")
        return tok.value

    def accept(self, tokens: Sequence[int], grammar: bool = True) -> None:
        """Records tokens (penalties; the grammar too unless grammar=False, as for prompt tokens)."""
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        flags = 0 if grammar else _abi.IKLLM_SAMPLER_ACCEPT_NO_GRAMMAR
        check(lib().ikllm_sampler_accept_v2(self.ptr, arr, len(tokens), flags), "ikllm_sampler_accept_v2")

    def reset(self) -> None:
        check(lib().ikllm_sampler_reset(self.ptr), "ikllm_sampler_reset")

    @property
    def grammar_state(self) -> int:
        s = ctypes.c_int32()
        check(lib().ikllm_sampler_grammar_state(self.ptr, ctypes.byref(s)), "ikllm_sampler_grammar_state")
        return s.value


class Detokenizer(_Owned):
    """Incremental detokenizer: push() returns only complete UTF-8 text."""
    _free = "ikllm_detok_free"

    def __init__(self, model: Model, keep_leading_space: bool = True, render_special: bool = False):
        ptr = ctypes.POINTER(_abi.ikllm_detok)()
        flags = (_abi.IKLLM_DETOK_KEEP_LEADING_SPACE if keep_leading_space else 0) | \
                (_abi.IKLLM_DETOK_RENDER_SPECIAL if render_special else 0)
        check(lib().ikllm_detok_create(model.ptr, flags, ctypes.byref(ptr)), "ikllm_detok_create")
        self._attach(model, ptr)

    def _take(self, fn, *args) -> str:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        check(fn(self.ptr, *args, ctypes.byref(p), ctypes.byref(n)), fn.__name__)
        return ctypes.string_at(p.value, n.value).decode("utf-8") if n.value else ""

    def push(self, token: int) -> str:
        return self._take(lib().ikllm_detok_push, token)

    def flush(self) -> str:
        return self._take(lib().ikllm_detok_flush)


def generate(model: Model, prompt: str, n_predict: int = 128, session: Optional[Session] = None,
             add_special: bool = True, parse_special: bool = False, **sampler_options: Any) -> Iterator[str]:
    """Streams the continuation of prompt as text pieces, the way `ikllm run` does: the prompt is
    tokenized with BOS as the vocabulary asks, recorded in the sampler (not the grammar), decoded as
    one batch; each sampled token is streamed until an end-of-generation token, a completed grammar,
    a full context or n_predict tokens. Sampler options as keywords (temperature=0 is greedy)."""
    own = session is None
    sess = session or Session(model, {"n_ctx": 4096, "n_seq_max": 1})
    try:
        with Sampler(model, sampler_options) as smp, Detokenizer(model) as dt:
            toks = model.tokenize(prompt, add_special=add_special, parse_special=parse_special)
            if not toks:
                raise ValueError("the prompt produced no tokens")
            smp.accept(toks, grammar=False)
            sess.decode(toks)
            for _ in range(n_predict):
                tok = smp.sample(sess)
                if model.is_eog(tok):
                    break
                piece = dt.push(tok)
                if piece:
                    yield piece
                if smp.grammar_state == _abi.IKLLM_GRAMMAR_DONE:
                    break
                st = lib().ikllm_session_decode(sess.ptr, (ctypes.c_int32 * 1)(tok), None, None, None, 1, 0)
                if st == _abi.IKLLM_CONTEXT_FULL:
                    break
                check(st, "ikllm_session_decode")
            tail = dt.flush()
            if tail:
                yield tail
    finally:
        if own:
            sess.close()
