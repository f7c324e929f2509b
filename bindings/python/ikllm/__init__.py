"""Python binding of ikllm (ctypes over libikllm's C ABI; the library is found through IKLLM_LIB).

    import ikllm
    with ikllm.Model("model.gguf") as model:
        for piece in ikllm.generate(model, "Once upon a time", 32, temperature=0):
            print(piece, end="", flush=True)
"""
from . import _abi as abi
from ._native import lib as _lib
from .chat import json_schema_to_grammar, render_chat
from .errors import AbiMismatchError, CancelledError, IkllmError
from .model import CancelFlag, Library, Model
from .options import Options, list_options
from .session import Detokenizer, Sampler, Session, generate

__all__ = ["abi", "AbiMismatchError", "CancelFlag", "CancelledError", "Detokenizer", "IkllmError", "Library",
           "Model", "Options", "Sampler", "Session", "generate", "json_schema_to_grammar", "list_options",
           "render_chat", "version", "abi_version"]


def version() -> str:
    """Version string of the loaded library, e.g. "0.1.0"."""
    return _lib().ikllm_version_string().decode()


def abi_version() -> int:
    return _lib().ikllm_abi_version()


def status_name(status: int) -> str:
    return _lib().ikllm_status_name(status).decode()
