"""Derives what each parameter and return value means for a binding (direction, ownership, which
parameter sizes which buffer) from the header's naming conventions; overrides.json corrects the
few places where names are not enough. See bindings/README.md for the vocabulary."""
import re

SCALARS = {
    "int32_t": ("int", 32, True), "uint32_t": ("int", 32, False), "int64_t": ("int", 64, True),
    "uint64_t": ("int", 64, False), "size_t": ("size", 64, False), "float": ("float", 32, True),
    "double": ("float", 64, True), "char": ("char", 8, True), "void": ("void", 0, False),
}


class RoleError(Exception):
    pass


def scalar_of(base, typedefs):
    """The C scalar a (possibly typedef'd) base type stands for, or None for handles."""
    while base in typedefs:
        base = typedefs[base]
    return base if base in SCALARS else None


def _find(params, pred):
    for p in params:
        if pred(p):
            return p
    return None


def derive_params(fn, handles, callbacks, typedefs):
    """Sets role/direction (and role-specific fields) on every parameter of fn."""
    params = fn["params"]
    names = [p["name"] for p in params]
    by_name = {p["name"]: p for p in params}
    for idx, p in enumerate(params):
        t, name = p["type"], p["name"]
        base, ptr = t["base"], t["ptr"]
        nxt = params[idx + 1]["name"] if idx + 1 < len(params) else None
        if p.get("role"):
            continue
        if base in callbacks and ptr == 0:
            p.update(role="callback", direction="in", nullable=True)
            ud = _find(params[idx + 1:], lambda q: q["type"]["base"] == "void" and q["type"]["ptr"] == 1)
            if ud:
                p["user_data"] = ud["name"]
                ud.update(role="user_data", direction="in", nullable=True, callback=name)
        elif base in handles and ptr == 1:
            p.update(role="handle", direction="in", handle=base)
        elif base in handles and ptr == 2:
            p.update(role="handle_out", direction="out", handle=base)
        elif t["volatile"] and ptr == 1:
            p.update(role="cancel_flag", direction="in", nullable=True)
        elif base == "char" and ptr == 1 and t["const"]:
            if nxt and (nxt.endswith("_len") or nxt == "len") and params[idx + 1]["type"]["base"] == "size_t":
                p.update(role="bytes", direction="in", length=nxt)
                by_name[nxt].update(role="length", direction="in", of=name)
            else:
                p.update(role="string", direction="in")
        elif base in ("char", "void") and ptr == 1 and not t["const"] and name == "buf":
            p.update(role="buffer", direction="out", capacity="buf_size", needed="needed",
                     unit="bytes", text=base == "char")
        elif base == "void" and ptr == 1 and t["const"]:
            p.update(role="bytes", direction="in", length=nxt)
            by_name[nxt].update(role="length", direction="in", of=name)
        elif base == "void" and ptr == 1:
            p.update(role="pointer", direction="in")
        elif base == "char" and ptr == 2 and t["const"]:
            length = _find(params, lambda q: q["name"] in (name.replace("out_", "out_") + "_len",
                                                            name.rsplit("_", 1)[0] + "_len"))
            if not length and "out_len" in by_name and by_name["out_len"].get("role") is None:
                length = by_name["out_len"]
            if length:
                p.update(role="out_bytes", direction="out", length=length["name"])
                length.update(role="out_length", direction="out", of=name)
            else:
                p.update(role="out_string", direction="out")
        elif base == "char" and ptr == 2:
            p.update(role="out_owned_string", direction="out", free="ikllm_free")
        elif ptr == 2 and scalar_of(base, typedefs):
            p.update(role="out_array_borrowed", direction="out")
        elif ptr == 1 and scalar_of(base, typedefs) and t["const"]:
            p.update(role="array", direction="in")
        elif ptr == 1 and scalar_of(base, typedefs):
            if "capacity" in names and name in ("tokens", "out", "out_logprobs"):
                cnt = "needed" if "needed" in names else "n_tokens"
                p.update(role="buffer", direction="out", capacity="capacity", needed=cnt, unit="elements")
            elif name.startswith("out_") or name in ("needed", "n_tokens"):
                p.update(role="out", direction="out")
            else:
                raise RoleError("%s: cannot tell what '%s' is" % (fn["name"], name))
        elif ptr == 0 and scalar_of(base, typedefs):
            p.update(role="value", direction="in")
        else:
            raise RoleError("%s: cannot tell what '%s' is" % (fn["name"], name))
    # The size parameters that belong to a buffer.
    for p in params:
        if p.get("role") == "buffer":
            p["nullable"] = True  # the caller-buffer convention: NULL with capacity 0 queries the size
            by_name[p["capacity"]].update(role="capacity", direction="in", of=p["name"])
            by_name[p["needed"]].update(role="needed", direction="out", of=p["name"])
    # Arrays read by the library: their length is the count parameter that follows them.
    for idx, p in enumerate(params):
        if p.get("role") == "array" and "length" not in p:
            cand = _find(params[idx + 1:], lambda q: q["name"].startswith("n_") and q["type"]["ptr"] == 0)
            if not cand:
                raise RoleError("%s: no length for array '%s'" % (fn["name"], p["name"]))
            p["length"] = cand["name"]
            if cand.get("role") in (None, "value"):
                cand.update(role="length", direction="in", of=p["name"])
            else:
                cand["of"] = cand.get("of", "") + ("," if cand.get("of") else "") + p["name"]
    for p in params:
        if p.get("role") == "length" and isinstance(p.get("of"), str) and "," in p["of"]:
            p["of"] = p["of"].split(",")
    # "may be NULL" in the doc makes pointer parameters nullable.
    doc = fn.get("doc", "")
    for p in params:
        if p["type"]["ptr"] and "nullable" not in p:
            pat = r"\b%s\b[^.;]*?\bmay be NULL|\b%s\b[^.;]*?\bNULL (?:means|leaves|keeps|renders|or)|\bany out-pointer may be NULL|\b%s NULL\b|either may be NULL" % ((re.escape(p["name"]),) * 3)
            hit = re.search(pat, doc)
            if hit and hit.group(0).endswith(("any out-pointer may be NULL", "either may be NULL")):
                hit = hit if p["direction"] == "out" else None
            p["nullable"] = bool(hit)


def derive_return(fn, handles, typedefs):
    t = fn["returns"]
    r = {"type": t}
    base, ptr = t["base"], t["ptr"]
    if base == "void" and ptr == 0:
        r["role"] = "void"
    elif base == "ikllm_status":
        r["role"] = "status"
    elif base == "char" and ptr == 1:
        r["role"] = "string"
        doc = fn.get("doc", "")
        if "static" in doc.lower():
            r["lifetime"] = "static"
        elif "NULL" in doc:
            r["nullable"] = True
        if fn["name"].startswith("ikllm_model_"):
            r.setdefault("lifetime", "model")
    elif ptr == 0 and scalar_of(base, typedefs):
        r["role"] = "value"
    else:
        raise RoleError("%s: cannot tell what the return value is" % fn["name"])
    return r


def free_functions(functions, handles):
    """handle -> the function that frees it ('<handle>_free' taking the handle)."""
    out = {}
    for h in handles:
        name = h + "_free"
        if any(f["name"] == name for f in functions):
            out[h] = name
    return out
