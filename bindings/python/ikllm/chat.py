"""Chat template rendering and JSON-Schema-to-grammar conversion (stateless, thread-safe)."""
import ctypes
import json
from typing import Any, Dict, List, Mapping, Optional

from . import _abi
from ._native import check, lib, read_buffer
from .model import Model
from .options import Options


def render_chat(messages: List[Mapping[str, Any]], template: Optional[str] = None, model: Optional[Model] = None,
                add_generation_prompt: bool = True, tools: Optional[List[Any]] = None,
                extra_vars: Optional[Dict[str, Any]] = None, now: Optional[str] = None) -> str:
    """Renders messages with a Jinja chat template (template text, or the model's default one)."""
    enc = lambda v: json.dumps(v).encode() if v is not None else None
    msgs, tls, extra = enc(list(messages)), enc(tools), enc(extra_vars)
    tpl = template.encode() if template is not None else None
    with Options("chat", {"now": now} if now else None) as o:
        L = lib()
        buf, n = read_buffer(lambda b, c, nd: L.ikllm_chat_render(model.ptr if model else None, tpl, msgs, tls, extra,
                                                                  1 if add_generation_prompt else 0, o.ptr, b, c, nd))
    return buf.raw[:n - 1].decode("utf-8")


def json_schema_to_grammar(schema: Any) -> str:
    """GBNF text for a JSON Schema (a dict or JSON text)."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    out = ctypes.c_void_p()
    L = lib()
    check(L.ikllm_json_schema_to_grammar(text.encode(), ctypes.byref(out)), "ikllm_json_schema_to_grammar")
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        L.ikllm_free(out)
